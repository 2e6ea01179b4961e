package io.github.gatlingexecutor.kafka;

import org.apache.kafka.common.TopicPartition;

import java.util.Map;
import java.util.Set;

/**
 * A snapshot of a {@link KafkaProcessor}'s counters, taken by {@link KafkaProcessor#statistics()}. Each counter is
 * read on its own (the snapshot is not atomic across counters); the five counts only ever grow while the processor
 * lives, while the paused partitions and the committed offsets are each the state as it was when read.
 */
public final class KafkaStatistics {

    private final long polled;
    private final long completed;
    private final long superseded;
    private final long failed;
    private final long retries;
    private final Set<TopicPartition> pausedPartitions;
    private final Map<TopicPartition, Long> committedOffsets;

    KafkaStatistics(long polled, long completed, long superseded, long failed, long retries,
                    Set<TopicPartition> pausedPartitions, Map<TopicPartition, Long> committedOffsets) {
        this.polled = polled;
        this.completed = completed;
        this.superseded = superseded;
        this.failed = failed;
        this.retries = retries;
        this.pausedPartitions = Set.copyOf(pausedPartitions);
        this.committedOffsets = Map.copyOf(committedOffsets);
    }

    /**
     * Records returned by the consumer and taken in by the processor, and records that could not be deserialized
     * (each once, when first met), so that {@link #completed()} never exceeds it.
     *
     * @return the count
     */
    public long polled() {
        return polled;
    }

    /**
     * Records done with: the handler returned, they were {@linkplain #superseded() superseded}, or the failure
     * handler returned for them (records that could not be deserialized included). Records dropped because their
     * partition was revoked or lost are not counted: their next owner processes them.
     *
     * @return the count
     */
    public long completed() {
        return completed;
    }

    /**
     * Records that never ran because a newer record of their key replaced them ({@link Ordering#KEY_LATEST}).
     *
     * @return the count
     */
    public long superseded() {
        return superseded;
    }

    /**
     * Records that failed for good: the handler failed on every try, or the record could not be deserialized. Each
     * such record counts once however often it is tried again afterwards.
     *
     * @return the count
     */
    public long failed() {
        return failed;
    }

    /**
     * Tries again after a failure, counted when made: the handler's calls (all of them, including the later capped
     * ones; not a retry dropped during its backoff because its partition was revoked or the processor closed), and
     * reads of a record that could not be deserialized that failed again.
     *
     * @return the count
     */
    public long retries() {
        return retries;
    }

    /**
     * Partitions paused now by back-pressure (or while a record that cannot be deserialized, or that ran its
     * deserializer out of heap, waits).
     *
     * @return the paused partitions, unmodifiable
     */
    public Set<TopicPartition> pausedPartitions() {
        return pausedPartitions;
    }

    /**
     * The last offset this processor committed, per partition it committed for (the next record to read).
     *
     * @return the next offset to read of each partition committed for, unmodifiable
     */
    public Map<TopicPartition, Long> committedOffsets() {
        return committedOffsets;
    }

    @Override
    public String toString() {
        return "KafkaStatistics[polled=" + polled + ", completed=" + completed + ", superseded=" + superseded
                + ", failed=" + failed + ", retries=" + retries + ", pausedPartitions=" + pausedPartitions
                + ", committedOffsets=" + committedOffsets + "]";
    }
}
