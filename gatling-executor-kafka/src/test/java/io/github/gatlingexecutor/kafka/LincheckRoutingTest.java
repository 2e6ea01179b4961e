package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.ContextExecutor;
import io.github.gatlingexecutor.ContextStatistics;
import io.github.gatlingexecutor.ExecutorStatistics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.jetbrains.lincheck.Lincheck;
import org.jetbrains.lincheck.LincheckAssertionError;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Model checking ({@link Lincheck#runConcurrentTest(int, Runnable)}) of the hand-over between a partition's
 * {@link Router}, the key's {@link Slot} and its lane, the polling thread's watch of a long call, the sweeper and
 * revocation, on the real classes and without a broker.
 *
 * <p>No executor thread exists: {@link ModelExecutor} only queues what it is given (tasks, router runs, timer actions
 * with their delay ignored, and {@link ModelLane}s, serial and coalescing like the executor's coalescing lanes), and
 * the test's own threads take turns running that queue as workers, so every step of the protocol runs on a thread the
 * model checker schedules. After the threads end, the main thread runs what is left, then checks: per key at most
 * one record running at a time; a partition's records of one key in offset order; every record run once (a revoked
 * partition: at most once); every claim given back (the slot can be retired); the committed prefix never passing a
 * record whose handler has not returned, both while the threads run and at the end.
 *
 * <p>Not covered here: the executor itself (its lanes are model-checked in the core module), the polling loop and the
 * consumer, back-pressure, {@link Ordering#KEY_LATEST} and {@link Ordering#PARTITION}, the slow-handler switch of the
 * router (it depends on elapsed time), a record's retry budget running out, and an executor that refuses tasks.
 *
 * <p>{@link #sharedKeyScenarioFindsALaneThatStopsAtAnEmptyQueue} runs the same scenario with the lane's run replaced by
 * a copy that gives up when its queue looks empty, without the re-check of the claim count, and asserts that the model
 * checker reports it; that failure was seen, as a record claimed by one router and linked after the lane looked.
 */
class LincheckRoutingTest {

    /**
     * Per scenario in the default build, whose time follows a scenario's invocations (the first scenario: 45 s at 100,
     * 103 s at 300, on a loaded machine); {@link #deepModelCheckOfTheRouting} runs each with more under -Pstress. 50,
     * not 100: the default build's time on a slow shared host (docs/testing.md, "Default budgets").
     */
    private static final int INVOCATIONS = Integer.getInteger("lincheck.invocations", 50);
    private static final int BROKEN_INVOCATIONS = Integer.getInteger("lincheck.brokenInvocations", 3_000);

    private static final String TOPIC = "t";
    private static final TopicPartition TP0 = new TopicPartition(TOPIC, 0);
    private static final TopicPartition TP1 = new TopicPartition(TOPIC, 1);

    private static final VarHandle SLOT_HEAD;
    private static final VarHandle SLOT_CLAIMS;
    private static final VarHandle IN_FLIGHT_HEAD;

    static {
        try {
            MethodHandles.Lookup slot = MethodHandles.privateLookupIn(Slot.class, MethodHandles.lookup());
            SLOT_HEAD = slot.findVarHandle(Slot.class, "head", Work.class);
            SLOT_CLAIMS = slot.findVarHandle(Slot.class, "claims", int.class);
            IN_FLIGHT_HEAD = MethodHandles.privateLookupIn(PartitionState.class, MethodHandles.lookup())
                    .findVarHandle(PartitionState.class, "inFlightHead", Work.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        // Class initialisation (the runner's logger among it) outside the model checker's runs.
        new Model(Set.of(), false).runner.backoff(1);
    }

    static ConsumerRecord<String, String> record(int partition, long offset, String key) {
        return new ConsumerRecord<>(TOPIC, partition, offset, key, partition + "@" + offset);
    }

    static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    /**
     * Runs the actors on new threads (all created before any starts), waits for all, and throws on the scenario's
     * thread the first throwable an actor ended with: Lincheck reports what the scenario's own thread throws, not what
     * dies with an actor's thread, which would otherwise pass unseen.
     */
    static void runAll(Runnable... actors) {
        Thread[] threads = new Thread[actors.length];
        Throwable[] failure = new Throwable[1];
        for (int i = 0; i < actors.length; i++) {
            Runnable actor = actors[i];
            threads[i] = new Thread(() -> {
                try {
                    actor.run();
                } catch (Throwable t) {
                    synchronized (failure) {
                        if (failure[0] == null) {
                            failure[0] = t;
                        }
                    }
                }
            });
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
        synchronized (failure) {
            if (failure[0] != null) {
                throw new AssertionError("an actor failed: " + failure[0], failure[0]);
            }
        }
    }

    // ------------------------------------------------------------------------------------------- the model's world

    /**
     * An executor that runs nothing by itself: {@link #work()} is a worker's loop, called by the test's threads. Timer
     * actions are queued at once (unless {@link #timersHeld}): a retry may then come as early as the model checker
     * likes, which only widens what is explored.
     */
    static final class ModelExecutor extends AbstractExecutorService implements ContextExecutor {
        final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
        final Map<Object, ModelLane> lanes = new ConcurrentHashMap<>();
        /** Set before the threads start: the lanes run {@link #runStoppingAtEmptyQueue} instead of the slot's run. */
        boolean brokenLane;
        /**
         * Set before use: timer actions wait in {@link #timers}, never due, so that {@link #work()} runs only what was
         * handed over for now (a test of what must not wait for a timer).
         */
        boolean timersHeld;
        final ConcurrentLinkedQueue<Runnable> timers = new ConcurrentLinkedQueue<>();

        void work() {
            for (Runnable task; (task = queue.poll()) != null; ) {
                task.run();
            }
        }

        @Override
        public void execute(Runnable command) {
            queue.offer(command);
        }

        @Override
        public Executor coalescing(Object context) {
            return lanes.computeIfAbsent(context, c -> new ModelLane(this));
        }

        @Override
        public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            (timersHeld ? timers : queue).offer(command);
            return null; // the runner ignores it
        }

        @Override
        public Executor sequential(Object context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay,
                                                         TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public String name() {
            return "model";
        }

        @Override
        public ExecutorStatistics statistics() {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<ContextStatistics> contextStatistics() {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<ContextStatistics> busiestContexts(int k) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean offer(Runnable task) {
            return queue.offer(task);
        }

        @Override
        public void close() {
        }

        @Override
        public void shutdown() {
        }

        @Override
        public List<Runnable> shutdownNow() {
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return false;
        }

        @Override
        public boolean isTerminated() {
            return false;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }
    }

    /**
     * What the slot relies on from its coalescing lane: runs one at a time, a submission while it runs is a run
     * after it, and submissions that wait together are one run (of the newest task).
     */
    static final class ModelLane implements Executor, Runnable {
        private final ModelExecutor executor;
        private Runnable pending;
        private boolean queued;
        private boolean running;

        ModelLane(ModelExecutor executor) {
            this.executor = executor;
        }

        @Override
        public synchronized void execute(Runnable task) {
            pending = task;
            if (!queued && !running) {
                queued = true;
                executor.queue.offer(this);
            }
        }

        @Override
        @SuppressWarnings("unchecked")
        public void run() {
            Runnable task;
            synchronized (this) {
                queued = false;
                running = true;
                task = pending;
                pending = null;
            }
            if (executor.brokenLane && task instanceof Slot) {
                runStoppingAtEmptyQueue((Slot<String, String>) task, this);
            } else {
                task.run();
            }
            synchronized (this) {
                running = false;
                if (pending != null) {
                    queued = true;
                    executor.queue.offer(this);
                }
            }
        }
    }

    /**
     * The broken lane: {@link Slot#run()} for a key with no failing record, through the slot's own fields, but a run
     * that finds the queue empty simply ends, as if an empty queue meant nothing more to do. A record claimed and not
     * linked yet is then left to nobody: its router did not own the key, so it does not submit the lane.
     */
    static void runStoppingAtEmptyQueue(Slot<String, String> slot, Executor lane) {
        for (int n = 0; n < Slot.BATCH; n++) {
            @SuppressWarnings("unchecked")
            Work<String, String> head = (Work<String, String>) SLOT_HEAD.get(slot);
            Work<String, String> w = head.nextAcquire();
            if (w == null) {
                return; // the bug: no look at the claim count
            }
            SLOT_HEAD.set(slot, w);
            w.runner.attempt(w);
            if ((int) SLOT_CLAIMS.getAndAdd(slot, -1) - 1 == 0) {
                return;
            }
        }
        lane.execute(slot);
    }

    /** One run of a scenario: the executor, the topic's slots, the handler and what it saw. */
    static final class Model {
        final ModelExecutor executor = new ModelExecutor();
        final ConcurrentHashMap<Object, Slot<String, String>> keys = new ConcurrentHashMap<>();
        final RecordRunner<String, String> runner;
        /** Records ("partition@offset") whose first try throws. */
        final Set<String> failFirst;
        final Set<String> failed = ConcurrentHashMap.newKeySet();
        /** Per key: handlers running now. */
        final Map<String, AtomicInteger> inside = Map.of("k", new AtomicInteger(), "j", new AtomicInteger());
        /** Records whose handler returned, in the order they did. */
        final ConcurrentLinkedQueue<String> ran = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        final List<PartitionState> partitions = new ArrayList<>();
        final List<List<ConsumerRecord<String, String>>> records = new ArrayList<>();

        Model(Set<String> failFirst, boolean brokenLane) {
            this.failFirst = failFirst;
            this.executor.brokenLane = brokenLane;
            this.runner = new RecordRunner<>(this::handle, null, 3, Duration.ofMillis(1));
            this.runner.executor(executor);
        }

        void handle(ConsumerRecord<String, String> r) {
            String id = r.partition() + "@" + r.offset();
            AtomicInteger in = inside.get(r.key());
            if (in.incrementAndGet() != 1) {
                violations.add("two records of key " + r.key() + " at once, " + id + " among them");
            }
            if (failFirst.contains(id) && failed.add(id)) {
                in.decrementAndGet();
                throw new IllegalStateException("first try of " + id);
            }
            ran.add(id);
            in.decrementAndGet();
        }

        /** A partition with its router and its records, as the polling thread hands them over after a poll. */
        Router<String, String> partition(TopicPartition tp, List<ConsumerRecord<String, String>> list) {
            // Compaction of the in-flight list at every advance, so that the model checks it against the router's
            // appends too.
            PartitionState ps = new PartitionState(tp, Thread.currentThread(), 1);
            Router<String, String> router = new Router<>(ps, runner, executor, Ordering.KEY, keys);
            ps.router = router;
            long next = list.get(list.size() - 1).offset() + 1;
            ps.dispatched = list.size();
            ps.sentUpTo = next;
            ps.nextOffset = next;
            partitions.add(ps);
            records.add(list);
            router.offer(list);
            check(router.schedule(), "the model executor takes every run");
            return router;
        }

        Slot<String, String> slot(String key) {
            Slot<String, String> s = new Slot<>(key, runner, executor.coalescing(LaneKey.of(TOPIC, key)), false);
            keys.put(key, s);
            return s;
        }

        /**
         * Polling thread: the commit that {@code ps} allows now must not pass a record whose handler has not returned.
         */
        void checkCommit(int partition) {
            PartitionState ps = partitions.get(partition);
            long upTo = ps.advance();
            for (ConsumerRecord<String, String> r : records.get(partition)) {
                if (r.offset() < upTo && !ran.contains(partition + "@" + r.offset())) {
                    violations.add("commit up to " + upTo + " passes " + partition + "@" + r.offset()
                            + " which has not run; ran " + ran);
                }
            }
        }

        /** After the threads: run what is left, then check the whole history. */
        void finish(Set<Integer> revoked) {
            executor.work();
            check(violations.isEmpty(), violations + ", ran " + ran);
            List<String> order = new ArrayList<>(ran);
            check(order.size() == Set.copyOf(order).size(), "a record ran twice: " + order);
            for (int p = 0; p < partitions.size(); p++) {
                long last = -1;
                long lastJ = -1;
                for (String id : order) {
                    if (!id.startsWith(p + "@")) {
                        continue;
                    }
                    long offset = Long.parseLong(id.substring(id.indexOf('@') + 1));
                    String key = records.get(p).get((int) offset).key();
                    if (key.equals("k")) {
                        check(offset > last, "key k of partition " + p + " out of offset order: " + order);
                        last = offset;
                    } else {
                        check(offset > lastJ, "key j of partition " + p + " out of offset order: " + order);
                        lastJ = offset;
                    }
                }
                PartitionState ps = partitions.get(p);
                long upTo = ps.advance();
                checkCommit(p);
                check(violations.isEmpty(), violations.toString());
                if (!revoked.contains(p)) {
                    for (ConsumerRecord<String, String> r : records.get(p)) {
                        check(order.contains(p + "@" + r.offset()), p + "@" + r.offset() + " never ran: " + order);
                    }
                    long end = ps.sentUpTo;
                    check(upTo == end && ps.quiet(), "partition " + p + " commits up to " + upTo + " of " + end);
                    check(ps.pending() == 0, "partition " + p + " counts " + ps.pending() + " pending");
                }
            }
            for (Slot<String, String> s : keys.values()) {
                check(s.retire(), "slot of " + s.key + " still claimed: " + SLOT_CLAIMS.getVolatile(s));
            }
            check(executor.queue.isEmpty(), "tasks left: " + executor.queue);
        }
    }

    // ----------------------------------------------------------------------------------- 1. two routers, one key

    /**
     * Two partitions of one topic each route their records of key k (p0: k@0, k@1; p1: k@0) on their own run, on two
     * workers, so that each router may run a record on the spot, queue it behind the other's, or hand the key to the
     * lane. With {@code failFirst}, p0's first record fails once: it holds the key through the slot's retry (on the
     * spot or in the lane). With {@code sweep}, the polling thread retires the key's slot meanwhile if nobody holds
     * it, and removes it as the sweeper does: a router that meets it retired makes a new one. With {@code revoke}, p0
     * is revoked meanwhile: its records not yet started are dropped, and they still give their claims back; the commit
     * the polling thread takes right after setting the flag (as the revocation and the close do) must not pass them,
     * since their next owner starts from it. Otherwise the polling thread checks the commit of p0 while it all runs.
     */
    static Runnable sharedKey(boolean failFirst, boolean sweep, boolean revoke, boolean brokenLane) {
        return sharedKey(failFirst, sweep, revoke, brokenLane, false);
    }

    /** {@code probeReplacement}: fail once a router has replaced the retired slot, to show that path is explored. */
    static Runnable sharedKey(boolean failFirst, boolean sweep, boolean revoke, boolean brokenLane,
                              boolean probeReplacement) {
        return () -> {
            Model m = new Model(failFirst ? Set.of("0@0") : Set.of(), brokenLane);
            Slot<String, String> first = m.slot("k");
            m.partition(TP0, List.of(record(0, 0, "k"), record(0, 1, "k")));
            m.partition(TP1, List.of(record(1, 0, "k")));
            runAll(m.executor::work, m.executor::work, () -> {
                if (sweep && first.retire()) {
                    m.keys.remove("k", first);
                }
                if (revoke) {
                    m.partitions.get(0).revoked = true;
                }
                m.checkCommit(0);
            });
            m.finish(revoke ? Set.of(0) : Set.of());
            if (probeReplacement && m.keys.get("k") != first) {
                throw new AssertionError("reached: a router replaced the retired slot");
            }
        };
    }

    @Test
    @Timeout(300)
    void twoRoutersShareAKey() {
        Lincheck.runConcurrentTest(INVOCATIONS, sharedKey(false, false, false, false));
    }

    @Test
    @Timeout(300)
    void twoRoutersShareAKeyWhoseFirstRecordFailsOnce() {
        Lincheck.runConcurrentTest(INVOCATIONS, sharedKey(true, false, false, false));
    }

    @Test
    @Timeout(300)
    void sweeperRetiresTheSlotWhileRoutersClaimIt() {
        Lincheck.runConcurrentTest(INVOCATIONS, sharedKey(true, true, false, false));
        // Lincheck restores static state after each run, so a counter cannot tell whether the replacement was ever
        // explored; a probe that fails there can.
        assertFinds(sharedKey(true, true, false, false, true), "reached: a router replaced");
    }

    @Test
    @Timeout(300)
    void revocationWhileRoutersShareAKey() {
        Lincheck.runConcurrentTest(INVOCATIONS, sharedKey(true, false, true, false));
    }

    /** Stress-tagged: Lincheck needs a thousand invocations or more to reach it (54 s of the default build's 3 min). */
    @Test
    @Tag("stress")
    @Timeout(300)
    void sharedKeyScenarioFindsALaneThatStopsAtAnEmptyQueue() {
        Assumptions.assumeTrue(Runtime.version().feature() < 25,
                "Lincheck 3.7 misses some interleavings on JDK " + Runtime.version().feature());
        assertFinds(sharedKey(false, false, false, true), "never ran");
    }

    // --------------------------------------------------------------------------- 2. a long call loses the routing

    /**
     * One partition routes k@0, k@1, j@2 on a worker while the polling thread watches the router twice, the second
     * time as if {@link Router#DETACH_NANOS} had passed: a call on the spot seen at both watches loses the routing,
     * the polling thread tracks its record and starts a new run on the other worker, which carries on with k@1 (held
     * back by k@0's claim) and j@2 (free) while k@0's handler is still running. With {@code failFirst} k@0 fails once,
     * so a detached call may also end in the slot's retry.
     */
    static Runnable longCall(boolean failFirst) {
        return longCall(failFirst, false);
    }

    /** {@code probeDetach}: fail once the polling thread has taken the routing, to show that path is explored. */
    static Runnable longCall(boolean failFirst, boolean probeDetach) {
        return () -> {
            Model m = new Model(failFirst ? Set.of("0@0") : Set.of(), false);
            m.slot("k");
            m.slot("j");
            Router<String, String> router = m.partition(TP0,
                    List.of(record(0, 0, "k"), record(0, 1, "k"), record(0, 2, "j")));
            PartitionState ps = m.partitions.get(0);
            boolean[] detached = new boolean[1];
            runAll(m.executor::work, m.executor::work, () -> {
                long now = System.nanoTime();
                router.watch(now);
                router.watch(now + Router.DETACH_NANOS);
                // k@0 runs on the spot (the first record, its key free): without a failure it is tracked only once
                // its call lost the routing.
                detached[0] = !failFirst && tracksFirstRecord(ps);
                m.checkCommit(0);
            });
            m.finish(Set.of());
            // On the main thread: Lincheck reports what the scenario's own thread throws, not what an actor throws.
            if (probeDetach && detached[0]) {
                throw new AssertionError("reached: the polling thread took the routing from k@0's call");
            }
        };
    }

    /** Polling thread, before its first {@code advance()}: whether offset 0 is in the in-flight list. */
    private static boolean tracksFirstRecord(PartitionState ps) {
        for (Work<?, ?> w = ((Work<?, ?>) IN_FLIGHT_HEAD.get(ps)).nextInFlightAcquire(); w != null;
             w = w.nextInFlightAcquire()) {
            if (w.offset == 0) {
                return true;
            }
        }
        return false;
    }

    @Test
    @Timeout(300)
    void longCallLosesTheRouting() {
        Lincheck.runConcurrentTest(INVOCATIONS, longCall(false));
        assertFinds(longCall(false, true), "reached: the polling thread took");
    }

    @Test
    @Timeout(300)
    void longFailingCallLosesTheRouting() {
        Lincheck.runConcurrentTest(INVOCATIONS, longCall(true));
    }

    // ---------------------------------------------------------- 3. the in-flight list compacted while it is appended

    /**
     * The router tracks three records of one partition and the first two complete meanwhile (the third stays
     * incomplete, as a record that keeps failing does), while the polling thread advances the commit twice with a
     * compaction threshold of one record, so each advance may unlink done entries behind the oldest incomplete one.
     * No commit, then or after, may pass the incomplete record. With {@code unlinkLast}, the polling thread advances
     * with a copy of {@link PartitionState#advance()} whose compaction also unlinks the list's last entry, whose
     * {@code next} the router may be about to write: the third record is then lost from the list, and the final
     * commit passes it.
     */
    static Runnable compaction(boolean unlinkLast) {
        return () -> {
            PartitionState ps = new PartitionState(TP0, Thread.currentThread(), 1);
            List<Work<String, String>> records = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Work<String, String> w = new Work<>(ps, null);
                w.offset = i;
                w.seq = i;
                records.add(w);
            }
            ps.dispatched = 3;
            ps.sentUpTo = 3;
            ps.nextOffset = 3;
            long[] seen = new long[2];
            runAll(() -> {
                for (int i = 0; i < 3; i++) {
                    ps.track(records.get(i));
                    ps.routed(i + 1, i + 1);
                    if (i == 1) {
                        records.get(1).done = true; // completions, in the order workers may finish them
                        records.get(0).done = true;
                    }
                }
            }, () -> {
                for (int i = 0; i < 2; i++) {
                    seen[i] = unlinkLast ? advanceUnlinkingTheLast(ps) : ps.advance();
                }
            });
            for (long commit : seen) {
                check(commit <= 2, "a commit up to " + commit + " passed the incomplete record at offset 2");
            }
            long end = ps.advance();
            check(end == 2, "after the threads, the commit goes up to " + end + ", past the incomplete record at 2");
        };
    }

    /** {@link PartitionState#advance()}, compacting at every call, with the last entry unlinked too when done. */
    private static long advanceUnlinkingTheLast(PartitionState ps) {
        long routed = ps.routedUpTo;
        Work<?, ?> head = (Work<?, ?>) IN_FLIGHT_HEAD.get(ps);
        Work<?, ?> h;
        while ((h = head.nextInFlightAcquire()) != null && h.done) {
            head = h;
        }
        IN_FLIGHT_HEAD.set(ps, head);
        if (h != null) {
            Work<?, ?> p = h;
            Work<?, ?> n;
            while ((n = p.nextInFlightAcquire()) != null) {
                if (n.done) {
                    p.setNextInFlightRelease(n.nextInFlightAcquire());
                } else {
                    p = n;
                }
            }
        }
        long bound = routed == ps.sentUpTo ? ps.nextOffset : routed;
        return h != null ? Math.min(h.offset, bound) : bound;
    }

    @Test
    @Timeout(300)
    void theInFlightListIsCompactedWhileTheRouterAppends() {
        Lincheck.runConcurrentTest(INVOCATIONS, compaction(false));
    }

    @Test
    @Timeout(300)
    void compactionThatUnlinksTheLastEntryIsFound() {
        assertFinds(compaction(true), "past the incomplete record at 2");
    }

    /** Stress-tagged: every scenario above that must pass, with a larger invocation budget. */
    @Test
    @Tag("stress")
    void deepModelCheckOfTheRouting() {
        int n = Integer.getInteger("lincheck.deepInvocations", 1_000);
        Lincheck.runConcurrentTest(n, sharedKey(false, false, false, false));
        Lincheck.runConcurrentTest(n, sharedKey(true, false, false, false));
        Lincheck.runConcurrentTest(n, sharedKey(true, true, false, false));
        Lincheck.runConcurrentTest(n, sharedKey(true, false, true, false));
        Lincheck.runConcurrentTest(n, longCall(false));
        Lincheck.runConcurrentTest(n, longCall(true));
        Lincheck.runConcurrentTest(n, compaction(false));
    }

    // ------------------------------------------------------------------------------------------------------------

    /**
     * Passes if Lincheck reports a failure of {@code scenario} whose report contains {@code expected} (the text of
     * the check the scenario is built to fail, or of its probe): Lincheck 3.7 reports every failure, a hang or an
     * exception of another kind included, as a {@link LincheckAssertionError}, so any failure would otherwise pass.
     * Lincheck 3.7 sometimes finds one and then throws while rendering its trace (inside that error's constructor):
     * a failure found too, of a kind then unknown, and only that passes besides.
     */
    static void assertFinds(Runnable scenario, String expected) {
        try {
            Lincheck.runConcurrentTest(BROKEN_INVOCATIONS, scenario);
        } catch (LincheckAssertionError found) {
            String message = String.valueOf(found.getMessage()).strip();
            if (!message.contains(expected)) {
                fail("Lincheck found a failure, but not the expected one (\"" + expected + "\"):\n" + message, found);
            }
            System.out.println("Lincheck found, as expected: "
                    + message.substring(0, Math.min(message.length(), 300)).replace('\n', ' '));
            return;
        } catch (RuntimeException | Error other) {
            for (StackTraceElement e : other.getStackTrace()) {
                if (e.getClassName().equals(LincheckAssertionError.class.getName())
                        && e.getMethodName().equals("<init>")) {
                    System.out.println("Lincheck found a failure, as expected, and could not render its trace: "
                            + other);
                    return;
                }
            }
            throw other;
        }
        fail("Lincheck found no failure in " + BROKEN_INVOCATIONS + " invocations");
    }
}
