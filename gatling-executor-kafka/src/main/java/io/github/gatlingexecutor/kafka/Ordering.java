package io.github.gatlingexecutor.kafka;

/**
 * Which records of a {@link KafkaProcessor} may run at the same time, and in which order.
 *
 * <p>Keys are compared with {@code equals}/{@code hashCode}; {@code byte[]} and Kafka's {@code Bytes} keys are compared
 * by content as polled (a handler may reuse their arrays), and {@code ByteBuffer} keys by their remaining bytes as
 * polled (a handler may read them). A key of any other type must not be changed by a handler. Two topics never share a
 * key: the same key in two topics is two keys. A key that appears in several partitions of one topic (a custom
 * partitioner, or a partition count that grew) still runs one record at a time, in offset order within each partition;
 * between its partitions, whose offsets are not comparable, each partition is dispatched on its own and no order is
 * promised.
 */
public enum Ordering {

    /**
     * Records with the same key in the same topic run one at a time, in offset order; records without a key run one
     * at a time per partition. Different keys run in parallel. The default.
     */
    KEY,

    /**
     * As {@link #KEY}, but when several records of a key are waiting (polled and not started), only the newest runs;
     * the others are superseded, never run, and count as completed at once, so the committed offset moves past them.
     * Records of an idle key polled together are waiting too, until a worker takes one. A key with nothing running
     * hands its record to the executor at once: there is no debounce window.
     */
    KEY_LATEST,

    /** Records of a partition run one at a time, in offset order; partitions run in parallel. */
    PARTITION,

    /** Any record may run at any time, in any order. Commits still never pass an incomplete record. */
    UNORDERED
}
