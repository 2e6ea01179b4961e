package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

import static io.github.gatlingexecutor.kafka.EmbeddedKafka.await;
import static io.github.gatlingexecutor.kafka.OrderingTest.awaitCommitted;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The per-partition routers: records run on the router when their key is free and in the key's lane otherwise, a
 * slow handler moves everything to the lanes, and a call that runs long loses the routing. Each test would fail if
 * one of those paths let two records of a key overlap, reordered them, or let the commit pass an unfinished record.
 */
class RoutingTest {

    @RegisterExtension
    static final EmbeddedKafka KAFKA = new EmbeddedKafka();

    /** Records every violation instead of throwing inside a handler (which would only cause a retry). */
    private final Violations violations = new Violations();

    /**
     * Checks, per key across everything that runs it, that no two records overlap, and per key and partition that
     * the sequence numbers in the values come in order without gaps or repeats.
     */
    private final class Checker {
        final Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        final Map<String, AtomicLong> lastSeq = new ConcurrentHashMap<>();
        final LongAdder calls = new LongAdder();

        void enter(ConsumerRecord<String, String> r) {
            calls.increment();
            if (running.computeIfAbsent(r.key(), k -> new AtomicInteger()).incrementAndGet() != 1) {
                violations.add("two records of " + r.key() + " at once, at " + r.partition() + "@" + r.offset());
            }
            long seq = Long.parseLong(r.value());
            long previous = lastSeq.computeIfAbsent(r.key() + "/" + r.partition(), k -> new AtomicLong(-1))
                    .getAndSet(seq);
            if (previous != seq - 1) {
                violations.add(r.key() + " in " + r.partition() + ": " + seq + " ran after " + previous);
            }
        }

        void exit(ConsumerRecord<String, String> r) {
            running.get(r.key()).decrementAndGet();
        }
    }

