package io.github.gatlingexecutor.kafka;

import org.apache.kafka.common.TopicPartition;

import java.util.Arrays;
import java.util.Objects;

/**
 * Lane contexts. Private types keep the processor's lanes apart from any other lane of a shared executor, and the
 * topic in the key keeps equal keys of two topics apart.
 */
final class LaneKey {

    private LaneKey() {
    }

    /** The lane of a record key under {@link Ordering#KEY} and {@link Ordering#KEY_LATEST}. */
    static Object of(String topic, Object key) {
        return new Key(topic, key instanceof byte[] ? new Bytes((byte[]) key) : key);
    }

    /** The lane of a partition: its records under {@link Ordering#PARTITION}, its null-key records otherwise. */
    static Object of(TopicPartition tp) {
        return new Partition(tp);
    }

    private static final class Key {
        private final String topic;
        private final Object key;
        private final int hash;

        Key(String topic, Object key) {
            this.topic = topic;
            this.key = key;
            this.hash = 31 * topic.hashCode() + key.hashCode();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key && ((Key) o).hash == hash && ((Key) o).key.equals(key)
                    && ((Key) o).topic.equals(topic);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public String toString() {
            return topic + "/" + key;
        }
    }

    private static final class Partition {
        private final TopicPartition tp;

        Partition(TopicPartition tp) {
            this.tp = tp;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Partition && ((Partition) o).tp.equals(tp);
        }

        @Override
        public int hashCode() {
            return tp.hashCode() * 17;
        }

        @Override
        public String toString() {
            return tp.toString();
        }
    }

    /** {@code byte[]} compared by content, as record keys are meant. */
    static final class Bytes {
        private final byte[] bytes;
        private final int hash;

        Bytes(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Bytes && ((Bytes) o).hash == hash && Arrays.equals(((Bytes) o).bytes, bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public String toString() {
            return Objects.toString(new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1));
        }
    }
}
