package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link Slot#isKey} must answer exactly as {@code equals} does, packed or not; a kept key never changes. */
class SlotKeyTest {

    private static final RecordRunner<Object, Object> RUNNER = new RecordRunner<>(r -> { }, null, 0,
            Duration.ofMillis(1));

    @Test
    void isKeyAgreesWithEqualsForEveryPairOfKeys() {
        List<Object> keys = List.of("", "a", "b", "ab", "ba", "key-1234", "key-1235", "key-12345", "key-1234\u0000",
                "0123456789abcdef", "0123456789abcdeg", "0123456789abcdef0", "0123456789abcdef1", "\u00ff\u00ff",
                "\u00ff\u00fe", "\u0100", "\u0101", "caf\u00e9", "caf\u0100", "\u0000", "\u0000\u0000",
                new LaneKey.Bytes(new byte[] {1, 2}), new LaneKey.Bytes(new byte[] {1, 2, 3}), 42, 42L);
        for (Object stored : keys) {
            Slot<Object, Object> slot = new Slot<>(stored, RUNNER, Runnable::run, false);
            for (Object fresh : keys) {
                // A fresh copy of a String, as the deserializer makes one per record.
                Object probe = fresh instanceof String ? new String(((String) fresh).toCharArray()) : fresh;
                assertEquals(stored.equals(probe), slot.isKey(probe), () -> "'" + stored + "' vs '" + fresh + "'");
            }
        }
        Slot<Object, Object> bytes = new Slot<>(new LaneKey.Bytes(new byte[] {1, 2}), RUNNER, Runnable::run, false);
        assertEquals(true, bytes.isKey(new LaneKey.Bytes(new byte[] {1, 2})));
    }

    /**
     * A {@code byte[]} key was kept over its first record's own array: a handler that cleared that array changed the
     * kept key, and the next record of the key, equal to it no more, got a second slot (so two records of the key
     * could run at once).
     */
    @Test
    void aByteArrayKeyIsKeptAsItWasWhenAHandlerClearsItsRecordsArray() throws Exception {
        AtomicInteger handled = new AtomicInteger();
        RecordRunner<byte[], String> runner = new RecordRunner<>(r -> {
            Arrays.fill(r.key(), (byte) 0); // a handler that reuses the array, say
            handled.incrementAndGet();
        }, null, 0, Duration.ofMillis(1));
        ConcurrentHashMap<Object, Slot<byte[], String>> keys = new ConcurrentHashMap<>();
        try (GatlingExecutor executor = new GatlingExecutor("bytes-key", 1)) {
            runner.executor(executor);
            PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1);
            Router<byte[], String> router = new Router<>(ps, runner, executor, Ordering.KEY, keys);
            ps.router = router;
            for (int offset = 0; offset < 2; offset++) {
                ps.dispatched++;
                ps.sentUpTo = offset + 1;
                ps.nextOffset = offset + 1;
                router.offer(List.of(new ConsumerRecord<>("t", 0, offset, new byte[] {1, 2}, "v" + offset)));
                assertEquals(true, router.schedule());
                int expected = offset + 1;
                EmbeddedKafka.await(Duration.ofSeconds(10), "record " + offset, () -> handled.get() == expected);
            }
        }
        assertEquals(1, keys.size(), () -> "one key, slots: " + keys.keySet());
    }

    /**
     * A {@code ByteBuffer} key (Kafka's {@code ByteBufferDeserializer}) compares by its remaining bytes, and reading it
     * moves its position: kept as it was, the key of the first record changed when its handler decoded it (as
     * {@code UTF_8.decode(record.key())} does), and the next record of the key, no longer equal to it, got a second slot,
     * running beside the first's record. Compared by content, as it is at the lookup, it keeps one slot.
     */
    @Test
    void aByteBufferKeyIsKeptAsItWasWhenAHandlerReadsIt() throws Exception {
        AtomicInteger handled = new AtomicInteger();
        RecordRunner<ByteBuffer, String> runner = new RecordRunner<>(r -> {
            StandardCharsets.UTF_8.decode(r.key()); // reads the buffer to its limit
            handled.incrementAndGet();
        }, null, 0, Duration.ofMillis(1));
        ConcurrentHashMap<Object, Slot<ByteBuffer, String>> keys = new ConcurrentHashMap<>();
        try (GatlingExecutor executor = new GatlingExecutor("buffer-key", 1)) {
            runner.executor(executor);
            PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1);
            Router<ByteBuffer, String> router = new Router<>(ps, runner, executor, Ordering.KEY, keys);
            ps.router = router;
            for (int offset = 0; offset < 2; offset++) {
                ps.dispatched++;
                ps.sentUpTo = offset + 1;
                ps.nextOffset = offset + 1;
                ByteBuffer key = ByteBuffer.wrap("k".getBytes(StandardCharsets.UTF_8));
                router.offer(List.of(new ConsumerRecord<>("t", 0, offset, key, "v" + offset)));
                assertEquals(true, router.schedule());
                int expected = offset + 1;
                EmbeddedKafka.await(Duration.ofSeconds(10), "record " + offset, () -> handled.get() == expected);
            }
        }
        assertEquals(1, keys.size(), () -> "one key, slots: " + keys.keySet());
    }
}