    /**
     * Every key is in every partition, so the routers of all partitions claim the same keys at once; the handler is
     * fast (run on the router) except every 97th record, which outlasts the watch and loses its router the routing.
     */
    @Test
    void keyInSeveralPartitionsNeverOverlapsAndKeepsOffsetOrderInEach() throws Exception {
        String topic = EmbeddedKafka.name("shared-keys");
        int partitions = 4;
        int keys = 50;
        int perKeyAndPartition = 200;
        KAFKA.createTopic(topic, partitions);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int seq = 0; seq < perKeyAndPartition; seq++) {
            for (int k = 0; k < keys; k++) {
                for (int p = 0; p < partitions; p++) {
                    records.add(new ProducerRecord<>(topic, p, "k" + k, Integer.toString(seq)));
                }
            }
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, partitions);
        long total = (long) partitions * keys * perKeyAndPartition;
        Checker checker = new Checker();
        AtomicLong count = new AtomicLong();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("shared-keys").coreThreads(8).build();
             KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                             KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                     .topics(topic)
                     .executor(executor)
                     .commitInterval(Duration.ofMillis(50))
                     .handler(r -> {
                         checker.enter(r);
                         if (count.incrementAndGet() % 97 == 0) {
                             LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(12));
                         } else {
                             for (int i = 0; i < 20; i++) {
                                 Thread.onSpinWait(); // long enough for the routers of other partitions to meet it
                             }
                         }
                         checker.exit(r);
                     })
                     .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            assertEquals(total, checker.calls.sum(), "each record ran once");
            assertEquals(total, processor.statistics().completed());
            checker.lastSeq.forEach((k, v) -> assertEquals(perKeyAndPartition - 1, v.get(), "last record of " + k));
        }
    }

    /**
     * The first record of a partition runs on its router and then blocks: the other keys of that partition must
     * keep going (the polling thread takes the routing away from the blocked call), the blocked key's later records
     * must wait for it, and the commit must stop at it: the close, which commits what completed, commits its offset.
     * A second processor then reads from there and runs the blocked key's records in order.
     */
    @Test
    void aCallThatBlocksHoldsBackOnlyItsKeyAndTheCommitStopsAtIt() throws Exception {
        String topic = EmbeddedKafka.name("stuck");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        records.add(new ProducerRecord<>(topic, 0, "stuck", "0"));
        for (int i = 0; i < 2_000; i++) {
            records.add(new ProducerRecord<>(topic, 0, "k" + (i % 100), Integer.toString(i / 100)));
            if (i % 400 == 399) {
                records.add(new ProducerRecord<>(topic, 0, "stuck", Integer.toString(1 + i / 400)));
            }
        }
        KAFKA.produce(records);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 1);
        String group = EmbeddedKafka.name("g");
        Checker checker = new Checker();
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch blocked = new CountDownLatch(1);
        LongAdder others = new LongAdder();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .commitInterval(Duration.ofMillis(20))
                .closeTimeout(Duration.ofMillis(300))
                .handler(r -> {
                    checker.enter(r);
                    try {
                        if (r.key().equals("stuck") && r.value().equals("0")) {
                            blocked.countDown();
                            release.await(); // until the close interrupts it
                        } else if (!r.key().equals("stuck")) {
                            others.increment();
                        }
                    } finally {
                        checker.exit(r);
                    }
                })
                .build()) {
            processor.start();
            assertTrue(blocked.await(30, TimeUnit.SECONDS));
            await(Duration.ofSeconds(30), "the other keys of the partition done", () -> others.sum() == 2_000);
            assertEquals(2_001, checker.calls.sum(), "the blocked key's later records wait for it");
        }
        release.countDown();
        violations.assertNone();
        Long committed = KAFKA.committed(group).get(tp);
        assertTrue(committed == null || committed == 0, "the commit stops at the blocked record: " + committed);

        Checker again = new Checker();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    again.enter(r);
                    again.exit(r);
                })
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            assertEquals(records.size(), again.calls.sum(), "everything from the blocked record on ran again");
            assertEquals(5, again.lastSeq.get("stuck/0").get(), "every record of the blocked key ran, in order");
        }
    }

    /**
     * A handler slower than the router's limit (but not slow enough for the polling thread to take a call's routing
     * away) runs in parallel across the keys of one partition, not one call at a time on the router.
     */
    @Test
    void slowHandlerRunsInParallelAcrossTheKeysOfOnePartition() throws Exception {
        String topic = EmbeddedKafka.name("slow-handler");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int seq = 0; seq < 10; seq++) {
            for (int k = 0; k < 100; k++) {
                records.add(new ProducerRecord<>(topic, 0, "k" + k, Integer.toString(seq)));
            }
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 1);
        Checker checker = new Checker();
        AtomicInteger inHandler = new AtomicInteger();
        LongAdder overlapping = new LongAdder();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("slow-handler").maxThreads(16).build();
             KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                             KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                     .topics(topic)
                     .executor(executor)
                     .commitInterval(Duration.ofMillis(20))
                     .handler(r -> {
                         checker.enter(r);
                         if (inHandler.incrementAndGet() > 1) {
                             overlapping.increment();
                         }
                         Thread.sleep(2); // slow, but shorter than what makes the polling thread take over
                         inHandler.decrementAndGet();
                         checker.exit(r);
                     })
                     .build()) {
            processor.start();
            awaitCommitted(processor, end);
            violations.assertNone();
            assertEquals(records.size(), checker.calls.sum());
            // Run on the router, one at a time, nearly every call would start alone (the partition has one router).
            assertTrue(overlapping.sum() >= records.size() * 8L / 10,
                    "most calls overlapped another one of the same partition: " + overlapping.sum());
        }
    }

    /**
     * Records produced while a second member joins and leaves: both processors run most records on their routers,
     * some calls lose the routing, and partitions move twice. No key may overlap across the two processors, and each
     * key's records run once each, in order (clean hand-overs commit exactly what completed).
     */
    @Test
    void keysStayOrderedAndExclusiveAcrossRevocationsWhileRoutersRunRecords() throws Exception {
        String topic = EmbeddedKafka.name("routing-rebalance");
        int partitions = 6;
        int keys = 300;
        KAFKA.createTopic(topic, partitions);
        String group = EmbeddedKafka.name("g");
        Checker checker = new Checker();
        LongAdder doneA = new LongAdder();
        LongAdder doneB = new LongAdder();
        AtomicLong count = new AtomicLong();
        class Handler implements RecordHandler<String, String> {
            private final LongAdder done;

            Handler(LongAdder done) {
                this.done = done;
            }

            @Override
            public void handle(ConsumerRecord<String, String> r) {
                checker.enter(r);
                if (count.incrementAndGet() % 211 == 0) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(12));
                }
                checker.exit(r);
                done.increment();
            }
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong sent = new AtomicLong();
        AtomicReference<Exception> produceFailed = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            long[] seq = new long[keys];
            try (KafkaProducer<String, String> p = KAFKA.producer()) {
                for (int i = 0; !stop.get(); i++) {
                    int k = i % keys;
                    p.send(new ProducerRecord<>(topic, "k" + k, Long.toString(seq[k]++)), (m, e) -> {
                        if (e != null) {
                            produceFailed.compareAndSet(null, e);
                        }
                    });
                    sent.incrementAndGet();
                    if (i % 100 == 99) {
                        p.flush();
                        Thread.sleep(2); // a live stream, so that partitions move while records are in the routers
                    }
                }
                p.flush();
            } catch (Exception e) {
                produceFailed.compareAndSet(null, e);
            }
        }, "live-producer");
        try (GatlingExecutor executorA = GatlingExecutor.builder().name("a").coreThreads(4).maxThreads(8).build();
             GatlingExecutor executorB = GatlingExecutor.builder().name("b").coreThreads(4).maxThreads(8).build();
             KafkaProcessor<String, String> a = KafkaProcessor.<String, String>builder(KAFKA.consumerProperties(group))
                     .topics(topic).executor(executorA).commitInterval(Duration.ofMillis(50))
                     .handler(new Handler(doneA)).build()) {
            a.start();
            producer.start();
            await(Duration.ofSeconds(30), "a under way", () -> doneA.sum() >= 5_000);
            KafkaProcessor<String, String> b = KafkaProcessor.<String, String>builder(KAFKA.consumerProperties(group))
                    .topics(topic).executor(executorB).commitInterval(Duration.ofMillis(50))
                    .handler(new Handler(doneB)).build();
            b.start();
            try {
                await(Duration.ofSeconds(30), "b took over some partitions", () -> doneB.sum() >= 5_000);
                long aBefore = doneA.sum();
                await(Duration.ofSeconds(30), "a still running its share", () -> doneA.sum() >= aBefore + 2_000);
            } finally {
                b.close(); // here, or on a failure above: left running, it would go on in the class's broker
            }
            long bDone = doneB.sum();
            long aAfter = doneA.sum();
            await(Duration.ofSeconds(30), "a took the partitions back", () -> doneA.sum() >= aAfter + 5_000);
            stop.set(true);
            producer.join();
            assertNull(produceFailed.get());
            Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, partitions);
            awaitCommitted(a, end);
            assertEquals(bDone, doneB.sum(), "nothing ran in b after it closed");
        } finally {
            stop.set(true); // the producer stops on a failure too
        }
        violations.assertNone();
        assertEquals(sent.get(), checker.calls.sum(), "every record ran once");
    }

    /**
     * Under KEY_LATEST a record of a partition revoked (or lost) while it waited behind its key's running record was
     * dropped, not superseded; but when the partition's records came again after it was assigned back, the re-read
     * replaced it in the key's slot and counted it in completed() and superseded() (4 and 2, where 3 and 1 ran or were
     * superseded), though it never ran here and its next owner processes it.
     */
    @Test
    void aRecordDroppedWithItsPartitionIsNotCountedWhenALaterOneOfItsKeyReplacesIt() throws Exception {
        List<String> ran = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        GatlingExecutor executor = GatlingExecutor.builder().name("latest").coreThreads(2).build();
        try {
            RecordRunner<String, String> runner = new RecordRunner<>(r -> {
                ran.add(r.value());
                if (r.value().equals("old-0")) {
                    running.countDown();
                    release.await();
                }
            }, null, 3, Duration.ofMillis(100));
            runner.executor(executor);
            ConcurrentHashMap<Object, Slot<String, String>> keys = new ConcurrentHashMap<>();
            TopicPartition tp = new TopicPartition("t", 0);
            PartitionState first = new PartitionState(tp, Thread.currentThread(), 1024);
            Router<String, String> firstRouter = new Router<>(first, runner, executor, Ordering.KEY_LATEST, keys);
            first.router = firstRouter;
            firstRouter.offer(List.of(new ConsumerRecord<>("t", 0, 0, "k", "old-0")));
            firstRouter.schedule();
            assertTrue(running.await(30, TimeUnit.SECONDS));
            firstRouter.offer(List.of(new ConsumerRecord<>("t", 0, 1, "k", "old-1"))); // waits behind old-0
            firstRouter.schedule();
            await(Duration.ofSeconds(30), "old-1 routed", () -> first.routedUpTo == 2); // offsets below 2
            first.revoked = true; // let go past closeTimeout: what waits is dropped, the next owner reads it again
            PartitionState second = new PartitionState(tp, Thread.currentThread(), 1024);
            Router<String, String> secondRouter = new Router<>(second, runner, executor, Ordering.KEY_LATEST, keys);
            second.router = secondRouter;
            secondRouter.offer(List.of(new ConsumerRecord<>("t", 0, 0, "k", "new-0"),
                    new ConsumerRecord<>("t", 0, 1, "k", "new-1")));
            secondRouter.schedule();
            await(Duration.ofSeconds(30), "new-0 and new-1 routed", () -> second.routedUpTo == 2);
            release.countDown();
            await(Duration.ofSeconds(30), "new-1 to run and be counted",
                    () -> ran.contains("new-1") && runner.completed.sum() >= 3);
            assertEquals(List.of("old-0", "new-1"), ran);
            assertEquals(1, runner.superseded.sum(), "only new-0 was superseded");
            assertEquals(3, runner.completed.sum(), "old-0 ran, new-0 was superseded, new-1 ran; old-1 was dropped");
        } finally {
            release.countDown(); // before close(), which waits for the handler
            executor.close();
        }
    }

    /**
     * Under KEY_LATEST a record of a key with nothing running or waiting runs at once: the routing hands it to its
     * key's lane, with no newer record of the key, no later poll and no timer needed first (no debounce). The executor
     * runs only what the test tells it to, on the test's thread, and keeps timer actions apart without ever running
     * them: a router that held the record back for a newer one, until the next poll (its next schedule()) or on a
     * timer, leaves it unrun here.
     */
    @Test
    void underKeyLatestARecordOfAnIdleKeyRunsWithoutWaitingForANewerOneAPollOrATimer() {
        List<String> ran = new ArrayList<>(); // only the test's thread runs handlers here
        LincheckRoutingTest.ModelExecutor executor = new LincheckRoutingTest.ModelExecutor();
        executor.timersHeld = true;
        RecordRunner<String, String> runner = new RecordRunner<>(r -> ran.add(r.value()), null, 3,
                Duration.ofMillis(100));
        runner.executor(executor);
        PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1024);
        Router<String, String> router = new Router<>(ps, runner, executor, Ordering.KEY_LATEST,
                new ConcurrentHashMap<>());
        ps.router = router;

        poll(ps, router, new ConsumerRecord<>("t", 0, 0, "k", "k@0"));
        executor.work();
        assertEquals(List.of("k@0"), ran, "the record of an idle key, with nothing after it");
        // The key ran before and is idle again; a key new to the router beside it.
        poll(ps, router, new ConsumerRecord<>("t", 0, 1, "k", "k@1"), new ConsumerRecord<>("t", 0, 2, "j", "j@2"));
        executor.work();
        assertEquals(List.of("k@0", "k@1", "j@2"), ran, "the records of idle keys, with nothing after them");
        assertTrue(executor.timers.isEmpty(), "a timer set for records that run at once: " + executor.timers);
        assertEquals(0, runner.superseded.sum());
        assertEquals(3, ps.advance(), "the commit follows the records");
    }

    /**
     * A record that fails on the spot is kept for its retry, and the next record of the partition, of another key, runs
     * on the spot too: the router must take a new object for it. Reusing the failed record's (the router's spare, which
     * the failure made a tracked record) rewrote that record's offset and payload, so its retry ran the handler with no
     * record and the commit lost its place. Deterministic: the executor runs only what the test tells it to, on the
     * test's thread, and the retry waits until the test fires it.
     */
    @Test
    void aRecordOfAnotherKeyAfterOneThatFailedOnTheSpotLeavesTheFailedOneIntact() {
        List<String> ran = new ArrayList<>(); // only the test's thread runs handlers here
        List<String> failures = new ArrayList<>();
        LincheckRoutingTest.ModelExecutor executor = new LincheckRoutingTest.ModelExecutor();
        executor.timersHeld = true;
        RecordRunner<String, String> runner = new RecordRunner<>(r -> {
            if (r == null) {
                failures.add("a handler call with no record");
                throw new IllegalStateException("no record");
            }
            if (r.value().equals("k@0") && !failures.contains("k@0")) {
                failures.add("k@0");
                throw new IllegalStateException("first try of k@0");
            }
            ran.add(r.value());
        }, null, 3, Duration.ofMillis(100));
        runner.executor(executor);
        PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1024);
        Router<String, String> router = new Router<>(ps, runner, executor, Ordering.KEY, new ConcurrentHashMap<>());
        ps.router = router;

        poll(ps, router, new ConsumerRecord<>("t", 0, 0, "k", "k@0"), new ConsumerRecord<>("t", 0, 1, "j", "j@1"));
        work(executor);
        assertEquals(List.of("j@1"), ran, "j, free, ran on the spot while k@0 waits for its retry");
        assertEquals(0, ps.advance(), "the commit waits for the failed record");
        assertEquals(1, executor.timers.size(), "the retry of k@0");
        executor.timers.poll().run();
        work(executor);
        assertEquals(List.of("k@0"), failures, "one failed try, of k@0 itself");
        assertEquals(List.of("j@1", "k@0"), ran, "the retry runs k@0, as it was");
        assertEquals(2, ps.advance(), "the commit passes both");
        assertEquals(2, runner.completed.sum());
        assertEquals(1, runner.retried.sum());
    }

    /**
     * KEY_LATEST: records of a key polled together while it is idle are superseded by the newest, which alone runs; each
     * superseded record gives its claim back, so the key's lane ends its run once the newest is done. A superseded
     * record that kept its claim left the key owned for good: the lane found nothing to take with a claim still
     * counted, and resubmitted itself for ever (here: more than the test's budget of tasks). Counted in superseded()
     * and completed(), and the commit passes them.
     */
    @Test
    void underKeyLatestSupersededRecordsGiveTheirClaimsBackAndAreCounted() {
        Routed f = new Routed(Ordering.KEY_LATEST, null);
        // Routed on the polling thread (this one) before any lane runs: k@0 and k@1 wait, and are replaced in turn.
        f.poll(new ConsumerRecord<>("t", 0, 0, "k", "k@0"), new ConsumerRecord<>("t", 0, 1, "k", "k@1"),
                new ConsumerRecord<>("t", 0, 2, "k", "k@2"), new ConsumerRecord<>("t", 0, 3, "j", "j@3"));
        assertEquals(List.of("k@2", "j@3"), f.ran, "the newest record of each key");
        assertEquals(2, f.runner.superseded.sum(), "k@0 and k@1");
        assertEquals(4, f.runner.completed.sum(), "two ran, two superseded");
        assertEquals(4, f.ps.advance(), "the commit passes every record");
        assertEquals(0, f.ps.pending());
        assertTrue(f.keys.get("k").unclaimed(), "every claim of k given back");
        assertTrue(f.executor.timers.isEmpty(), "nothing waits for a timer: " + f.executor.timers);
    }

    /**
     * The sweeper retires an idle key's slot and takes it out of the topic's map while the router still holds it in
     * its own table: the router's next record of that key must find the slot retired and make a new one. A router
     * that used its table's entry as it was claimed a retired slot, which refuses every claim, and looked the key up
     * in the same table again, for ever (the routing's run never ended, and the partition routed nothing more).
     */
    @Test
    void aRecordOfAKeyWhoseSlotTheSweeperRetiredGetsANewSlot() {
        Routed f = new Routed(Ordering.KEY, null);
        f.poll(new ConsumerRecord<>("t", 0, 0, "k", "k@0"));
        Slot<String, String> first = f.keys.get("k");
        assertTrue(first.retire(), "k is idle: the sweeper retires its slot");
        f.keys.remove("k", first);
        poll(f.ps, f.router, new ConsumerRecord<>("t", 0, 1, "k", "k@1"));
        // On another thread, so that a router that loops on the retired slot fails the test instead of hanging it.
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> work(f.executor));
        assertEquals(List.of("k@0", "k@1"), f.ran);
        assertTrue(f.keys.get("k") != null && f.keys.get("k") != first, "a new slot for k: " + f.keys);
        assertEquals(2, f.ps.advance());
    }

    /**
     * PARTITION order: a record that fails holds its partition until its retry; once the retry succeeds, the partition
     * goes on, with the records of that poll and with those of later polls. A router that kept the record as failing
     * after its retry succeeded routed the rest of that poll, then refused every later run as if still waiting for the
     * retry: the partition stopped for good (a failure test whose records all come in one poll does not see it).
     */
    @Test
    void underPartitionOrderTheRecordsOfLaterPollsRunOnceAFailedRecordsRetrySucceeded() {
        Routed f = new Routed(Ordering.PARTITION, "0");
        f.poll(new ConsumerRecord<>("t", 0, 0, "a", "0"), new ConsumerRecord<>("t", 0, 1, "b", "1"));
        assertEquals(List.of(), f.ran, "1 waits behind the failed 0, whatever its key");
        f.retry();
        assertEquals(List.of("0", "1"), f.ran);
        f.poll(new ConsumerRecord<>("t", 0, 2, "a", "2"));
        assertEquals(List.of("0", "1", "2"), f.ran, "the next poll's record runs");
        assertEquals(3, f.ps.advance());
        assertEquals(3, f.runner.completed.sum());
    }

    /**
     * KEY_LATEST, where every record runs in its key's lane: a record that fails holds the key until its retry, and once
     * the retry succeeds the key is free, so the key's next record runs when it comes. A lane that kept the record as
     * failing after its retry succeeded took every later run for a retry not yet due, and the key never ran again.
     */
    @Test
    void underKeyLatestTheNextRecordOfAKeyRunsOnceItsFailedRecordsRetrySucceeded() {
        Routed f = new Routed(Ordering.KEY_LATEST, "k@0");
        f.poll(new ConsumerRecord<>("t", 0, 0, "k", "k@0"));
        assertEquals(List.of(), f.ran);
        f.retry();
        assertEquals(List.of("k@0"), f.ran, "the retry");
        f.poll(new ConsumerRecord<>("t", 0, 1, "k", "k@1"));
        assertEquals(List.of("k@0", "k@1"), f.ran, "the key's next record, with nothing failing any more");
        assertEquals(2, f.ps.advance());
        assertTrue(f.executor.timers.isEmpty(), "no retry waits: " + f.executor.timers);
    }

    /**
     * A router of partition t-0 on a model executor whose retry timers wait for the test, over a handler that records
     * the values it ran and fails the first try of one value ({@code failsOnce}; null: none).
     */
    private static final class Routed {
        final List<String> ran = new ArrayList<>();
        final LincheckRoutingTest.ModelExecutor executor = new LincheckRoutingTest.ModelExecutor();
        final RecordRunner<String, String> runner;
        final ConcurrentHashMap<Object, Slot<String, String>> keys = new ConcurrentHashMap<>();
        final PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1024);
        final Router<String, String> router;

        Routed(Ordering ordering, String failsOnce) {
            Set<String> failed = new HashSet<>();
            executor.timersHeld = true;
            runner = new RecordRunner<>(r -> {
                if (r.value().equals(failsOnce) && failed.add(r.value())) {
                    throw new IllegalStateException("first try of " + failsOnce);
                }
                ran.add(r.value());
            }, null, 3, Duration.ofMillis(100));
            runner.executor(executor);
            router = new Router<>(ps, runner, executor, ordering, keys);
            ps.router = router;
        }

        /** Routes one poll's records, and runs what they made runnable. */
        @SafeVarargs
        final void poll(ConsumerRecord<String, String>... records) {
            RoutingTest.poll(ps, router, records);
            work(executor);
        }

        /** Runs the one retry waiting, and what it made runnable. */
        void retry() {
            assertEquals(1, executor.timers.size(), "the retry of " + executor.timers);
            executor.timers.poll().run();
            work(executor);
        }
    }

    /** Runs the executor's queue on this thread; a bounded number of tasks, so that a task resubmitting itself fails. */
    private static void work(LincheckRoutingTest.ModelExecutor executor) {
        for (int n = 0; n < 1_000; n++) {
            Runnable task = executor.queue.poll();
            if (task == null) {
                return;
            }
            task.run();
        }
        throw new AssertionError("tasks still coming after 1000: one resubmits itself for ever");
    }

    /** The polling thread's part of a poll that returned {@code records} of the partition. */
    @SafeVarargs
    static <K> void poll(PartitionState ps, Router<K, String> router, ConsumerRecord<K, String>... records) {
        long next = records[records.length - 1].offset() + 1;
        ps.dispatched += records.length;
        ps.sentUpTo = next;
        ps.nextOffset = next;
        router.offer(List.of(records));
        assertTrue(router.schedule(), "the router's run was refused");
    }
}
