package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

import static io.github.gatlingexecutor.kafka.EmbeddedKafka.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Programs a user writes from the README's Kafka section, run against a real broker. */
class UserProgramsTest {

    @RegisterExtension
    static final EmbeddedKafka KAFKA = new EmbeddedKafka();

    private final Violations violations = new Violations();

    // ------------------------------------------------------------------------------ the README's example, as written

    private final Map<String, Long> balances = new ConcurrentHashMap<>();
    private final Queue<String> deadLettered = new ConcurrentLinkedQueue<>();
    private final LongAdder applied = new LongAdder();
    private final Queue<Long> poisonCalls = new ConcurrentLinkedQueue<>();
    private CountDownLatch allSeen;

    private void apply(String account, String amount) {
        if (amount.equals("poison")) {
            poisonCalls.add(System.nanoTime());
            throw new IllegalArgumentException("not an amount: " + amount);
        }
        balances.merge(account, Long.parseLong(amount), Long::sum);
        applied.increment();
        allSeen.countDown();
    }

    private void deadLetter(ConsumerRecord<String, String> record, Throwable error) {
        deadLettered.add(record.key() + "@" + record.offset() + ": " + error.getMessage());
        allSeen.countDown();
    }

    private void awaitShutdownSignal() throws InterruptedException {
        assertTrue(allSeen.await(60, TimeUnit.SECONDS), "every record applied or dead-lettered");
    }

