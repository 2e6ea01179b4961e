package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

import static io.github.gatlingexecutor.kafka.EmbeddedKafka.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Order guarantees against a real broker. */
class OrderingTest {

    @RegisterExtension
    static final EmbeddedKafka KAFKA = new EmbeddedKafka();

    /** Records every violation instead of throwing inside a handler (which would only cause a retry). */
    private final Violations violations = new Violations();

    @Test
    void keyOrderEightPartitionsThousandKeysHundredThousandRecords() throws Exception {
        String topic = EmbeddedKafka.name("key-order");
        int partitions = 8;
        int keys = 1_000;
        int perKey = 100;
        KAFKA.createTopic(topic, partitions);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int seq = 0; seq < perKey; seq++) {
            for (int k = 0; k < keys; k++) {
                records.add(new ProducerRecord<>(topic, "k" + k, Integer.toString(seq)));
            }
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, partitions);
        assertEquals(keys * perKey, end.values().stream().mapToLong(Long::longValue).sum());

        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        Map<String, AtomicLong> lastSeq = new ConcurrentHashMap<>();
        Map<TopicPartition, Set<Long>> seen = new ConcurrentHashMap<>();
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        LongAdder calls = new LongAdder();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("key-order").coreThreads(8).build();
             KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                             KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                     .topics(topic)
                     .handler(r -> {
                         calls.increment();
                         threads.add(Thread.currentThread());
                         AtomicInteger inKey = running.computeIfAbsent(r.key(), k -> new AtomicInteger());
                         if (inKey.incrementAndGet() != 1) {
                             violations.add("two records of " + r.key() + " at once, at " + r.offset());
                         }
                         long seq = Long.parseLong(r.value());
                         long previous = lastSeq.computeIfAbsent(r.key(), k -> new AtomicLong(-1)).getAndSet(seq);
                         if (previous != seq - 1) {
                             violations.add(r.key() + ": " + seq + " ran after " + previous);
                         }
                         seen.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
                                 tp -> ConcurrentHashMap.newKeySet()).add(r.offset());
                         for (int i = 0; i < 50; i++) {
                             Thread.onSpinWait(); // a little work, so that neighbours of a key overlap in time
                         }
                         inKey.decrementAndGet();
                     })
                     .executor(executor)
                     .commitInterval(Duration.ofMillis(50))
                     .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            assertEquals(keys * perKey, calls.sum(), "each record ran once");
            for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
                assertEquals(e.getValue().longValue(), seen.get(e.getKey()).size(),
                        "distinct offsets of " + e.getKey());
            }
            lastSeq.forEach((k, v) -> assertEquals(perKey - 1, v.get(), "last record of " + k));
            assertTrue(threads.size() > 1, "ran on several workers: " + threads.size());
            KafkaStatistics s = processor.statistics();
            assertEquals(keys * perKey, s.polled());
            assertEquals(keys * perKey, s.completed());
        }
    }

    @Test
    void keyLatestRunsTheLastRecordOfEveryHotKeyAndSupersedesMost() throws Exception {
        String topic = EmbeddedKafka.name("key-latest");
        int partitions = 4;
        int keys = 100;
        int updates = 1_000;
        KAFKA.createTopic(topic, partitions);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int seq = 0; seq < updates; seq++) {
            for (int k = 0; k < keys; k++) {
                records.add(new ProducerRecord<>(topic, "hot" + k, Integer.toString(seq)));
            }
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, partitions);

        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        Map<String, AtomicLong> lastSeq = new ConcurrentHashMap<>();
        LongAdder calls = new LongAdder();
        // KEY_LATEST coalesces a key's records within a poll, so the calls tend to keys x polls: with the default 500
        // records a poll that is 100 x 200, total / 5 itself, and shorter polls (a slow poller) went over. Polls of
        // 5,000 bound it far below (about 2,000 calls).
        java.util.Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(org.apache.kafka.clients.consumer.ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .ordering(Ordering.KEY_LATEST)
                .handler(r -> {
                    calls.increment();
                    AtomicInteger inKey = running.computeIfAbsent(r.key(), k -> new AtomicInteger());
                    if (inKey.incrementAndGet() != 1) {
                        violations.add("two records of " + r.key() + " at once");
                    }
                    long seq = Long.parseLong(r.value());
                    long previous = lastSeq.computeIfAbsent(r.key(), k -> new AtomicLong(-1)).getAndSet(seq);
                    if (previous >= seq) {
                        violations.add(r.key() + ": " + seq + " ran after " + previous);
                    }
                    Thread.sleep(1); // slower than polling, so that records of a key pile up behind a running one
                    inKey.decrementAndGet();
                })
                .commitInterval(Duration.ofMillis(50))
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            for (int k = 0; k < keys; k++) {
                assertEquals(updates - 1, lastSeq.get("hot" + k).get(), "the last record of hot" + k + " ran");
            }
            KafkaStatistics s = processor.statistics();
            long total = (long) keys * updates;
            assertEquals(total, s.polled());
            assertEquals(total, s.completed());
            assertEquals(total - calls.sum(), s.superseded(), "every record either ran or was superseded");
            assertTrue(calls.sum() < total / 5, "far fewer handler calls than records: " + calls.sum());
        }
    }

    @Test
    void partitionOrderRunsOnePartitionAtATimeInOffsetOrder() throws Exception {
        String topic = EmbeddedKafka.name("partition-order");
        int partitions = 4;
        KAFKA.createTopic(topic, partitions);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 4_000; i++) {
            records.add(new ProducerRecord<>(topic, i % partitions, "k" + i, "v"));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, partitions);
        Map<Integer, AtomicInteger> running = new ConcurrentHashMap<>();
        Map<Integer, AtomicLong> last = new ConcurrentHashMap<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .ordering(Ordering.PARTITION)
                .handler(r -> checkPartitionOrder(r, running, last))
                .commitInterval(Duration.ofMillis(50))
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            assertEquals(4_000, processor.statistics().completed());
        }
    }

    @Test
    void unorderedRunsEveryRecordAndCommitsToTheEnd() throws Exception {
        String topic = EmbeddedKafka.name("unordered");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 4_000; i++) {
            records.add(new ProducerRecord<>(topic, i % 2 == 0 ? null : "same", Integer.toString(i)));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 2);
        Set<String> values = ConcurrentHashMap.newKeySet();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .ordering(Ordering.UNORDERED)
                .handler(r -> values.add(r.value()))
                .commitInterval(Duration.ofMillis(50))
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            assertEquals(4_000, values.size());
        }
    }

    /**
     * Null keys keep their partition's offset order under both keyed orderings; under KEY_LATEST they are never
     * superseded. The handler takes a little over 20 us, so that records wait behind a running one (the lane path),
     * not only run on the spot.
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"KEY", "KEY_LATEST"})
    void nullKeysRunInPartitionOrderUnderKeyOrdering(Ordering ordering) throws Exception {
        String topic = EmbeddedKafka.name("null-keys");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            records.add(new ProducerRecord<>(topic, i % 2, null, Integer.toString(i)));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 2);
        Map<Integer, AtomicInteger> running = new ConcurrentHashMap<>();
        Map<Integer, AtomicLong> last = new ConcurrentHashMap<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .ordering(ordering)
                .handler(r -> {
                    long until = System.nanoTime() + 20_000;
                    while (System.nanoTime() - until < 0) {
                        Thread.onSpinWait();
                    }
                    checkPartitionOrder(r, running, last);
                })
                .commitInterval(Duration.ofMillis(50))
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            assertEquals(0, processor.statistics().superseded());
            assertEquals(2_000, processor.statistics().completed());
        }
    }

    @Test
    void partitionOrderCommitsAsRecordsCompleteNotOnlyWhenAPollsRecordsAreAllDone() throws Exception {
        String topic = EmbeddedKafka.name("partition-progress");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            records.add(new ProducerRecord<>(topic, 0, "k" + i, "v"));
        }
        KAFKA.produce(records);
        TopicPartition tp = new TopicPartition(topic, 0);
        AtomicInteger ran = new AtomicInteger();
        AtomicBoolean slow = new AtomicBoolean(true);
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .ordering(Ordering.PARTITION)
                .handler(r -> {
                    ran.incrementAndGet();
                    if (slow.get()) {
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // 300 records: 6 s in all
                    }
                })
                .commitInterval(Duration.ofMillis(50))
                .build()) {
            processor.start();
            await(Duration.ofSeconds(30), "50 records run", () -> ran.get() >= 50);
            await(Duration.ofSeconds(2), "the completions and the commit following them",
                    () -> processor.statistics().completed() >= 40
                            && processor.statistics().committedOffsets().getOrDefault(tp, 0L) >= 40);
            assertTrue(ran.get() < 300, "the records of the poll were all done before the check: " + ran);
            slow.set(false);
            awaitCommitted(processor, Map.of(tp, 300L));
        }
    }

    @Test
    void twoProcessorsOfTwoGroupsShareOneExecutorAndEachProcessesEveryRecord() throws Exception {
        for (Ordering ordering : List.of(Ordering.KEY, Ordering.KEY_LATEST)) {
            String topic = EmbeddedKafka.name("shared-" + ordering);
            KAFKA.createTopic(topic, 1);
            List<ProducerRecord<String, String>> records = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                records.add(new ProducerRecord<>(topic, 0, "k" + (i % 5), Integer.toString(i)));
            }
            KAFKA.produce(records);
            TopicPartition tp = new TopicPartition(topic, 0);
            List<Set<Integer>> seen = List.of(ConcurrentHashMap.newKeySet(), ConcurrentHashMap.newKeySet());
            try (GatlingExecutor executor = GatlingExecutor.builder().name("shared").coreThreads(2).build()) {
                List<KafkaProcessor<String, String>> processors = new ArrayList<>();
                for (int p = 0; p < 2; p++) {
                    Set<Integer> mine = seen.get(p);
                    processors.add(KafkaProcessor.<String, String>builder(
                                    KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                            .topics(topic)
                            .ordering(ordering)
                            .executor(executor)
                            .handler(r -> {
                                mine.add(Integer.parseInt(r.value()));
                                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // so records wait in lanes
                            })
                            .commitInterval(Duration.ofMillis(50))
                            .build());
                }
                try {
                    processors.forEach(KafkaProcessor::start);
                    for (KafkaProcessor<String, String> processor : processors) {
                        awaitCommitted(processor, Map.of(tp, 2_000L));
                    }
                    for (int p = 0; p < 2; p++) {
                        KafkaStatistics s = processors.get(p).statistics();
                        assertEquals(2_000, s.completed(), ordering + ", processor " + p + ": " + s);
                        if (ordering == Ordering.KEY) {
                            assertEquals(2_000, seen.get(p).size(), ordering + ", processor " + p);
                        } else {
                            for (int last = 1_995; last < 2_000; last++) {
                                assertTrue(seen.get(p).contains(last), ordering + ", processor " + p
                                        + ": the last record of its key never ran: " + last);
                            }
                        }
                    }
                } finally {
                    processors.forEach(KafkaProcessor::close);
                }
            }
        }
    }

    private void checkPartitionOrder(ConsumerRecord<String, String> r, Map<Integer, AtomicInteger> running,
                                     Map<Integer, AtomicLong> last) {
        AtomicInteger inPartition = running.computeIfAbsent(r.partition(), p -> new AtomicInteger());
        if (inPartition.incrementAndGet() != 1) {
            violations.add("two records of partition " + r.partition() + " at once");
        }
        long previous = last.computeIfAbsent(r.partition(), p -> new AtomicLong(-1)).getAndSet(r.offset());
        if (previous != r.offset() - 1) {
            violations.add("partition " + r.partition() + ": " + r.offset() + " ran after " + previous);
        }
        Thread.yield();
        inPartition.decrementAndGet();
    }

    static void awaitCommitted(KafkaProcessor<?, ?> processor, Map<TopicPartition, Long> end) {
        try {
            await(Duration.ofSeconds(60), "commits reaching " + end, () -> {
                Map<TopicPartition, Long> c = processor.statistics().committedOffsets();
                return end.entrySet().stream().allMatch(e -> e.getValue() == 0
                        || e.getValue().equals(c.get(e.getKey())));
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; " + processor.statistics(), e);
        }
    }
}
