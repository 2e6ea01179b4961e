package io.github.gatlingexecutor.kafka;

import org.apache.kafka.common.TopicPartition;

import java.util.Arrays;
import java.util.Objects;

/**
 * Lane contexts. Each slot runs on a lane of its own: its context is a new object, equal only to itself. Two slots of
 * one key can exist at once, and must never share a coalescing lane, where one slot's run would replace the other's
 * and that slot's records would wait forever: two processors (of two consumer groups, say) reading one topic through
 * one shared executor, or a partition that comes back to this processor while a record of its old null-key slot still
 * runs past the revocation timeout. A context's {@code toString} names the topic and key (or the partition, for null
 * keys), for statistics and JFR events.
 */
final class LaneKey {

    private LaneKey() {
    }

    /** A new lane for a record key's slot under {@link Ordering#KEY} and {@link Ordering#KEY_LATEST}. */
    static Object of(String topic, Object key) {
        return new Context(topic, key);
    }

    /** A new lane for the slot of a partition's null-key records. */
    static Object of(TopicPartition tp) {
        return new Context(tp, null);
    }

    /** Identity equality on purpose (see the class comment). */
    private static final class Context {
        private final Object where;
        private final Object key;

        Context(Object where, Object key) {
            this.where = where;
            this.key = key;
        }

        @Override
        public String toString() {
            return key == null ? where + " (null keys)" : where + "/" + key;
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

        private Bytes(byte[] bytes, int hash) {
            this.bytes = bytes;
            this.hash = hash;
        }

        /**
         * A key to keep (in the topic's map of slots, and in the slot): over a copy of the record's array. Kept over
         * the record's own array, the key changed with it when a handler reused or cleared that array, and the next
         * record of the key, no longer equal to it, got a second slot: two of the key's records could run at once.
         */
        Bytes kept() {
            return new Bytes(bytes.clone(), hash);
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
