package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        assertOneSlotWhenTheHandlerTouchesItsKey(() -> new byte[] {1, 2}, key -> Arrays.fill(key, (byte) 0));
    }

    /**
     * Kafka's {@code Bytes} key (its {@code BytesDeserializer}) hands out its array: kept as the record brought it, the
     * key of the first record changed when its handler reused that array, and the next record of the key, no longer
     * equal to it, got a second slot. Kept over a copy, by content, it keeps one slot.
     */
    @Test
    void aKafkaBytesKeyIsKeptAsItWasWhenAHandlerClearsItsArray() throws Exception {
        assertOneSlotWhenTheHandlerTouchesItsKey(() -> new Bytes(new byte[] {1, 2}),
                key -> Arrays.fill(key.get(), (byte) 0));
    }

    /**
     * A {@code ByteBuffer} key (Kafka's {@code ByteBufferDeserializer}) compares by its remaining bytes, and reading it
     * moves its position: kept as it was, the key of the first record changed when its handler decoded it (as
     * {@code UTF_8.decode(record.key())} does), and the next record of the key, no longer equal to it, got a second slot,
     * running beside the first's record. Compared by content, as it is at the lookup, it keeps one slot.
     */
    @Test
    void aByteBufferKeyIsKeptAsItWasWhenAHandlerReadsIt() throws Exception {
        assertOneSlotWhenTheHandlerTouchesItsKey(() -> ByteBuffer.wrap("k".getBytes(StandardCharsets.UTF_8)),
                StandardCharsets.UTF_8::decode); // reads the buffer to its limit
    }

    /**
     * Routes two records of one key, each a fresh {@code key.get()} as a deserializer makes it, one after the other
     * through one router, with a handler that does {@code touch} to its record's key; the key must keep one slot.
     */
    private static <K> void assertOneSlotWhenTheHandlerTouchesItsKey(Supplier<K> key, Consumer<K> touch)
            throws Exception {
        AtomicInteger handled = new AtomicInteger();
        RecordRunner<K, String> runner = new RecordRunner<>(r -> {
            touch.accept(r.key());
            handled.incrementAndGet();
        }, null, 0, Duration.ofMillis(1));
        ConcurrentHashMap<Object, Slot<K, String>> keys = new ConcurrentHashMap<>();
        try (GatlingExecutor executor = new GatlingExecutor("touched-key", 1)) {
            runner.executor(executor);
            PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1);
            Router<K, String> router = new Router<>(ps, runner, executor, Ordering.KEY, keys);
            ps.router = router;
            for (int offset = 0; offset < 2; offset++) {
                RoutingTest.poll(ps, router, new ConsumerRecord<>("t", 0, offset, key.get(), "v" + offset));
                int expected = offset + 1;
                EmbeddedKafka.await(Duration.ofSeconds(10), "record " + offset, () -> handled.get() == expected);
            }
        }
        assertEquals(1, keys.size(), () -> "one key, slots: " + keys.keySet());
    }

    /** A key of hash 42 whose {@code equals} is reflexive and throws an {@code Error} against any other object. */
    private static final class UnfinishedKey {
        @Override
        public boolean equals(Object o) {
            if (o == this) {
                return true;
            }
            throw new AssertionError("equals against another key not written yet");
        }

        @Override
        public int hashCode() {
            return 42;
        }
    }

    /** A healthy key of hash 42, so that its probe in a router's table meets an {@link UnfinishedKey}'s slot first. */
    private record HealthyKey(String name) {
        @Override
        public int hashCode() {
            return 42;
        }
    }

    /**
     * A key class whose {@code equals} throws an {@code Error} against another's key (not a {@code RuntimeException}):
     * a healthy key whose lookup in a router's table met that key's slot first went to the partition's null-key slot,
     * and its record there ran beside a record of the same key running in the key's own slot. It now passes that slot
     * by and queues behind the key's running record.
     */
    @Test
    void aKeyWhoseEqualsThrowsAnErrorAgainstOthersDoesNotTurnAHealthyKeyAway() throws Exception {
        HealthyKey healthy = new HealthyKey("healthy");
        List<String> ran = new CopyOnWriteArrayList<>();
        AtomicInteger healthyRunning = new AtomicInteger();
        AtomicInteger healthyAtOnce = new AtomicInteger();
        CountDownLatch firstRunning = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        RecordRunner<Object, String> runner = new RecordRunner<>(r -> {
            boolean isHealthy = r.key() instanceof HealthyKey;
            if (isHealthy) {
                healthyAtOnce.accumulateAndGet(healthyRunning.incrementAndGet(), Math::max);
            }
            ran.add(r.value());
            if (r.value().equals("healthy@0:0")) {
                firstRunning.countDown();
                release.await(30, TimeUnit.SECONDS); // a bound for a broken run; the test releases it
            }
            if (isHealthy) {
                healthyRunning.decrementAndGet();
            }
        }, null, 0, Duration.ofMillis(1));
        ConcurrentHashMap<Object, Slot<Object, String>> keys = new ConcurrentHashMap<>();
        try (GatlingExecutor executor = new GatlingExecutor("unfinished-key", 4)) {
            runner.executor(executor);
            PartitionState ps0 = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1);
            Router<Object, String> router0 = new Router<>(ps0, runner, executor, Ordering.KEY, keys);
            ps0.router = router0;
            PartitionState ps1 = new PartitionState(new TopicPartition("t", 1), Thread.currentThread(), 1);
            Router<Object, String> router1 = new Router<>(ps1, runner, executor, Ordering.KEY, keys);
            ps1.router = router1;
            try {
                RoutingTest.poll(ps1, router1, new ConsumerRecord<>("t", 1, 0, new UnfinishedKey(), "unfinished@1:0"));
                EmbeddedKafka.await(Duration.ofSeconds(10), "unfinished@1:0 ran", () -> ran.contains("unfinished@1:0"));
                RoutingTest.poll(ps0, router0, new ConsumerRecord<>("t", 0, 0, healthy, "healthy@0:0"));
                assertTrue(firstRunning.await(10, TimeUnit.SECONDS));
                RoutingTest.poll(ps1, router1, new ConsumerRecord<>("t", 1, 1, healthy, "healthy@1:1"));
                // The router's run has ended, and with it any record it ran on the spot or left in its null-key slot.
                EmbeddedKafka.await(Duration.ofSeconds(10), "partition 1 routed", router1::stopped);
                assertEquals(1, healthyAtOnce.get(), () -> "two records of the healthy key at once: " + ran);
                assertEquals(List.of("unfinished@1:0", "healthy@0:0"), ran, "healthy@1:1 waits for its key");
            } finally {
                release.countDown();
            }
            EmbeddedKafka.await(Duration.ofSeconds(10), "healthy@1:1 ran", () -> ran.size() == 3);
        }
        assertEquals(List.of("unfinished@1:0", "healthy@0:0", "healthy@1:1"), ran);
        assertEquals(1, healthyAtOnce.get());
    }
}
