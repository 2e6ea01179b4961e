package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;


/**
 * Processes one record. Called on a thread of the processor's executor, never on the polling thread, and never for
 * two records of one key at once under {@link Ordering#KEY} or {@link Ordering#KEY_LATEST} (one partition at once
 * under {@link Ordering#PARTITION}). Everything the previous call for the same key (or partition) did is visible to
 * the next one. One exception, across a rebalance: a call still running when its partition is lost, or past
 * {@code closeTimeout} after it was revoked, may overlap with the calls of the partition's next owner; if that owner
 * is this processor, only after a further {@code closeTimeout}, and under {@link Ordering#KEY} and
 * {@link Ordering#KEY_LATEST} not for the same key at all (see {@link KafkaProcessor}, "Rebalancing").
 *
 * <p>Returning normally completes the record. Throwing anything (checked or not, {@link Error}s included) fails this
 * attempt: the record is retried with backoff and, once the retries are used up, handed to the
 * {@link FailureHandler}. Meanwhile its key (or partition) waits, and the commit of its partition stays behind it.
 * An interrupt means the processor is closing and its time to finish has passed.
 *
 * @param <K> key type
 * @param <V> value type
 */
@FunctionalInterface
public interface RecordHandler<K, V> {

    /**
     * Processes {@code record}.
     *
     * @param record the record, as polled; never {@code null}
     * @throws Exception to fail this attempt
     */
    void handle(ConsumerRecord<K, V> record) throws Exception;
}
