package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Receives a record the processor gave up on: its handler failed on every try, or it could not be deserialized. A
 * typical implementation writes it to a dead-letter topic.
 *
 * <p>Called on a thread of the processor's executor, in the record's key (or partition) order like the handler
 * itself. The record counts as completed, and its partition's committed offset may move past it, only once this
 * method returns. If it throws, the record stays failed: it is tried again later (handler first, then this method;
 * for a record that could not be deserialized, it is read and deserialized again, then given to this method again
 * if that fails again) with the capped backoff, holding back its key (for an unreadable record, its partition) and
 * the commit of its partition; nothing is skipped silently.
 *
 * <p>For a record that could not be deserialized, {@code record} has the topic, partition, offset, timestamp and
 * headers, a {@code null} key and value, and {@code error} is the
 * {@link org.apache.kafka.common.errors.RecordDeserializationException} (whose {@code keyBuffer()} and
 * {@code valueBuffer()} hold the raw bytes). The processor seeks past that record only when this method returns.
 *
 * @param <K> key type
 * @param <V> value type
 */
@FunctionalInterface
public interface FailureHandler<K, V> {

    /**
     * Handles a record that failed for good.
     *
     * @param record the record (see above for one that could not be deserialized)
     * @param error  what the last attempt threw
     * @throws Exception to keep the record failed and have it tried again later
     */
    void onFailure(ConsumerRecord<K, V> record, Throwable error) throws Exception;
}
