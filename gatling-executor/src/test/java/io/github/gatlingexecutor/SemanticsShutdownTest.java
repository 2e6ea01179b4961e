package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.jdi.ThreadReference;
import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.Seq;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** SPEC semantics 10: shutdown, shutdownNow accounting, close. */
class SemanticsShutdownTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    /** What one producer submitted: the object that identifies each task, its kind, its lane and its order. */
    static final class Submission {
        static final int SEQUENTIAL = 0;
        static final int COALESCING = 1;
        static final int PLAIN = 2;

        final int id;
        final int kind;
        final Object handle; // the caller's Runnable (execute, lanes) or the Future (submit)
        final Object lane;   // context for sequential/coalescing, null for plain
        final int producer;

        Submission(int id, int kind, Object handle, Object lane, int producer) {
            this.id = id;
            this.kind = kind;
            this.handle = handle;
            this.lane = lane;
            this.producer = producer;
        }
    }

    /**
     * Producers submit a mix of every kind through every path until they are rejected (or reach their quota); the
     * scenario stops the executor with {@code shutdownNow} (or {@code shutdown}) part way. Checks that every accepted
     * task ran, was returned or was coalesced away, exactly one of them, and that the returned items are the
     * caller's own objects.
     */
    static void runShutdownAccounting(GatlingExecutor e, boolean now, ExecutorValidation cleanup) throws Exception {
        int producers = 3;
        int quota = 30_000;
        int maxIds = producers * quota;
        AtomicIntegerArray ran = new AtomicIntegerArray(maxIds);
        AtomicIntegerArray startedAfterReturn = new AtomicIntegerArray(maxIds);
        Submission[] accepted = new Submission[maxIds];
        AtomicInteger acceptedCount = new AtomicInteger();
        AtomicBoolean returnedYet = new AtomicBoolean();
        CyclicBarrier start = new CyclicBarrier(producers + 1);
        CountDownLatch gate = cleanup.gate();
        List<Thread> threads = new ArrayList<>();
        AtomicInteger producerFailures = new AtomicInteger();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < quota; i++) {
                        int id = producer * quota + i;
                        Runnable body = () -> {
                            boolean late = returnedYet.get(); // read first: true means it started after
                            ran.incrementAndGet(id);
                            if (late) {
                                startedAfterReturn.incrementAndGet(id);
                            }
                            if (id % 40_000 == 0) {
                                // A few lanes hold work when the executor stops: three tasks (a sequential one, a
                                // coalescing one, one through a lane handle), fewer than the smallest maxThreads of
                                // the configurations, so some worker always moves on.
                                blockQuietly(gate);
                            } else {
                                TestSupport.spin(2);
                            }
                        };
                        Submission s;
                        int sequentialContext = producer * 100 + (i % 37);
                        String coalescingContext = "c-" + producer + "-" + (i % 11);
                        try {
                            switch (i % 7) {
                                case 0: {
                                    Runnable r = new Seq(sequentialContext, body);
                                    e.execute(r);
                                    s = new Submission(id, Submission.SEQUENTIAL, r, sequentialContext, producer);
                                    break;
                                }
                                case 1: {
                                    Runnable r = body::run;
                                    e.sequential(sequentialContext).execute(r);
                                    s = new Submission(id, Submission.SEQUENTIAL, r, sequentialContext, producer);
                                    break;
                                }
                                case 2: {
                                    Future<?> f = e.submit(new Seq(sequentialContext, body));
                                    s = new Submission(id, Submission.SEQUENTIAL, f, sequentialContext, producer);
                                    break;
                                }
                                case 3: {
                                    Runnable r = new Coal(coalescingContext, body);
                                    e.execute(r);
                                    s = new Submission(id, Submission.COALESCING, r, coalescingContext, producer);
                                    break;
                                }
                                case 4: {
                                    Future<?> f = e.submit(new Coal(coalescingContext, body));
                                    s = new Submission(id, Submission.COALESCING, f, coalescingContext, producer);
                                    break;
                                }
                                case 5: {
                                    Runnable r = body::run;
                                    e.execute(r);
                                    s = new Submission(id, Submission.PLAIN, r, null, producer);
                                    break;
                                }
                                default: {
                                    Future<?> f = e.submit(body);
                                    s = new Submission(id, Submission.PLAIN, f, null, producer);
                                    break;
                                }
                            }
                        } catch (RejectedExecutionException rejected) {
                            return;
                        }
                        accepted[id] = s;
                        acceptedCount.incrementAndGet();
                    }
                } catch (Throwable ex) {
                    producerFailures.incrementAndGet();
                    ex.printStackTrace();
                }
            });
            threads.add(t);
            t.start();
        }
        start.await();
        waitUntil("some progress before stopping", () -> e.statistics().executed() >= 5_000,
                () -> TestSupport.describe(e));
        List<Runnable> returned = List.of();
        if (now) {
            returned = e.shutdownNow();
            returnedYet.set(true);
        } else {
            e.shutdown();
            gate.countDown();
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
            assertFalse(t.isAlive(), "a producer was not rejected after shutdown");
        }
        assertEquals(0, producerFailures.get());
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS),
                "no termination: " + TestSupport.describe(e));

        // map every returned object back to a submission
        Map<Object, Submission> byHandle = new IdentityHashMap<>();
        for (Submission s : accepted) {
            if (s != null) {
                byHandle.put(s.handle, s);
            }
        }
        boolean[] wasReturned = new boolean[maxIds];
        for (Runnable r : returned) {
            Submission s = byHandle.get(r);
            if (s == null) {
                fail("shutdownNow returned an object the caller never submitted: " + r + " ("
                        + r.getClass().getName() + ")");
            }
            assertFalse(wasReturned[s.id], "task " + s.id + " returned twice");
            wasReturned[s.id] = true;
        }
        int ranCount = 0;
        int returnedCount = 0;
        int vanished = 0;
        int late = 0;
        Map<Object, Integer> lastOfCoalescingLane = new java.util.HashMap<>();
        Queue<String> problems = new ConcurrentLinkedQueue<>();
        for (Submission s : accepted) {
            if (s == null) {
                continue;
            }
            int runs = ran.get(s.id);
            if (runs > 1) {
                problems.add("task " + s.id + " ran " + runs + " times");
            }
            if (runs == 1 && wasReturned[s.id]) {
                problems.add("task " + s.id + " both ran and was returned");
            }
            if (startedAfterReturn.get(s.id) > 0) {
                late++;
            }
            if (runs == 1) {
                ranCount++;
            } else if (wasReturned[s.id]) {
                returnedCount++;
            } else {
                vanished++;
                if (s.kind != Submission.COALESCING) {
                    problems.add("task " + s.id + " of kind " + s.kind + " neither ran nor was returned");
                }
            }
            if (s.kind == Submission.COALESCING) {
                lastOfCoalescingLane.merge(s.lane, s.id, Math::max);
            }
            if (s.handle instanceof Future && runs == 1) {
                Future<?> f = (Future<?>) s.handle;
                waitUntil("a future whose task ran to complete", f::isDone);
                if (!now) {
                    assertFalse(f.isCancelled(), "the future of a task that ran was cancelled");
                }
            }
            if (s.handle instanceof Future && runs == 0 && !wasReturned[s.id]) {
                assertTrue(((Future<?>) s.handle).isCancelled(), "a coalesced-away future was not cancelled");
            }
        }
        for (Map.Entry<Object, Integer> last : lastOfCoalescingLane.entrySet()) {
            int id = last.getValue();
            if (ran.get(id) == 0 && !wasReturned[id]) {
                problems.add("the last task " + id + " of coalescing lane " + last.getKey() + " vanished");
            }
        }
        // per producer and sequential lane: what ran is a prefix, what was returned the rest
        Map<String, Boolean> sawUnrun = new java.util.HashMap<>();
        for (Submission s : accepted) {
            if (s == null || s.kind != Submission.SEQUENTIAL) {
                continue;
            }
            String key = s.producer + "/" + s.lane;
            boolean didRun = ran.get(s.id) == 1;
            if (!didRun) {
                sawUnrun.put(key, true);
            } else if (sawUnrun.getOrDefault(key, false)) {
                problems.add("task " + s.id + " of lane " + s.lane + " ran after an earlier one of that lane did not");
            }
        }
        assertTrue(problems.isEmpty(), problems.size() + " problems, first: "
                + problems.stream().limit(10).toList());
        ExecutorStatistics stats = e.statistics();
        // a worker may already hold the task it is about to run when shutdownNow is called (as in the JDK), but a
        // worker's queued batch must not keep running afterwards
        assertTrue(late <= stats.peakThreads(), late + " tasks started after shutdownNow returned: " + stats);
        assertEquals(acceptedCount.get(), ranCount + returnedCount + vanished);
        assertEquals(acceptedCount.get(), stats.submitted(), "submitted() differs from accepted tasks: " + stats);
        assertEquals(ranCount, stats.executed(), "executed() differs from tasks that ran: " + stats);
        assertEquals(returnedCount, stats.returned(), "returned() differs from shutdownNow's list: " + stats);
        assertEquals(vanished, stats.coalesced(), "accepted = ran + returned + coalesced broken: " + stats);
        assertEquals(returned.size(), returnedCount);
        if (!now) {
            assertEquals(0, returnedCount);
        }
        assertTrue(e.isTerminated());
        assertEquals(0, stats.liveContexts(), "lanes left after termination: " + e.contextStatistics() + " " + stats);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.github.gatlingexecutor.Configurations#builders")
    void shutdownNowAccountsForEveryAcceptedTask(String label, Supplier<GatlingExecutor.Builder> builder)
            throws Exception {
        runShutdownAccounting(cleanup.track(builder.get().build()), true, cleanup);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.github.gatlingexecutor.Configurations#builders")
    void shutdownRunsEveryAcceptedTask(String label, Supplier<GatlingExecutor.Builder> builder) throws Exception {
        runShutdownAccounting(cleanup.track(builder.get().build()), false, cleanup);
    }

    @RepeatedTest(50)
    @Tag("stress")
    void shutdownNowAccountingRepeated() throws Exception {
        runShutdownAccounting(cleanup.track(gatling("stop").coreThreads(3).batchSize(2)
                .minTurn(Duration.ZERO).build()), true, cleanup);
    }

    @RepeatedTest(50)
    @Tag("stress")
    void shutdownAccountingRepeated() throws Exception {
        runShutdownAccounting(cleanup.track(gatling("stop").coreThreads(3).batchSize(2)
                .minTurn(Duration.ZERO).build()), false, cleanup);
    }

    @Test
    void lanesRejectAfterShutdown() {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        Executor before = e.sequential("x");
        Executor coalescingBefore = e.coalescing("x");
        e.shutdown();
        assertThrows(RejectedExecutionException.class, () -> before.execute(() -> { }));
        assertThrows(RejectedExecutionException.class, () -> coalescingBefore.execute(() -> { }));
        assertThrows(RejectedExecutionException.class, () -> e.sequential("y").execute(() -> { }));
        assertThrows(RejectedExecutionException.class, () -> e.coalescing("y").execute(() -> { }));
        assertThrows(RejectedExecutionException.class, () -> e.execute(new Coal("y", () -> { })));
        assertThrows(RejectedExecutionException.class, () -> e.execute(new Seq("z", () -> { })));
        assertEquals(0, e.statistics().submitted());
        // a rejected submission must not leave a lane behind
        assertEquals(0, e.statistics().liveContexts(), "rejected submissions left lanes: " + e.contextStatistics());
    }

    /**
     * A submit to a context with no lane maps a new lane before it reads the state (see Engine), and a refused one
     * unmaps it again; on a terminated executor, {@code liveContexts()} read in between counted that lane. Under load,
     * with producers racing the end, a terminated executor read {@code liveContexts() == 1} and then 0 again (4 rounds
     * of 200), with nothing queued, nothing running and no thread. A terminated executor has no live context, as a
     * terminated {@code ThreadPoolExecutor} has no pool thread. Here the read is made from the context's
     * {@code hashCode}, which the refused submit calls when it maps the lane and when it unmaps it.
     */
    @Test
    void aSubmitRefusedAfterTerminationShowsNoLiveContext() {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        e.execute(new Seq("ran", () -> { }));
        e.close();
        assertTrue(e.isTerminated());
        AtomicLong mostSeen = new AtomicLong();
        Object context = new Object() {
            @Override
            public int hashCode() {
                mostSeen.accumulateAndGet(e.statistics().liveContexts(), Math::max);
                return 7;
            }
        };
        assertThrows(RejectedExecutionException.class, () -> e.sequential(context).execute(() -> { }));
        assertThrows(RejectedExecutionException.class, () -> e.coalescing(context).execute(() -> { }));
        assertEquals(0, mostSeen.get(), "liveContexts() of a terminated executor, read while a refused submit held"
                + " the lane it made");
        assertEquals(0, e.statistics().liveContexts(), e.statistics().toString());
    }

    /**
     * As above, but with lanes still at work when the shutdown comes: each runs a task and has one waiting. A submit
     * there needs no new lane, and a coalescing one needs no room either (on the bounded path it replaces the waiting
     * task with one CAS, before any limit is looked at), so only the state can refuse it. Accepted, it would run a
     * task given after the shutdown and, worse, cancel the future of the waiting one, which was accepted before it
     * and must run. Each configuration, the bounded one included, must refuse every way in.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.github.gatlingexecutor.Configurations#builders")
    void aLaneBusyAtShutdownRefusesNewTasksAndKeepsTheOneWaiting(String label,
                                                                  Supplier<GatlingExecutor.Builder> builder)
            throws Exception {
        GatlingExecutor e = cleanup.track(builder.get().build());
        CountDownLatch sequentialGate = cleanup.occupy(e.sequential("s"));
        CountDownLatch coalescingGate = cleanup.occupy(e.coalescing("c"));
        AtomicInteger waitingRan = new AtomicInteger();
        Future<?> waitingSequential = e.submit(new Seq("s", waitingRan::incrementAndGet));
        Future<?> waitingCoalescing = e.submit(new Coal("c", waitingRan::incrementAndGet));
        e.shutdown();

        AtomicInteger lateRan = new AtomicInteger();
        Runnable late = lateRan::incrementAndGet;
        assertThrows(RejectedExecutionException.class, () -> e.execute(new Seq("s", late)));
        assertThrows(RejectedExecutionException.class, () -> e.sequential("s").execute(late));
        assertThrows(RejectedExecutionException.class, () -> e.submit(new Seq("s", late)));
        assertThrows(RejectedExecutionException.class, () -> e.execute(new Coal("c", late)));
        assertThrows(RejectedExecutionException.class, () -> e.coalescing("c").execute(late));
        assertThrows(RejectedExecutionException.class, () -> e.submit(new Coal("c", late)));
        assertFalse(e.offer(new Coal("c", late)), "an offer after shutdown was accepted");
        assertFalse(waitingCoalescing.isCancelled(), "a submit after shutdown replaced the waiting coalescing task");

        sequentialGate.countDown();
        coalescingGate.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertNull(get(waitingSequential));
        assertNull(get(waitingCoalescing));
        assertEquals(2, waitingRan.get());
        assertEquals(0, lateRan.get(), "a task given after shutdown ran");
        ExecutorStatistics s = e.statistics();
        assertEquals(4, s.submitted(), s.toString());
        assertEquals(0, s.coalesced(), s.toString());
    }

    @Test
    void lanesDrainAfterShutdownIncludingTheLastCoalescingTask() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(2).build());
        CountDownLatch sequentialGate = cleanup.occupy(e.sequential("s"));
        CountDownLatch coalescingGate = cleanup.occupy(e.coalescing("c"));
        AtomicInteger sequentialRan = new AtomicInteger();
        AtomicInteger lastCoalescingRan = new AtomicInteger();
        for (int i = 0; i < 100; i++) {
            e.sequential("s").execute(sequentialRan::incrementAndGet);
            boolean last = i == 99;
            e.coalescing("c").execute(() -> {
                if (last) {
                    lastCoalescingRan.incrementAndGet();
                }
            });
        }
        Callable<String> delayedTask = new TestSupport.SeqCallable<>("s", () -> "delayed");
        ScheduledFuture<String> delayed = e.schedule(delayedTask, 200, TimeUnit.MILLISECONDS);
        e.shutdown();
        assertFalse(e.isTerminated());
        sequentialGate.countDown();
        coalescingGate.countDown();
        assertEquals("delayed", get(delayed));
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertEquals(100, sequentialRan.get());
        assertEquals(1, lastCoalescingRan.get());
    }

    @Test
    void shutdownNowReturnsSubmitFuturesWithTheirKind() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        CountDownLatch gate = cleanup.occupy(e.sequential("k"));
        Future<?> f = e.submit(new Seq("k", () -> { }));
        Future<?> c = e.submit(new Coal("kc", () -> { }));
        List<Runnable> returned = e.shutdownNow();
        assertTrue(returned.contains(f), returned.toString());
        Runnable r = returned.get(returned.indexOf(f));
        assertTrue(r instanceof SequentialRunnable, "a returned submit future lost its kind: " + r);
        assertEquals("k", ((SequentialRunnable) r).context());
        if (returned.contains(c)) { // the coalescing one may have run on another thread before shutdownNow
            assertTrue(c instanceof CoalescingRunnable, "a returned submit future lost its kind: " + c);
        }
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    /**
     * A periodic task's run that waits in a lane or the ready queue when {@code shutdown()} cancels the task is not
     * returned by a {@code shutdownNow()} that follows: its future is done and cancelled, which SPEC point 10 says no
     * returned future is, and {@code ScheduledThreadPoolExecutor} drops such runs at {@code shutdown()}. It was
     * returned (an outside audit). It counts as executed, as the turn that would have skipped it does.
     */
    @ParameterizedTest
    @ValueSource(strings = {"sequential", "coalescing", "plain"})
    void shutdownNowAfterShutdownReturnsNoPeriodicRunThatShutdownCancelled(String kind) throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        cleanup.occupy(kind.equals("coalescing") ? e.coalescing("k") : e.sequential("k"));
        Runnable body = () -> { };
        Runnable task = kind.equals("sequential") ? new Seq("k", body)
                : kind.equals("coalescing") ? new Coal("k", body) : body;
        ScheduledFuture<?> f = e.scheduleAtFixedRate(task, 0, 1, TimeUnit.HOURS);
        waitUntil("its first run to wait behind the running task", () -> e.statistics().queued() == 1);
        e.shutdown();
        assertTrue(f.isCancelled(), "shutdown() did not cancel the periodic task");
        List<Runnable> returned = e.shutdownNow();
        assertTrue(returned.isEmpty(), "returned " + returned);
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        ExecutorStatistics s = e.statistics();
        assertEquals(0, s.returned(), s.toString());
        assertEquals(s.submitted(), s.executed() + s.coalesced() + s.returned(), s.toString());
    }

    /**
     * {@code returned()} counts what {@code shutdownNow} hands back of the tasks that entered the pool; delayed and
     * periodic tasks not yet due are handed back too but never entered it, so they count neither there nor in
     * {@code submitted()} (see ExecutorStatistics#returned). Counted with them, the identity
     * {@code submitted = executed + coalesced + returned} still held, because a snapshot raises {@code submitted} to
     * what left the queue: only the exact figures show it.
     */
    @Test
    void shutdownNowCountsInReturnedOnlyTheTasksThatEnteredThePool() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        cleanup.occupy(e.sequential("k"));
        Future<?> queued = e.submit(new Seq("k", () -> { }));
        ScheduledFuture<?> delayed = e.schedule(() -> { }, 1, TimeUnit.HOURS);
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(() -> { }, 1, 1, TimeUnit.HOURS);
        List<Runnable> returned = e.shutdownNow();
        assertEquals(3, returned.size(), returned.toString());
        assertTrue(returned.containsAll(List.of(queued, delayed, periodic)), returned.toString());
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        ExecutorStatistics s = e.statistics();
        assertEquals(1, s.returned(), "only the queued task entered the pool: " + s);
        assertEquals(2, s.submitted(), "the blocker and the queued task: " + s);
        assertEquals(1, s.executed(), s.toString());
    }

    /**
     * {@code liveContexts()} read inside {@code shutdownNow} itself, before its drain has closed any lane: the caller's
     * code runs there, in {@code interrupt()} of a thread its factory made, on the shutdownNow's own thread. From STOP
     * on, a lane that shutdownNow has closed and unmapped is counted through the worker still running its task; until
     * it is closed, it is still mapped and counted there. A count that took every worker's lane, finished or not,
     * counted the running context twice in that window (3 for 2 contexts), and nowhere else: not before STOP (the
     * workers are not walked), nor after the drain (every lane is closed and unmapped by then).
     */
    @Test
    void liveContextsReadDuringShutdownNowCountsTheRunningContextOnce() throws Exception {
        AtomicReference<GatlingExecutor> executor = new AtomicReference<>();
        AtomicBoolean armed = new AtomicBoolean();
        AtomicLong seen = new AtomicLong(-1);
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).maxThreads(1).threadFactory(r -> {
            Thread t = TestSupport.isChecker(r) ? new Thread(r) : new Thread(r) {
                @Override
                public void interrupt() {
                    if (armed.compareAndSet(true, false)) { // shutdownNow's interrupt of the running worker
                        seen.set(executor.get().statistics().liveContexts());
                    }
                    super.interrupt();
                }
            };
            t.setDaemon(true);
            return t;
        }).build());
        executor.set(e);
        CountDownLatch gate = cleanup.gate();
        CountDownLatch running = new CountDownLatch(1);
        e.execute(new Seq("a", () -> {
            running.countDown();
            TestSupport.blockIgnoringInterrupts(gate); // outlives shutdownNow
        }));
        await(running, "the task of context a");
        Runnable queued = new Seq("b", () -> { });
        e.execute(queued);
        assertEquals(2, e.statistics().liveContexts(), e.contextStatistics().toString());
        armed.set(true);
        List<Runnable> returned = e.shutdownNow();
        assertEquals(List.of(queued), returned);
        assertEquals(2, seen.get(), "liveContexts() read in shutdownNow, before its drain, for a running and a"
                + " waiting context");
        assertEquals(1, e.statistics().liveContexts(), "after shutdownNow, with a's task still running: "
                + e.statistics());
        gate.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertEquals(0, e.statistics().liveContexts(), e.statistics().toString());
    }

    /**
     * A coalescing submit that replaced a periodic task's pending run puts the task back on the timer for its next
     * period; from {@code shutdownNow} on the task is the caller's, and the put-back that comes after shutdownNow's
     * first drain of the timer is taken by its last ({@code TaskTimer#drainAfterStop}), which shutdownNow waits for.
     * Between the replacing CAS and the put-back no caller's code runs, so only a debugger makes the order: it holds
     * the submitter at {@code ScheduledTask#skipRun} and shutdownNow where it has drained the timer once (it then waits
     * for periodic cancels, {@code TaskTimer#awaitPeriodicCancels}), whichever comes first, until the other is there
     * too (the child sees the replacement counted before the submitter reaches skipRun). Dropping what the last drain
     * found left the task, which never ran, neither returned nor done;
     * {@code aPeriodicTaskWhoseRunWasJustReplacedIsReturnedByShutdownNow} in DefectRegressionTest meets the window only
     * by chance.
     */
    @Test
    void aPeriodicTaskPutBackAfterShutdownNowsFirstDrainIsReturned() throws Exception {
        List<String> hits = new ArrayList<>();
        String out = DebuggedChild.run(PutBackAfterFirstDrainChild.class, List.of(
                DebuggedChild.Spot.entry("put back", ScheduledTask.class, "skipRun"),
                DebuggedChild.Spot.entry("drained once", TaskTimer.class, "awaitPeriodicCancels")),
                (spot, thread, held) -> {
                    hits.add(spot);
                    if (held.isEmpty()) {
                        return false; // the first of the two waits for the other
                    }
                    DebuggedChild.resumeAll(held); // the submitter's CAS made, the timer drained once: both go on
                    return true;
                });
        assertEquals(Set.of("put back", "drained once"), Set.copyOf(hits), out);
        assertEquals(2, hits.size(), hits + "\n" + out);
        assertTrue(out.contains(PutBackAfterFirstDrainChild.RETURNED), out);
    }

    /** The child JVM of {@link #aPeriodicTaskPutBackAfterShutdownNowsFirstDrainIsReturned}. */
    static final class PutBackAfterFirstDrainChild {
        static final String RETURNED = "child: returned, not done";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("put-back").coreThreads(1).maxThreads(1).build();
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(1);
            e.execute(() -> {
                holding.countDown();
                TestSupport.blockIgnoringInterrupts(release); // the only worker: the periodic run can only wait
            });
            await(holding, "the task holding the only worker");
            ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Coal("c", () -> { }), 0, 1, TimeUnit.HOURS);
            waitUntil("the periodic run pending in its lane", () -> {
                ContextStatistics c = TestSupport.lane(e, "c", true);
                return c != null && c.queued() == 1;
            });
            Thread replacer = new Thread(() -> e.execute(new Coal("c", () -> { })), "replacer");
            replacer.setDaemon(true);
            replacer.start();
            // Counted before the replacer reaches skipRun, whose put-back then waits for the first drain below.
            waitUntil("the run replaced", () -> e.statistics().coalesced() == 1);
            List<Runnable> returned = e.shutdownNow();
            boolean back = returned.contains(periodic);
            System.out.println(back && !periodic.isDone() ? RETURNED : "child: returned " + back + ", done "
                    + periodic.isDone() + ", cancelled " + periodic.isCancelled() + ": " + returned);
            release.countDown();
            System.out.println("child: terminated " + e.awaitTermination(10, TimeUnit.SECONDS));
            System.exit(0);
        }

        private PutBackAfterFirstDrainChild() {
        }
    }

    /**
     * A worker announces each take from a sequential lane (its word's TAKING bit) and then reads the state;
     * {@code shutdownNow} writes STOP, then waits for every take under way to end ({@code Worker#awaitNotTaking})
     * before it drains the lanes from what the workers' words say they took. A worker that read RUNNING and is
     * between that read and the publication of its take has not yet taken the task by any count the drain reads: only
     * that wait keeps the task from being both run and returned. No caller's code runs there, so the debugger holds
     * the worker at its second take ({@code laneHeadPerTask}: the first is the task it runs before) and the child's
     * main thread before {@code shutdownNow}, whichever comes first, until both are there; the main thread then goes
     * on, and the worker once {@code shutdownNow} waits for it (or, should it not wait, once it has returned). The
     * shutdownNow rounds of the stress tests meet this window only by chance.
     */
    @Test
    void aTaskWhoseTakeHadBegunWhenShutdownNowCameIsRunOrReturnedNotBoth() throws Exception {
        List<String> hits = new ArrayList<>();
        int[] takes = new int[1];
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(TakeUnderWayChild.class, List.of(
                DebuggedChild.Spot.line("take", SequentialLane.class, "if (worker.engine.laneHeadPerTask)"),
                DebuggedChild.Spot.entry("ready", TakeUnderWayChild.class, "ready"),
                DebuggedChild.Spot.entry("waits", Worker.class, "awaitNotTaking"),
                DebuggedChild.Spot.entry("returned", TakeUnderWayChild.class, "returned")),
                (spot, thread, held) -> {
                    hits.add(spot);
                    switch (spot) {
                        case "take":
                            if (++takes[0] != 2) {
                                return true; // the first task's take, or one after the window
                            }
                            return meeting.windowReached(thread, held);
                        case "ready":
                            return meeting.mainReady(thread);
                        default: // waits (shutdownNow waits for the take), or returned (it did not)
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertTrue(hits.size() >= 3 && Set.copyOf(hits.subList(0, 3)).equals(Set.of("take", "ready"))
                && hits.subList(0, 3).stream().filter("take"::equals).count() == 2,
                "the worker held in its second take while the child called shutdownNow: " + hits + "\n" + out);
        assertTrue(out.contains(TakeUnderWayChild.ONCE), out);
    }

    /** The child JVM of {@link #aTaskWhoseTakeHadBegunWhenShutdownNowCameIsRunOrReturnedNotBoth}. */
    static final class TakeUnderWayChild {
        static final String ONCE = "child: the second task was run or returned, not both";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("take-under-way").coreThreads(1).maxThreads(1)
                    .checkPeriod(Duration.ofSeconds(30)).build();
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            AtomicInteger ran = new AtomicInteger();
            e.execute(new Seq("s", () -> {
                started.countDown();
                blockQuietly(go);
            }));
            Runnable second = new Seq("s", ran::incrementAndGet);
            e.execute(second); // waits in the lane behind the first: the worker takes it in the same batch
            await(started, "the first task");
            go.countDown();
            ready();
            List<Runnable> returned = e.shutdownNow();
            returned();
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            boolean back = returned.contains(second);
            System.out.println(back != (ran.get() == 1) && ran.get() <= 1 ? ONCE : "child: the second task ran "
                    + ran.get() + " times and was returned: " + back + " (" + returned + ")");
            System.out.println("child: terminated " + terminated + ", " + e.statistics());
            System.exit(0);
        }

        /** The worker is held in its second take: shutdownNow comes now. */
        static void ready() {
        }

        /** shutdownNow has returned. */
        static void returned() {
        }

        private TakeUnderWayChild() {
        }
    }

    /**
     * An unordered submit offers its task, then reads the state again, and on a change takes the task back
     * ({@code ReadyQueue#takeBack}: a CAS on its node's item, against the poll's swap) and is rejected. A worker that
     * polled the task between the submitter's look at the node and that CAS owns it: the take-back must then fail and
     * the submit count as accepted, or the task is both run and rejected. No caller's code runs there, so the
     * debugger holds the submitter where it re-reads the state (until the child has called {@code shutdown()}) and
     * then at the CAS, while the only worker, freed from a blocking task, polls and runs the task. The submit-versus-
     * shutdown rounds of the stress tests meet this window only by chance.
     */
    @Test
    void anUnorderedTaskAWorkerTookWhileItsSubmitterTookItBackIsRunAndAccepted() throws Exception {
        List<String> hits = new ArrayList<>();
        // Two meetings, each of the submitter (held at its spot) and the main thread (held at its own until the
        // submitter is at the matching spot; then it goes on, the submitter stays): rechecks with ready, takes back
        // with freeing.
        Map<String, String> meets = Map.of("rechecks", "ready", "ready", "rechecks", "takes back", "freeing",
                "freeing", "takes back");
        String[] submitterAt = new String[1];
        String[] mainAt = new String[1];
        ThreadReference[] main = new ThreadReference[1];
        String out = DebuggedChild.run(TakenBackChild.class, List.of(
                DebuggedChild.Spot.line("rechecks", Engine.class,
                        "if (!internal && state != RUNNING && readyQueue.takeBack(item)) {"),
                DebuggedChild.Spot.line("takes back", ReadyQueue.class, "return ITEM.compareAndSet(p, task, null)"),
                DebuggedChild.Spot.entry("ready", TakenBackChild.class, "ready"),
                DebuggedChild.Spot.entry("shut down", TakenBackChild.class, "shutDown"),
                DebuggedChild.Spot.entry("freeing", TakenBackChild.class, "freeing"),
                DebuggedChild.Spot.entry("ran", TakenBackChild.class, "ran")),
                (spot, thread, held) -> {
                    if ((spot.equals("rechecks") || spot.equals("takes back")) && !thread.name().equals("submitter")) {
                        return true; // the main thread's own submits
                    }
                    hits.add(spot);
                    switch (spot) {
                        case "rechecks":
                        case "takes back":
                            if (meets.get(spot).equals(mainAt[0])) { // the main thread waits for us: it goes on
                                mainAt[0] = null;
                                held.remove(main[0]);
                                main[0].resume();
                            } else {
                                submitterAt[0] = spot;
                            }
                            return false;
                        case "ready":
                        case "freeing":
                            if (meets.get(spot).equals(submitterAt[0])) {
                                submitterAt[0] = null;
                                return true;
                            }
                            mainAt[0] = spot;
                            main[0] = thread;
                            return false;
                        default: // shut down, ran: the submitter goes on
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertEquals(6, hits.size(), hits + "\n" + out);
        assertTrue(hits.indexOf("rechecks") < hits.indexOf("shut down") && hits.indexOf("ready") < hits.indexOf(
                "shut down") && hits.indexOf("shut down") < hits.indexOf("takes back") && hits.indexOf("takes back")
                < hits.indexOf("ran") && hits.indexOf("freeing") < hits.indexOf("ran"), hits + "\n" + out);
        assertTrue(out.contains(TakenBackChild.ONCE), out);
    }

    /** The child JVM of {@link #anUnorderedTaskAWorkerTookWhileItsSubmitterTookItBackIsRunAndAccepted}. */
    static final class TakenBackChild {
        static final String ONCE = "child: the task ran once and its submit was accepted";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("taken-back").coreThreads(1).maxThreads(1)
                    .checkPeriod(Duration.ofSeconds(30)).build();
            CountDownLatch busy = new CountDownLatch(1);
            CountDownLatch free = new CountDownLatch(1);
            e.execute(() -> {
                busy.countDown();
                blockQuietly(free); // the only worker: the submitter's task waits in the ready queue
            });
            await(busy, "the task holding the only worker");
            AtomicInteger runs = new AtomicInteger();
            CountDownLatch taskRan = new CountDownLatch(1);
            AtomicReference<Throwable> refused = new AtomicReference<>();
            Thread submitter = new Thread(() -> {
                try {
                    e.execute(() -> {
                        runs.incrementAndGet();
                        taskRan.countDown();
                    });
                } catch (Throwable t) {
                    refused.set(t);
                }
            }, "submitter");
            submitter.setDaemon(true);
            submitter.start();
            ready();
            e.shutdown();
            shutDown();
            freeing();
            free.countDown();
            boolean inTime = taskRan.await(5, TimeUnit.SECONDS);
            ran();
            submitter.join(10_000);
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(inTime && runs.get() == 1 && refused.get() == null ? ONCE : "child: the task ran "
                    + runs.get() + " times (in time: " + inTime + "), its submit refused with " + refused.get());
            System.out.println("child: terminated " + terminated + ", " + e.statistics());
            System.exit(0);
        }

        /** The submitter is held where it re-reads the state: shutdown comes now. */
        static void ready() {
        }

        /** shutdown() has returned: the submitter goes on to take its task back. */
        static void shutDown() {
        }

        /** The submitter is held at its take-back's CAS: the worker is freed now. */
        static void freeing() {
        }

        /** The worker has run the task (or 5 s have passed): the submitter goes on. */
        static void ran() {
        }

        private TakenBackChild() {
        }
    }

    /**
     * After {@code shutdown()} the executor is quiescent only once every lane is idle, and the check closes each idle
     * lane with a CAS from IDLE to CLOSED ({@code CoalescingLane#closeIfIdle}). A submit that read RUNNING before the
     * shutdown and then found its (new, idle) lane IDLE installs its task with a CAS from IDLE as well: one of the two
     * wins, and the task is either refused or run, never accepted and then dropped by the close. No caller's code runs
     * between the submitter's read of IDLE and its CAS, nor between the check's read and its CAS, so the debugger
     * holds the submitter there until the child has called {@code shutdown()} and the check is at its CAS, then holds
     * the check until the submitter's CAS is made. The randomized shutdown rounds of the stress tests meet this window
     * only by chance.
     */
    @Test
    void aCoalescingSubmitRacingTheQuiescenceCloseOfItsIdleLaneRuns() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(QuiescenceCloseChild.class, List.of(
                DebuggedChild.Spot.line("installs", CoalescingLane.class,
                        "PENDING_SINCE.setOpaque(this, engine.stamp());"),
                DebuggedChild.Spot.line("installed", CoalescingLane.class,
                        "return s == IDLE ? ACTIVATED : replacing ? REPLACED : ACCEPTED;"),
                DebuggedChild.Spot.line("closes", CoalescingLane.class, "SLOT.compareAndSet(this, IDLE, CLOSED)"),
                DebuggedChild.Spot.entry("ready", QuiescenceCloseChild.class, "ready")),
                (spot, thread, held) -> {
                    boolean bySubmitter = thread.name().equals("submitter");
                    if (spot.startsWith("install") != bySubmitter) {
                        return true; // not the window: another thread's install, or the submitter closing
                    }
                    if (spot.equals("closes") && (!meeting.reached() || hits.contains("closes"))) {
                        return true; // a check before the submitter is there (none: not shut down yet), or a later one
                    }
                    hits.add(spot);
                    switch (spot) {
                        case "installs": // held until the check is at its CAS; the main thread goes on, to shut down
                            return meeting.windowReached(thread, held);
                        case "ready":
                            return meeting.mainReady(thread);
                        case "closes": // the submitter makes its CAS now; the check waits for it
                            meeting.releaseWindow(held);
                            return false;
                        default: // installed: the submitter's CAS is made, the check goes on
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertEquals(Set.of("installs", "ready"), Set.copyOf(hits.subList(0, 2)), hits + "\n" + out);
        assertEquals(List.of("closes", "installed"), hits.subList(2, hits.size()), hits + "\n" + out);
        assertTrue(out.contains(QuiescenceCloseChild.RAN), out);
    }

    /** The child JVM of {@link #aCoalescingSubmitRacingTheQuiescenceCloseOfItsIdleLaneRuns}. */
    static final class QuiescenceCloseChild {
        static final String RAN = "child: the accepted task ran";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("quiescence-close").coreThreads(1).maxThreads(1)
                    .checkPeriod(Duration.ofSeconds(30)).build();
            CountDownLatch warm = new CountDownLatch(1);
            e.execute(warm::countDown); // a worker, parked by the time the shutdown wakes it for the check
            await(warm, "the first task");
            CountDownLatch taskRan = new CountDownLatch(1);
            AtomicReference<Throwable> refused = new AtomicReference<>();
            Thread submitter = new Thread(() -> {
                try {
                    e.execute(new Coal("c", taskRan::countDown)); // a new lane: made idle, mapped, then installed in
                } catch (Throwable t) {
                    refused.set(t);
                }
            }, "submitter");
            submitter.setDaemon(true);
            submitter.start();
            ready();
            e.shutdown();
            submitter.join(10_000);
            boolean ran = taskRan.await(5, TimeUnit.SECONDS);
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(ran ? RAN : refused.get() != null ? "child: refused with " + refused.get()
                    : "child: the accepted task did not run within 5 s");
            System.out.println("child: terminated " + terminated + ", " + e.statistics());
            System.exit(0);
        }

        /** The submitter is held before its install: shutdown comes now. */
        static void ready() {
        }

        private QuiescenceCloseChild() {
        }
    }

    /**
     * A coalescing lane's owner takes its pending task with a CAS from the task to BUSY
     * ({@code CoalescingLane#runBatch}), and {@code shutdownNow} closes the lane with a CAS from what it read to
     * CLOSED, returning the task if one was pending ({@code closeAndDrain}): the same slot, so exactly one of them
     * gets the task. Both read the slot first; no caller's code runs between either read and its CAS. The debugger
     * holds the owner at its CAS for the second task (it has read the task, and RUNNING) and the child's main thread
     * before {@code shutdownNow}, whichever comes first, until both are there; then {@code shutdownNow} until it is at
     * its own CAS, having read the task too; then the owner goes on and takes the task, and {@code shutdownNow} once
     * the task runs. The shutdownNow rounds of the stress tests meet this window only by chance.
     */
    @Test
    void aCoalescingTaskItsOwnerTookWhileShutdownNowClosedTheLaneIsRunNotReturned() throws Exception {
        List<String> hits = new ArrayList<>();
        int[] takes = new int[1];
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(CoalescingTakeChild.class, List.of(
                DebuggedChild.Spot.line("takes", CoalescingLane.class, "if (SLOT.compareAndSet(this, s, BUSY)) {"),
                DebuggedChild.Spot.line("closes", CoalescingLane.class, "SLOT.compareAndSet(this, s, CLOSED)"),
                DebuggedChild.Spot.entry("ready", CoalescingTakeChild.class, "ready"),
                DebuggedChild.Spot.entry("running", CoalescingTakeChild.class, "running")),
                (spot, thread, held) -> {
                    switch (spot) {
                        case "takes":
                            if (++takes[0] != 2) {
                                return true; // the first task's take, or one after the window
                            }
                            hits.add(spot);
                            return meeting.windowReached(thread, held);
                        case "ready":
                            hits.add(spot);
                            return meeting.mainReady(thread);
                        case "closes": // shutdownNow has read the task: the owner takes it now, shutdownNow waits
                            if (hits.contains(spot)) {
                                return true; // its CAS failed: it reads the slot again
                            }
                            hits.add(spot);
                            meeting.releaseWindow(held);
                            return false;
                        default: // running: the owner's CAS is made, shutdownNow goes on
                            hits.add(spot);
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertEquals(Set.of("takes", "ready"), Set.copyOf(hits.subList(0, 2)), hits + "\n" + out);
        assertEquals(List.of("closes", "running"), hits.subList(2, Math.min(4, hits.size())), hits + "\n" + out);
        assertTrue(out.contains(CoalescingTakeChild.ONCE), out);
    }

    /** The child JVM of {@link #aCoalescingTaskItsOwnerTookWhileShutdownNowClosedTheLaneIsRunNotReturned}. */
    static final class CoalescingTakeChild {
        static final String ONCE = "child: the second task ran and was not returned";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("coalescing-take").coreThreads(1).maxThreads(1)
                    .checkPeriod(Duration.ofSeconds(30)).build();
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            AtomicInteger ran = new AtomicInteger();
            e.execute(new Coal("c", () -> {
                started.countDown();
                blockQuietly(go);
            }));
            await(started, "the first task");
            Runnable second = new Coal("c", () -> {
                running();
                ran.incrementAndGet();
            });
            e.execute(second); // pending in the slot while the first runs: its owner takes it next
            go.countDown();
            ready();
            List<Runnable> returned = e.shutdownNow();
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            boolean back = returned.contains(second);
            System.out.println(!back && ran.get() == 1 ? ONCE : "child: the second task ran " + ran.get()
                    + " times and was returned: " + back + " (" + returned + ")");
            System.out.println("child: terminated " + terminated + ", " + e.statistics());
            System.exit(0);
        }

        /** The owner is held at its take of the second task: shutdownNow comes now. */
        static void ready() {
        }

        /** The second task runs: its owner's CAS is made. */
        static void running() {
        }

        private CoalescingTakeChild() {
        }
    }

    /** SPEC 1: every {@code schedule*} keeps the task's kind and context; the future wraps the task. */
    @Test
    void scheduledFuturesKeepTheKindAndContextOfTheirTask() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        ScheduledFuture<?> s = e.schedule(new Seq("k", () -> { }), 1, TimeUnit.HOURS);
        ScheduledFuture<?> p = e.scheduleAtFixedRate(new Coal("kc", () -> { }), 1, 1, TimeUnit.HOURS);
        List<Runnable> returned = e.shutdownNow();
        assertTrue(returned.contains(s), returned.toString());
        assertTrue(s instanceof SequentialRunnable, "a scheduled future hides its task's kind: " + s);
        assertEquals("k", ((SequentialRunnable) s).context());
        assertTrue(p instanceof CoalescingRunnable, "a scheduled periodic future hides its task's kind: " + p);
        assertEquals("kc", ((CoalescingRunnable) p).context());
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    @Test
    void closeFromOneOfTheExecutorsOwnTasksShutsDownAndThrowsIllegalStateException() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        CountDownLatch queued = new CountDownLatch(1);
        AtomicBoolean queuedRan = new AtomicBoolean();
        AtomicBoolean shutDownOnThrow = new AtomicBoolean();
        AtomicBoolean terminatedOnThrow = new AtomicBoolean(true);
        Future<?> f = e.submit(new Seq("a", () -> {
            try {
                TestSupport.await(queued, "the task queued behind this one");
                e.close();
            } catch (Throwable t) {
                shutDownOnThrow.set(e.isShutdown());
                terminatedOnThrow.set(e.isTerminated());
                throw t;
            }
        }), null);
        e.execute(new Seq("a", () -> queuedRan.set(true)));
        queued.countDown();
        ExecutionException thrown = assertThrows(ExecutionException.class, () -> get(f));
        assertTrue(thrown.getCause() instanceof IllegalStateException, "close() from a task: " + thrown.getCause());
        assertTrue(thrown.getCause().getMessage().contains("from a thread outside the executor"),
                "the message says where to wait instead: " + thrown.getCause().getMessage());
        assertTrue(shutDownOnThrow.get(), "close() from a task did not start the shutdown, as the JDK's executors do");
        assertFalse(terminatedOnThrow.get());
        assertThrows(RejectedExecutionException.class, () -> e.execute(() -> { }));
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertTrue(queuedRan.get(), "a task accepted before close() did not run");
    }

    /**
     * A submit that finds no worker asks the thread factory for one, on the submitter's thread, and that start counts
     * as a worker on its way, which termination waits for. A {@code close()} the factory made there waited, on that
     * very thread, for a termination that needed the factory to return: for good (the first submit of an executor
     * whose factory closes it hung, and the executor never terminated). It starts the shutdown and throws, as from a
     * task or the checker.
     */
    @Test
    void closeFromTheThreadFactoryMakingAWorkerShutsDownAndThrowsIllegalStateException() throws Exception {
        AtomicReference<Throwable> closeOutcome = new AtomicReference<>();
        AtomicBoolean shutDownOnThrow = new AtomicBoolean();
        AtomicReference<GatlingExecutor> executor = new AtomicReference<>();
        AtomicBoolean once = new AtomicBoolean();
        java.util.concurrent.ThreadFactory factory = r -> {
            if (!TestSupport.isChecker(r) && once.compareAndSet(false, true)) {
                try {
                    executor.get().close();
                } catch (Throwable t) {
                    closeOutcome.set(t);
                    shutDownOnThrow.set(executor.get().isShutdown());
                }
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("factory-closes").coreThreads(1).threadFactory(factory).build());
        executor.set(e);
        CountDownLatch ran = new CountDownLatch(1);
        AtomicReference<Throwable> submitOutcome = new AtomicReference<>();
        Thread submitter = new Thread(() -> {
            try {
                e.execute(ran::countDown);
            } catch (Throwable t) {
                submitOutcome.set(t);
            }
        }, "submitter");
        submitter.setDaemon(true);
        submitter.start();
        submitter.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertFalse(submitter.isAlive(), "the submit whose worker start closed the executor never returned");
        assertTrue(closeOutcome.get() instanceof IllegalStateException, "close() from the factory: " + closeOutcome);
        assertTrue(shutDownOnThrow.get(), "close() from the factory did not start the shutdown");
        // Shut down during its own submit, the task is accepted if the new worker took it first, else refused.
        if (submitOutcome.get() == null) {
            await(ran, "the task accepted before the shutdown to run");
        } else {
            assertTrue(submitOutcome.get() instanceof RejectedExecutionException, submitOutcome.toString());
        }
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), TestSupport.describe(e));
        assertEquals(submitOutcome.get() == null ? 0 : 1, ran.getCount());
    }

    /**
     * {@code schedule(task, 0)} submits its task on the caller's thread, under the timer's lock, which every
     * termination check takes; the lane's lookup runs the context's {@code hashCode} there. A {@code close()} made by
     * it waited, holding that lock, for a termination that needed it: for good (the schedule call never returned, and
     * the executor never terminated). It starts the shutdown and throws, as from a task.
     */
    @Test
    void closeFromAContextsHashCodeAtADispatchUnderTheTimersLockShutsDownAndThrowsIllegalStateException()
            throws Exception {
        GatlingExecutor e = cleanup.track(gatling("hash-closes").coreThreads(1).build());
        AtomicReference<Throwable> closeOutcome = new AtomicReference<>();
        AtomicBoolean shutDownOnThrow = new AtomicBoolean();
        AtomicBoolean once = new AtomicBoolean();
        Object context = new Object() {
            @Override
            public int hashCode() {
                if (e.engine().timer.isHeldByCurrentThread() && once.compareAndSet(false, true)) {
                    try {
                        e.close();
                    } catch (Throwable t) {
                        closeOutcome.set(t);
                        shutDownOnThrow.set(e.isShutdown());
                    }
                }
                return 3;
            }
        };
        CountDownLatch ran = new CountDownLatch(1);
        AtomicReference<ScheduledFuture<?>> scheduled = new AtomicReference<>();
        Thread caller = new Thread(() -> scheduled.set(e.schedule(new Seq(context, ran::countDown), 0,
                TimeUnit.MILLISECONDS)), "scheduling caller");
        caller.setDaemon(true);
        caller.start();
        caller.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertFalse(caller.isAlive(), "the schedule call whose dispatch closed the executor never returned");
        assertTrue(closeOutcome.get() instanceof IllegalStateException, "close() under the timer's lock: "
                + closeOutcome);
        assertTrue(shutDownOnThrow.get(), "close() under the timer's lock did not start the shutdown");
        await(ran, "the task accepted before the shutdown to run"); // a one-shot task runs after shutdown()
        get(scheduled.get());
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), TestSupport.describe(e));
    }

    /**
     * A coalescing submit that replaces a pending task which is the caller's own {@code Future} cancels it on the
     * submitter's thread (on a {@code schedule(task, 0)} caller's, once the timer's lock is let go), and termination
     * waits for that cancel. A {@code close()} from the future's {@code done()} then waited for good for a
     * termination that waited for the call it was made from (the replacing submit never returned). It starts the
     * shutdown and throws, as from a task or the thread factory.
     */
    @ParameterizedTest
    @ValueSource(strings = {"execute", "schedule"})
    void closeFromTheDoneOfAFutureAReplacingSubmitCancelsShutsDownAndThrowsIllegalStateException(String how)
            throws Exception {
        GatlingExecutor e = cleanup.track(gatling("done-closes").coreThreads(1).build());
        CountDownLatch gate = cleanup.occupy(r -> e.execute(new Coal("c", r)));
        AtomicReference<Throwable> closeOutcome = new AtomicReference<>();
        AtomicBoolean shutDownOnThrow = new AtomicBoolean();
        final class ClosingFuture extends java.util.concurrent.FutureTask<Object> implements CoalescingRunnable {
            ClosingFuture() {
                super(() -> null);
            }

            @Override
            public Object context() {
                return "c";
            }

            @Override
            protected void done() {
                try {
                    e.close();
                } catch (Throwable t) {
                    closeOutcome.set(t);
                    shutDownOnThrow.set(e.isShutdown());
                }
            }
        }
        ClosingFuture pending = new ClosingFuture();
        e.execute(pending);
        CountDownLatch ran = new CountDownLatch(1);
        Thread replacer = new Thread(() -> {
            if (how.equals("execute")) {
                e.execute(new Coal("c", ran::countDown));
            } else {
                e.schedule(new Coal("c", ran::countDown), 0, TimeUnit.MILLISECONDS);
            }
        }, "replacer");
        replacer.setDaemon(true);
        replacer.start();
        waitUntil("the close() from done() to start the shutdown", e::isShutdown);
        gate.countDown(); // the replacement runs, and nothing else is left but the cancel under way
        replacer.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertFalse(replacer.isAlive(), "the submit whose replaced future's done() closed the executor never returned");
        assertTrue(closeOutcome.get() instanceof IllegalStateException, "close() from done(): " + closeOutcome);
        assertTrue(shutDownOnThrow.get(), "close() from done() did not start the shutdown");
        await(ran, "the replacement accepted before the shutdown to run");
        assertTrue(pending.isCancelled());
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), TestSupport.describe(e));
    }

    /**
     * The checker is one of the executor's threads too, and the only one that runs user code outside tasks: it asks
     * the thread factory for auxiliary workers. A {@code close()} from there waits for a termination that needs the
     * checker itself to end.
     */
    @Test
    void closeFromTheCheckersThreadShutsDownAndThrowsIllegalStateException() throws Exception {
        AtomicReference<Thread> checker = new AtomicReference<>();
        AtomicReference<Throwable> closeOutcome = new AtomicReference<>();
        AtomicBoolean shutDownOnThrow = new AtomicBoolean();
        CountDownLatch closeCalled = new CountDownLatch(1);
        CountDownLatch closeEnded = new CountDownLatch(1);
        AtomicReference<GatlingExecutor> executor = new AtomicReference<>();
        java.util.concurrent.ThreadFactory factory = r -> {
            if (Thread.currentThread() == checker.get() && closeCalled.getCount() > 0) {
                closeCalled.countDown();
                try {
                    executor.get().close();
                } catch (Throwable t) {
                    closeOutcome.set(t);
                    shutDownOnThrow.set(executor.get().isShutdown());
                }
                closeEnded.countDown();
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            if (TestSupport.isChecker(r)) {
                checker.set(t);
            }
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).maxThreads(2).threadFactory(factory).build());
        executor.set(e);
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(1);
        e.execute(() -> {
            started.countDown();
            blockQuietly(gate);
        });
        await(started, "the task that blocks the only core worker");
        CountDownLatch behind = new CountDownLatch(1);
        e.execute(behind::countDown); // waits behind a blocked worker: the checker asks the factory for a thread
        await(closeCalled, "the checker asking the factory for an auxiliary worker");
        await(closeEnded, "close() called on the checker's thread to return or throw");
        assertTrue(closeOutcome.get() instanceof IllegalStateException, "close() from the checker: " + closeOutcome);
        assertTrue(shutDownOnThrow.get(), "close() from the checker did not start the shutdown");
        await(behind, "the task accepted before close() to run");
        gate.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), TestSupport.describe(e));
    }

    @Test
    void closeWhenInterruptedCallsShutdownNowKeepsWaitingAndRestoresTheInterrupt() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean taskInterrupted = new AtomicBoolean();
        e.execute(() -> {
            started.countDown();
            try {
                TestSupport.block(gate);
            } catch (InterruptedException ie) {
                taskInterrupted.set(true);
            }
        });
        await(started, "task");
        AtomicBoolean interruptRestored = new AtomicBoolean();
        AtomicBoolean terminatedOnReturn = new AtomicBoolean();
        AtomicReference<Throwable> closeFailed = new AtomicReference<>();
        Thread closer = new Thread(() -> {
            try {
                e.close();
                terminatedOnReturn.set(e.isTerminated());
                interruptRestored.set(Thread.currentThread().isInterrupted());
            } catch (Throwable t) {
                closeFailed.set(t);
            }
        });
        closer.start();
        waitUntil("close() to wait", () -> closer.getState() == Thread.State.WAITING
                || closer.getState() == Thread.State.TIMED_WAITING);
        closer.interrupt();
        closer.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertFalse(closer.isAlive(), "close() did not return after an interrupt");
        assertNull(closeFailed.get());
        assertTrue(taskInterrupted.get(), "close() interrupted did not shutdownNow the running task");
        assertTrue(terminatedOnReturn.get());
        assertTrue(interruptRestored.get(), "close() did not restore the interrupt status");
    }

    /**
     * {@code shutdownNow()} while a coalescing task runs with nothing pending behind it returns nothing of that lane.
     * While its task runs, the lane's slot holds a marker (BUSY) where a pending task would be; the drain closes the
     * lane with the same CAS whatever it finds, and must hand back only a task, never the marker.
     */
    @Test
    void shutdownNowReturnsNothingOfACoalescingLaneWhoseTaskRuns() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stop").coreThreads(1).build());
        CountDownLatch gate = cleanup.occupy(e.coalescing("c"));
        List<Runnable> returned = e.shutdownNow();
        assertEquals(List.of(), returned, "nothing waits: the coalescing task runs");
        gate.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        ExecutorStatistics s = e.statistics();
        assertEquals(1, s.executed(), s.toString());
        assertEquals(0, s.returned(), s.toString());
    }

    /**
     * A submit that activates its lane owns it until it puts it in the ready queue, and nothing waits for it: a
     * {@code shutdownNow()} in between closes the lane and returns its task, and the executor may terminate before the
     * submitter's offer. The lane then lies in the ready queue of a terminated executor, where nothing polls, closed
     * and empty, keeping its context reachable for as long as the executor is. The submitter takes it out again when
     * it finds the executor terminated after its offer ({@code Engine#makeReady}): after, or a termination between
     * its look and its offer left the lane there. No caller's code runs between the activation and the offer, so the
     * debugger holds the submitter just before the offer until the executor has terminated.
     */
    @Test
    void aLaneQueuedOnlyAfterTerminationDoesNotStayInTheReadyQueue() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(QueuedAfterTerminationChild.class, List.of(
                DebuggedChild.Spot.line("activated", Engine.class, "readyQueue.offerLane(lane, stamp());"),
                DebuggedChild.Spot.entry("held", QueuedAfterTerminationChild.class, "held"),
                DebuggedChild.Spot.entry("release", QueuedAfterTerminationChild.class, "release")),
                (spot, thread, held) -> {
                    if (spot.equals("held")) { // the child's main thread, waiting for the submitter to be held
                        return meeting.mainReady(thread);
                    }
                    hits.add(spot);
                    if (spot.equals("activated")) {
                        return meeting.windowReached(thread, held); // the submitter stays
                    }
                    DebuggedChild.resumeAll(held); // the submitter goes on to its offer
                    return true;
                });
        assertEquals(List.of("activated", "release"), hits, out);
        assertTrue(out.contains(QueuedAfterTerminationChild.TERMINATED + "true, returned 1"), out);
        assertTrue(out.contains(QueuedAfterTerminationChild.AFTER + "accepted true, ready queue empty true"), out);
    }

    /** The child JVM of {@link #aLaneQueuedOnlyAfterTerminationDoesNotStayInTheReadyQueue}. */
    static final class QueuedAfterTerminationChild {
        static final String TERMINATED = "child: terminated with the activated lane not yet queued: ";
        static final String AFTER = "child: once the submitter has queued it: ";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("queued-after-termination").coreThreads(1)
                    .maxThreads(1).build();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread submitter = new Thread(() -> {
                try {
                    e.sequential("late").execute(() -> { });
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "submitter");
            submitter.setDaemon(true);
            submitter.start();
            held(); // until the submitter is held with the lane it activated
            List<Runnable> returned = e.shutdownNow();
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(TERMINATED + terminated + ", returned " + returned.size());
            release(); // the submitter queues its lane
            submitter.join(10_000);
            System.out.println(AFTER + "accepted " + (failure.get() == null) + ", ready queue empty "
                    + e.engine().readyQueue.isEmpty() + (failure.get() == null ? "" : ": " + failure.get()));
            System.exit(0);
        }

        static void held() {
        }

        static void release() {
        }

        private QueuedAfterTerminationChild() {
        }
    }

    /**
     * An unordered submit that reads RUNNING, then queues its task after {@code shutdownNow()}'s drain, takes it back
     * when it reads the state again and is refused. The executor used to terminate in between, with nothing waiting for
     * that submitter, and termination's sweep of the closed lanes out of the ready queue ({@code ReadyQueue#dropLanes})
     * once took such a task with them: the take-back failed, the submit returned as accepted, and its task neither ran
     * nor was returned. Termination now waits for a submit between its offer and its count or take-back
     * ({@code SubmitCounter#begin}): it comes after the take-back, which finds its task. No caller's code runs there,
     * so the debugger holds the submitter past its first read of the state while {@code shutdownNow()} runs, then
     * between its offer and its take-back while the executor's last task, which ignores the interrupt, returns.
     */
    @Test
    void anUnorderedTaskQueuedAfterShutdownNowsDrainIsTakenBackAfterTermination() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting made = new DebuggedChild.Meeting();
        DebuggedChild.Meeting offered = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(TakenBackAfterTerminationChild.class, List.of(
                DebuggedChild.Spot.line("made", Engine.class, "PlainTask item = new PlainTask(task, stamp());"),
                DebuggedChild.Spot.line("offered", Engine.class, "readyQueue.takeBack(item)"),
                DebuggedChild.Spot.entry("held", TakenBackAfterTerminationChild.class, "held"),
                DebuggedChild.Spot.entry("stopped", TakenBackAfterTerminationChild.class, "stopped"),
                DebuggedChild.Spot.entry("read", TakenBackAfterTerminationChild.class, "read")),
                (spot, thread, held) -> {
                    boolean submitter = "submitter".equals(thread.name());
                    if ((spot.equals("made") || spot.equals("offered")) && !submitter) {
                        return true; // the child's own submits
                    }
                    if (spot.equals("held")) { // the child's main thread, waiting for the submitter to be held
                        return made.mainReady(thread);
                    }
                    hits.add(spot);
                    switch (spot) {
                        case "made":
                            return made.windowReached(thread, held);
                        case "offered":
                            return offered.windowReached(thread, held);
                        case "stopped":
                            made.releaseWindow(held); // the submitter goes on to its offer...
                            return offered.mainReady(thread); // ...while the child's main thread waits for it
                        default:
                            DebuggedChild.resumeAll(held); // the submitter goes on to its take-back
                            return true;
                    }
                });
        assertEquals(List.of("made", "stopped", "offered", "read"), hits, out);
        assertTrue(out.contains(TakenBackAfterTerminationChild.TERMINATED + "false, returned 0"), out);
        assertTrue(out.contains(TakenBackAfterTerminationChild.AFTER + "refused true, ran 0, submitted 1, terminated "
                + "true"), out);
    }

    /** The child JVM of {@link #anUnorderedTaskQueuedAfterShutdownNowsDrainIsTakenBackAfterTermination}. */
    static final class TakenBackAfterTerminationChild {
        static final String TERMINATED = "child: terminated while the task is queued: ";
        static final String AFTER = "child: once its submitter took it back: ";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("taken-back-after-termination").coreThreads(1)
                    .maxThreads(1).build();
            CountDownLatch running = new CountDownLatch(1);
            CountDownLatch gate = new CountDownLatch(1);
            e.sequential("busy").execute(() -> {
                running.countDown();
                for (;;) { // through shutdownNow's interrupt: the executor stops, and does not terminate yet
                    try {
                        gate.await();
                        return;
                    } catch (InterruptedException stopped) {
                        // wait on
                    }
                }
            });
            running.await();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicInteger ran = new AtomicInteger();
            Thread submitter = new Thread(() -> {
                try {
                    e.execute(ran::incrementAndGet);
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "submitter");
            submitter.setDaemon(true);
            submitter.start();
            held(); // until the submitter is held past its first read of the state
            List<Runnable> returned = e.shutdownNow();
            stopped(); // until the submitter has queued its task, held before its take-back
            gate.countDown(); // the last task returns: only the submitter in flight holds termination back
            boolean terminated = e.awaitTermination(1, TimeUnit.SECONDS);
            System.out.println(TERMINATED + terminated + ", returned " + returned.size());
            read();
            submitter.join(10_000);
            terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(AFTER + "refused " + (failure.get() instanceof RejectedExecutionException) + ", ran "
                    + ran.get() + ", submitted " + e.statistics().submitted() + ", terminated " + terminated + ": "
                    + failure.get());
            System.exit(0);
        }

        static void held() {
        }

        static void stopped() {
        }

        static void read() {
        }

        private TakenBackAfterTerminationChild() {
        }
    }
}