    /**
     * The README's example, only the broker's address and {@code auto.offset.reset} changed (the records are there
     * before the group first reads). Its comments are promises: retries (3, 100 ms doubling) then the dead letter, and
     * on leaving the try block everything done is committed, the poison record included once its dead letter returned.
     */
    @Test
    void theReadmeExampleAppliesCommitsAndDeadLettersAsItsCommentsSay() throws Exception {
        String topic = "orders-" + EmbeddedKafka.name("readme");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            records.add(new ProducerRecord<>(topic, "acct" + (i % 10), i == 77 ? "poison" : "1"));
        }
        long poisonOffset = KAFKA.produce(records).get(77).offset();
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 2);
        allSeen = new CountDownLatch(200);
        String group = EmbeddedKafka.name("orders");

        Properties props = new Properties();                    // passed to the KafkaConsumer as they are
        props.put("bootstrap.servers", KAFKA.bootstrap());
        props.put("group.id", group);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("auto.offset.reset", "earliest");
        KafkaProcessor<String, String> kept;
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .ordering(Ordering.KEY)                          // or KEY_LATEST, PARTITION, UNORDERED
                .handler(record -> apply(record.key(), record.value()))
                .onFailure((record, error) -> deadLetter(record, error))   // after retries (3, 100 ms doubling)
                .build()) {
            kept = processor;
            processor.start();                                   // polls on its own thread until close()
            awaitShutdownSignal();
        }                                                        // close(): finish, commit, leave the group
        List<Long> calls = List.copyOf(poisonCalls);
        assertEquals(4, calls.size(), "one try and three retries");
        for (int retry = 1; retry <= 3; retry++) {
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(calls.get(retry) - calls.get(retry - 1));
            long backoffMs = 100L << (retry - 1);
            assertTrue(waitedMs >= backoffMs, "retry " + retry + " after " + waitedMs + " ms, not " + backoffMs);
        }
        assertEquals(List.of("acct7@" + poisonOffset + ": not an amount: poison"), List.copyOf(deadLettered));
        assertEquals(199, applied.sum());
        for (int k = 0; k < 10; k++) {
            assertEquals(k == 7 ? 19L : 20L, balances.get("acct" + k), "acct" + k);
        }
        assertEquals(end, KAFKA.committed(group), "close() committed everything, the dead letter's record included");
        KafkaStatistics s = kept.statistics();
        assertEquals(200, s.polled());
        assertEquals(200, s.completed());
        assertEquals(0, s.superseded());
        assertEquals(1, s.failed());
        assertEquals(3, s.retries());
        assertEquals(Set.of(), s.pausedPartitions());
        assertEquals(end, s.committedOffsets());
    }

    // -------------------------------------------------------- a ledger: failures that pass, and a member that joins

    /**
     * Per-account ledger updates in key order, some updates failing once (a dependency that is briefly down), while a
     * second member joins the group and leaves again. Checked throughout, on the broker: the group's committed offset
     * of a partition never passes a record whose update has not completed. And at the end: no account's update ran
     * beside another of the same account or before an earlier one had completed, each ran exactly once (clean
     * hand-overs re-process nothing), and each member's figures add up.
     */
    @Test
    void aLedgerWithTransientFailuresKeepsOrderAndCommitsOnlyCompletedWorkAcrossARebalance() throws Exception {
        String topic = EmbeddedKafka.name("ledger");
        int partitions = 4;
        int accounts = 200;
        int perAccount = 100;
        int total = accounts * perAccount;
        KAFKA.createTopic(topic, partitions);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int seq = 0; seq < perAccount; seq++) {
            for (int a = 0; a < accounts; a++) {
                records.add(new ProducerRecord<>(topic, "acct" + a, Integer.toString(seq)));
            }
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, partitions);
        String group = EmbeddedKafka.name("ledger");

        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        Map<String, AtomicLong> lastSeq = new ConcurrentHashMap<>();
        Map<TopicPartition, Set<Long>> completed = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        LongAdder failures = new LongAdder();
        class Ledger implements RecordHandler<String, String> {
            final LongAdder done = new LongAdder();

            @Override
            public void handle(ConsumerRecord<String, String> r) {
                AtomicInteger inKey = running.computeIfAbsent(r.key(), k -> new AtomicInteger());
                if (inKey.incrementAndGet() != 1) {
                    violations.add(r.key() + " ran twice at once, at " + r.offset());
                }
                try {
                    long seq = Long.parseLong(r.value());
                    if (seq % 7 == 3 && failedOnce.add(r.key() + "@" + seq)) {
                        failures.increment();
                        throw new IllegalStateException("ledger briefly unavailable");
                    }
                    long previous = lastSeq.computeIfAbsent(r.key(), k -> new AtomicLong(-1)).getAndSet(seq);
                    if (previous != seq - 1) {
                        violations.add(r.key() + ": update " + seq + " after " + previous);
                    }
                    runs.computeIfAbsent(r.key() + "@" + seq, x -> new AtomicInteger()).incrementAndGet();
                    LockSupport.parkNanos(1_000_000);
                    // Before the handler returns, so before any commit may pass it.
                    completed.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
                            tp -> ConcurrentHashMap.newKeySet()).add(r.offset());
                    done.increment();
                } finally {
                    inKey.decrementAndGet();
                }
            }
        }
        AtomicBoolean watching = new AtomicBoolean(true);
        Thread watcher = new Thread(() -> {
            while (watching.get()) {
                try {
                    Map<TopicPartition, Long> c = KAFKA.committed(group); // read first: completions only grow
                    c.forEach((tp, offset) -> {
                        Set<Long> done = completed.getOrDefault(tp, Set.of());
                        for (long o = 0; o < offset; o++) {
                            if (!done.contains(o)) {
                                violations.add("committed " + tp + " at " + offset + " before " + o + " completed");
                                return;
                            }
                        }
                    });
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    // the group's offsets could not be read this time; read again
                }
            }
        }, "commit-watcher");
        watcher.start();
        Ledger first = new Ledger();
        Ledger second = new Ledger();
        KafkaStatistics a;
        try (GatlingExecutor executorA = GatlingExecutor.builder().name("a").coreThreads(4).maxThreads(4).build();
             GatlingExecutor executorB = GatlingExecutor.builder().name("b").coreThreads(4).maxThreads(4).build();
             KafkaProcessor<String, String> pa = KafkaProcessor.<String, String>builder(
                             KAFKA.consumerProperties(group))
                     .topics(topic).executor(executorA).handler(first).commitInterval(Duration.ofMillis(50))
                     .maxPendingPerPartition(300).build()) {
            pa.start();
            await(Duration.ofSeconds(60), "a under way", () -> first.done.sum() >= total / 5);
            try (KafkaProcessor<String, String> pb = KafkaProcessor.<String, String>builder(
                            KAFKA.consumerProperties(group))
                    .topics(topic).executor(executorB).handler(second).commitInterval(Duration.ofMillis(50))
                    .maxPendingPerPartition(300).build()) {
                pb.start();
                await(Duration.ofSeconds(60), "b took some partitions over", () -> second.done.sum() >= total / 10);
                assertTrue(first.done.sum() + second.done.sum() < total, "b joined mid-run");
            }
            assertTrue(first.done.sum() + second.done.sum() < total, "b left mid-run");
            OrderingTest.awaitCommitted(pa, end);
            a = pa.statistics();
        } finally {
            watching.set(false);
            watcher.join();
        }
        violations.assertNone();
        assertEquals(total, runs.size(), "every update ran");
        runs.forEach((u, n) -> assertEquals(1, n.get(), u + " ran more than once"));
        lastSeq.forEach((k, v) -> assertEquals(perAccount - 1, v.get(), k));
        assertEquals(end, KAFKA.committed(group));
        assertEquals(total, first.done.sum() + second.done.sum());
        // One member's figures: it ran what it completed, and its retries are the failed first tries it saw.
        assertEquals(first.done.sum(), a.completed(), "a's completed: " + a);
        assertEquals(0, a.failed());
        assertTrue(a.polled() >= a.completed(), a.toString());
        assertTrue(failures.sum() >= a.retries(), a + " vs " + failures.sum() + " failed first tries");
    }

    // ---------------------------------------------------------------------- latest prices, from two venues' topics

    /**
     * A latest-price cache under {@code KEY_LATEST}, fed by two venues' topics that name the same instruments. The same
     * key in two topics is two keys: a tick of one venue runs while the same instrument's tick of the other venue
     * runs. Each instrument of each venue ends on its newest tick and never goes back; every record either ran or was
     * superseded; a tick whose handler keeps failing reaches the failure handler after the retries, and the commit
     * passes it only then. No handler runs on the polling thread, though that thread routes this mode's records.
     */
    @Test
    void latestPricesFromTwoVenuesNeverGoBackAndTheSameKeyInTwoTopicsIsTwoKeys() throws Exception {
        String venueA = EmbeddedKafka.name("venue-a");
        String venueB = EmbeddedKafka.name("venue-b");
        KAFKA.createTopic(venueA, 2);
        KAFKA.createTopic(venueB, 2);
        String group = EmbeddedKafka.name("prices");
        CountDownLatch aIn = new CountDownLatch(1);
        CountDownLatch bRan = new CountDownLatch(1);
        CountDownLatch aMayEnd = new CountDownLatch(1);
        EmbeddedKafka.HandlerWaits waits = new EmbeddedKafka.HandlerWaits();
        Map<String, AtomicLong> latest = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        LongAdder ran = new LongAdder();
        AtomicInteger badCalls = new AtomicInteger();
        Queue<String> failedForGood = new ConcurrentLinkedQueue<>();
        int ticks = 300;
        int instruments = 20;
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(venueA, venueB)
                .ordering(Ordering.KEY_LATEST)
                .retryBackoff(Duration.ofMillis(10))
                .commitInterval(Duration.ofMillis(50))
                .handler(r -> {
                    if (Thread.currentThread().getName().equals("kafka-" + group + "-poll")) {
                        violations.add(r + " ran on the polling thread, which routes KEY_LATEST's records");
                    }
                    String where = r.topic() + "/" + r.key();
                    AtomicInteger inKey = running.computeIfAbsent(where, k -> new AtomicInteger());
                    if (inKey.incrementAndGet() != 1) {
                        violations.add(where + " ran twice at once");
                    }
                    try {
                        if (r.value().equals("first")) {
                            if (r.topic().equals(venueA)) {
                                aIn.countDown();
                                waits.await(aMayEnd, "venue B's tick of the same instrument");
                            } else {
                                bRan.countDown();
                            }
                            return;
                        }
                        if (r.key().equals("BAD")) {
                            badCalls.incrementAndGet();
                            throw new IllegalStateException("no such instrument");
                        }
                        long tick = Long.parseLong(r.value());
                        long before = latest.computeIfAbsent(where, k -> new AtomicLong(-1)).getAndSet(tick);
                        if (before >= tick) {
                            violations.add(where + ": tick " + tick + " after " + before);
                        }
                        ran.increment();
                        Thread.sleep(1);
                    } finally {
                        inKey.decrementAndGet();
                    }
                })
                .onFailure((r, error) -> failedForGood.add(r.topic() + "/" + r.key() + "=" + r.value()))
                .build()) {
            processor.start();
            try {
                KAFKA.produce(List.of(new ProducerRecord<>(venueA, "EURUSD", "first")));
                assertTrue(aIn.await(30, TimeUnit.SECONDS), "venue A's EURUSD runs");
                KAFKA.produce(List.of(new ProducerRecord<>(venueB, "EURUSD", "first")));
                assertTrue(bRan.await(15, TimeUnit.SECONDS), "venue B's EURUSD ran while venue A's EURUSD ran");
            } finally {
                aMayEnd.countDown();
            }

            List<ProducerRecord<String, String>> records = new ArrayList<>();
            for (int t = 0; t < ticks; t++) {
                for (int i = 0; i < instruments; i++) {
                    records.add(new ProducerRecord<>(venueA, "I" + i, Integer.toString(t)));
                    records.add(new ProducerRecord<>(venueB, "I" + i, Integer.toString(t)));
                }
            }
            records.add(new ProducerRecord<>(venueB, "BAD", "1")); // the last record of its key: never superseded
            KAFKA.produce(records);
            Map<TopicPartition, Long> end = new HashMap<>(KAFKA.endOffsets(venueA, 2));
            end.putAll(KAFKA.endOffsets(venueB, 2));
            long total = end.values().stream().mapToLong(Long::longValue).sum();
            OrderingTest.awaitCommitted(processor, end);
            KafkaStatistics s = processor.statistics();
            violations.assertNone();
            waits.assertNoneTimedOut();
            for (String venue : List.of(venueA, venueB)) {
                for (int i = 0; i < instruments; i++) {
                    assertEquals(ticks - 1, latest.get(venue + "/I" + i).get(),
                            venue + "/I" + i + " ends on its last tick");
                }
            }
            assertEquals(List.of(venueB + "/BAD=1"), List.copyOf(failedForGood));
            assertEquals(4, badCalls.get(), "one try and three retries");
            assertEquals(total, s.polled());
            assertEquals(total, s.completed());
            assertEquals(1, s.failed());
            assertEquals(3, s.retries());
            assertEquals(total, ran.sum() + 2 + 1 + s.superseded(),
                    "every tick ran (the two firsts and BAD aside) or was superseded: " + s);
        }
    }

    // ---------------------------------------------------------------------------- a graceful stop with work in flight

    /**
     * A graceful stop while one account's slow update runs and that account's later updates wait behind it in its
     * lane: {@code close()} gives the records already handed out their time, so the queued updates run too, in order,
     * after the slow one, and the commit passes all of them (none left for the next owner to apply again).
     */
    @Test
    void closeRunsTheUpdatesQueuedBehindASlowOneAndCommitsPastThem() throws Exception {
        String topic = EmbeddedKafka.name("ledger-stop");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int seq = 0; seq < 10; seq++) {
            records.add(new ProducerRecord<>(topic, "acct0", Integer.toString(seq)));
        }
        for (int a = 1; a <= 20; a++) {
            records.add(new ProducerRecord<>(topic, "acct" + a, "0"));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 1);
        String group = EmbeddedKafka.name("ledger-stop");
        CountDownLatch slowIn = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        EmbeddedKafka.HandlerWaits waits = new EmbeddedKafka.HandlerWaits();
        Queue<String> ran = new ConcurrentLinkedQueue<>();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .commitInterval(Duration.ofSeconds(60)) // only close commits
                .handler(r -> {
                    if (r.key().equals("acct0") && r.value().equals("0")) {
                        slowIn.countDown();
                        waits.await(release, "the test's release of the slow update");
                    }
                    ran.add(r.key() + "@" + r.value());
                })
                .build();
        Thread closer = new Thread(processor::close, "closer");
        try {
            processor.start();
            assertTrue(slowIn.await(30, TimeUnit.SECONDS), "the slow update runs");
            await(Duration.ofSeconds(30), "the other accounts' updates done",
                    () -> processor.statistics().completed() == 20 && processor.statistics().polled() == 30);
            closer.start();
            // Or already returned, which is a close that did not wait for them (the checks below say what it left).
            await(Duration.ofSeconds(30), "close waiting for the records handed out",
                    () -> EmbeddedKafka.pollingThreadsIn(group, "drain") || !closer.isAlive());
        } finally {
            release.countDown();
        }
        closer.join(TimeUnit.SECONDS.toMillis(60));
        assertFalse(closer.isAlive(), "close returned");
        waits.assertNoneTimedOut();
        List<String> acct0 = ran.stream().filter(u -> u.startsWith("acct0@")).collect(Collectors.toList());
        List<String> expected = new ArrayList<>();
        for (int seq = 0; seq < 10; seq++) {
            expected.add("acct0@" + seq);
        }
        assertEquals(expected, acct0, "the slow update, then the ones queued behind it, in order");
        assertEquals(end, KAFKA.committed(group), "close committed past every update");
        KafkaStatistics s = processor.statistics();
        assertEquals(30, s.polled());
        assertEquals(30, s.completed());
        assertEquals(end, s.committedOffsets());
    }
}
