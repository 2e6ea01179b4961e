package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.awaitQuiescent;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.lane;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.Seq;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** SPEC semantics 4: lanes, namespaces, release and re-use. */
class SemanticsLaneLifecycleTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    @Test
    void sequentialAndCoalescingLanesOfOneContextAreIndependent() {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        // each lane's task waits for the other lane's task: only possible if they run at the same time
        CountDownLatch sequentialRunning = new CountDownLatch(1);
        CountDownLatch coalescingRunning = new CountDownLatch(1);
        CountDownLatch bothMet = new CountDownLatch(2);
        e.sequential("a").execute(() -> {
            sequentialRunning.countDown();
            try {
                if (coalescingRunning.await(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    bothMet.countDown();
                }
            } catch (InterruptedException ignored) {
                // count stays up
            }
        });
        e.coalescing("a").execute(() -> {
            coalescingRunning.countDown();
            try {
                if (sequentialRunning.await(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    bothMet.countDown();
                }
            } catch (InterruptedException ignored) {
                // count stays up
            }
        });
        await(bothMet, "sequential(\"a\") and coalescing(\"a\") to run at the same time");
    }

    @Test
    void sequentialTasksOfAContextAreNeverCoalescedByItsCoalescingLane() {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        CountDownLatch sequentialGate = cleanup.occupy(e.sequential("n"));
        CountDownLatch coalescingGate = cleanup.occupy(e.coalescing("n"));
        AtomicInteger sequentialRuns = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(10);
        for (int i = 0; i < 10; i++) {
            e.execute(new Seq("n", () -> {
                sequentialRuns.incrementAndGet();
                done.countDown();
            }));
            e.execute(new Coal("n", () -> { }));
        }
        assertEquals(2, e.statistics().liveContexts(), e.contextStatistics().toString());
        assertEquals(11, lane(e, "n", false).submitted());
        assertEquals(11, lane(e, "n", true).submitted());
        sequentialGate.countDown();
        coalescingGate.countDown();
        await(done, "sequential tasks");
        ExecutorStatistics s = awaitQuiescent(e);
        assertEquals(10, sequentialRuns.get());
        assertEquals(9, s.coalesced(), s.toString());
    }

    @Test
    void laneHandlesStayValidAfterTheirLaneIsReleased() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        Executor sequential = e.sequential("h");
        Executor coalescing = e.coalescing("h");
        for (int cycle = 0; cycle < 5; cycle++) {
            CountDownLatch done = new CountDownLatch(2);
            List<Integer> order = new ArrayList<>();
            sequential.execute(() -> order.add(1));
            sequential.execute(() -> {
                order.add(2);
                done.countDown();
            });
            coalescing.execute(done::countDown);
            await(done, "tasks through old handles, cycle " + cycle);
            assertEquals(List.of(1, 2), order);
            int c = cycle;
            waitUntil("lanes released (cycle " + c + ")", () -> e.statistics().liveContexts() == 0,
                    () -> e.contextStatistics().toString());
            assertTrue(e.contextStatistics().isEmpty(), e.contextStatistics().toString());
        }
        // a handle can be shared with another thread after its lane was released
        CountDownLatch fromOtherThread = new CountDownLatch(1);
        Thread t = new Thread(() -> sequential.execute(fromOtherThread::countDown));
        t.start();
        t.join();
        await(fromOtherThread, "task through a shared handle");
    }

    /**
     * A worker parks with the lanes it emptied still within their grace (releasing them all there made each catch-up
     * of a producer a release and re-creation of every lane just emptied); the checker releases them once the grace
     * has passed, although no worker is awake any more. Tried several times: each round, the checker may be anywhere
     * in its sleep when the worker parks.
     */
    @RepeatedTest(5)
    void aLaneKeptByAParkedWorkerIsReleasedAfterItsGrace() {
        GatlingExecutor e = cleanup.track(gatling("parked-ring").coreThreads(1).maxThreads(1).build());
        for (int round = 0; round < 5; round++) {
            CountDownLatch ran = new CountDownLatch(1);
            e.sequential("a" + round).execute(ran::countDown);
            await(ran, "the task");
            waitUntil("the lane released while every worker is parked", () -> e.statistics().liveContexts() == 0,
                    () -> e.contextStatistics().toString(), 1_000);
        }
    }

    @Test
    void aReleasedContextUsedAgainStartsFromZero() {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        CountDownLatch first = new CountDownLatch(5);
        for (int i = 0; i < 5; i++) {
            e.sequential("z").execute(first::countDown);
        }
        await(first, "first use");
        waitUntil("the lane to be released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().toString());
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Seq("z", blocker)));
        ContextStatistics cs = lane(e, "z", false);
        assertNotNull(cs);
        assertEquals(1, cs.submitted(), "a re-used context kept the counters of its released lane: " + cs);
        assertEquals(1, cs.executed(), cs.toString());
        gate.countDown();
    }

    @Test
    void liveContextsFollowQueuedAndRunningWork() {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(4).build());
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(3);
        for (int i = 0; i < 3; i++) {
            e.sequential("live-" + i).execute(() -> {
                started.countDown();
                blockQuietly(gate);
            });
        }
        await(started, "three lanes running");
        e.coalescing("live-c").execute(() -> blockQuietly(gate));
        waitUntil("four live lanes", () -> e.statistics().liveContexts() == 4,
                () -> e.contextStatistics().toString());
        assertEquals(4, e.contextStatistics().size());
        gate.countDown();
        waitUntil("every lane released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().toString());
    }

    /**
     * A lane emptied while other work waits used to go round the ready queue once more, mapped and live, however long
     * that round took: behind a backlog of lanes with one task each, every finished lane stayed live until the worker
     * had gone through the whole backlog (half a second for 300,000 lanes). Now only when its last trip round the queue
     * was short ({@link SequentialLane#ROUND_LIMIT_NANOS}): here every trip is longer, so the finished lanes go idle at
     * once and are released after the grace (the worker releases the oldest early once its idle ring is full).
     */
    @Test
    void lanesFinishedBehindALongBacklogAreReleasedWhileTheBacklogRuns() {
        // One worker and no other (no auxiliary worker while the first is held): the visits are in queue order.
        GatlingExecutor e = cleanup.track(gatling("backlog").coreThreads(1).maxThreads(1).build());
        int lanes = 8 * Worker.IDLE_RING;
        CountDownLatch gate = cleanup.occupy(e);
        // Sampled from inside the backlog: the lanes still live beyond those not yet visited. The lanes that are
        // finished and still mapped are idle ones within their grace (an idle ring at most) and the running one.
        AtomicLong mostFinishedLive = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        for (int i = 0; i < lanes; i++) {
            int notVisited = lanes - 1 - i;
            boolean sample = (i & 127) == 127;
            e.sequential(i).execute(() -> {
                if (sample) {
                    long finishedLive = e.statistics().liveContexts() - notVisited;
                    mostFinishedLive.accumulateAndGet(finishedLive, Math::max);
                }
                if (notVisited == 0) {
                    done.countDown();
                }
            });
        }
        // Every trip is longer than the limit, whatever the coarse clock's step.
        long queuedUntil = System.nanoTime();
        waitUntil("the lanes to have waited longer than a short trip",
                () -> System.nanoTime() - queuedUntil > 3 * SequentialLane.ROUND_LIMIT_NANOS, () -> "");
        gate.countDown();
        await(done, "the backlog to run");
        assertTrue(mostFinishedLive.get() <= Worker.IDLE_RING + 1, "lanes whose only task had run stayed live behind "
                + "the backlog: up to " + mostFinishedLive.get() + " of " + lanes + " at once");
        waitUntil("every lane released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().size() + " live");
    }

    /**
     * Lanes are released and re-created constantly while several producers use the same few contexts: two lanes of
     * one context must never exist at once (no overlap), and no task is lost or reordered.
     */
    static void runReleaseRace(GatlingExecutor e, int rounds) throws Exception {
        int producers = 4;
        int contexts = 4;
        OrderChecker checker = new OrderChecker(contexts, producers);
        CyclicBarrier start = new CyclicBarrier(producers);
        List<Thread> threads = new ArrayList<>();
        AtomicInteger failures = new AtomicInteger();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    Future<?> lastFuture = null;
                    for (int i = 1; i <= rounds; i++) {
                        int c = i % contexts;
                        int seq = i;
                        Runnable body = () -> {
                            checker.enterIncreasing(c, producer, seq); // a producer numbers across the contexts
                            checker.exit(c);
                        };
                        if (i % 8 == 0) {
                            lastFuture = e.submit(new Seq(c, body));
                            get(lastFuture); // let lanes drain, so they are released and re-created
                        } else if (i % 2 == 0) {
                            e.sequential(c).execute(body);
                        } else {
                            e.execute(new Seq(c, body));
                        }
                    }
                } catch (Throwable ex) {
                    failures.incrementAndGet();
                    ex.printStackTrace();
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS * 2));
        }
        assertEquals(0, failures.get());
        waitUntil("every task to run", () -> checker.ran() == (long) producers * rounds,
                () -> checker.ran() + " of " + (long) producers * rounds + "; " + TestSupport.describe(e));
        // An overlap: two lanes of one context existed at once; an order problem: order broken across lane release
        // and re-creation.
        checker.assertClean("sequential tasks across lane release and re-creation");
        waitUntil("every lane released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().toString());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.github.gatlingexecutor.Configurations#builders")
    void lanesReleasedAndRecreatedUnderContentionNeverDuplicate(String label, Supplier<GatlingExecutor.Builder> builder)
            throws Exception {
        runReleaseRace(cleanup.track(builder.get().build()), 20_000);
    }

    @RepeatedTest(50)
    @Tag("stress")
    void lanesReleasedAndRecreatedRepeated() throws Exception {
        runReleaseRace(cleanup.track(gatling("lanes").coreThreads(3).batchSize(1)
                .minTurn(Duration.ZERO).build()), 50_000);
    }

    /**
     * A context changed once its last task has run (a session object recycled for the next session as soon as its
     * work is done) is still released. Its lane outlives that task by up to its grace, and was then removed by the
     * context as it hashed by then: looked for in the wrong bin, it stayed mapped for good, counted in
     * {@code liveContexts()} and keeping its context reachable (21 to 46 of these 100 lanes). Half of the contexts
     * are coalescing ones: both kinds of lane are released the same way.
     */
    @Test
    void aContextChangedRightAfterItsLastTaskIsStillReleased() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("recycled").coreThreads(2).build());
        for (int i = 0; i < 100; i++) {
            RecycledSession session = new RecycledSession(i);
            Runnable task = i % 2 == 0 ? new Seq(session, () -> { }) : new Coal(session, () -> { });
            get(e.submit(task)); // it has run: nothing of this context is queued or running
            session.id = 1_000 + i;
        }
        waitUntil("every lane released", () -> e.statistics().liveContexts() == 0,
                () -> e.statistics() + " " + e.contextStatistics());
    }

    /**
     * As above, with the recycled contexts filed in the map's bin behind a live context of the same hash (a lane held
     * by a running task): the release looks for the lane where it was filed and must take out that lane's own entry,
     * not stop at the first entry of that hash.
     */
    @Test
    void aContextChangedRightAfterItsLastTaskIsReleasedBehindAnotherOfTheSameHash() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("recycled-same-hash").coreThreads(2).build());
        Object sameHash = new Object() {
            @Override
            public int hashCode() {
                return 7;
            }

            @Override
            public String toString() {
                return "same-hash";
            }
        };
        CountDownLatch gate = cleanup.gate();
        CountDownLatch holding = new CountDownLatch(1);
        e.sequential(sameHash).execute(() -> {
            holding.countDown();
            blockQuietly(gate);
        });
        await(holding, "the task that keeps the first lane of hash 7 live");
        for (int i = 0; i < 50; i++) {
            RecycledSession session = new RecycledSession(7);
            get(e.submit(new Seq(session, () -> { })));
            session.id = 1_000 + i;
        }
        waitUntil("every recycled lane released", () -> e.statistics().liveContexts() == 1,
                () -> e.statistics() + " " + e.contextStatistics());
        gate.countDown();
    }

    /** A context compared by a field its owner changes. */
    private static final class RecycledSession {
        volatile int id;

        RecycledSession(int id) {
            this.id = id;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof RecycledSession && ((RecycledSession) o).id == id;
        }

        @Override
        public int hashCode() {
            return id;
        }
    }

    /**
     * One million distinct contexts, used once each: afterwards no lane is live and the heap is back near where it
     * started (memory follows live contexts, not contexts ever used).
     */
    @Test
    void aMillionContextsLeaveNoLanesAndNoMemoryBehind() {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        // warm up the executor's own structures before the baseline
        CountDownLatch warm = new CountDownLatch(1000);
        for (int i = 0; i < 1000; i++) {
            e.execute(new Seq(-1 - i, warm::countDown));
        }
        await(warm, "warm-up");
        awaitQuiescent(e);
        long before = TestSupport.usedHeapAfterGc();
        int total = 1_000_000;
        AtomicLong ran = new AtomicLong();
        for (int i = 0; i < total; i++) {
            Integer context = i;
            switch (i % 4) {
                case 0:
                    e.execute(new Seq(context, ran::incrementAndGet));
                    break;
                case 1:
                    e.sequential(context).execute(ran::incrementAndGet);
                    break;
                case 2:
                    e.execute(new Coal(context, ran::incrementAndGet));
                    break;
                default:
                    e.coalescing(context).execute(ran::incrementAndGet);
                    break;
            }
            if (i % 100_000 == 99_999) {
                long target = i + 1 - 50_000;
                waitUntil("the backlog to shrink", () -> ran.get() >= target, () -> TestSupport.describe(e));
            }
        }
        waitUntil("every task to run", () -> ran.get() == total, () -> TestSupport.describe(e));
        waitUntil("every lane released", () -> e.statistics().liveContexts() == 0,
                () -> TestSupport.describe(e), 5_000);
        assertTrue(e.contextStatistics().isEmpty());
        ExecutorStatistics s = awaitQuiescent(e);
        assertEquals(total + 1000, s.submitted(), s.toString());
        assertEquals(total + 1000, s.executed(), s.toString());
        long after = TestSupport.usedHeapAfterGc();
        long growthMb = (after - before) / (1024 * 1024);
        assertTrue(growthMb < 64, "heap grew by " + growthMb + " MB after a million released contexts");
    }

    /**
     * A handle whose cached lane was released finds it DEAD and looks its context up again. On the way it helps the
     * releasing thread unmap that dead lane, and only that one: by then another submitter may have made the context a
     * new lane with work in it. Removing whatever the context maps to would leave that lane active and unmapped, and
     * the handle's task would make a third lane and run beside the second one's task.
     */
    @Test
    void aHandleThatFindsItsLaneReleasedJoinsTheContextsNewLane() {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        Executor handle = e.sequential("r");
        CountDownLatch first = new CountDownLatch(1);
        handle.execute(first::countDown); // the handle caches this lane
        await(first, "the first task");
        waitUntil("the lane to be released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().toString());
        List<String> order = new CopyOnWriteArrayList<>();
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Seq("r", () -> {
            order.add("held");
            blocker.run();
        }))); // a new lane for r, not through the handle, held by its running task
        CountDownLatch behind = new CountDownLatch(1);
        handle.execute(() -> {
            order.add("handle");
            behind.countDown();
        });
        List<ContextStatistics> lanes = lanesOf(e, "r");
        assertEquals(1, lanes.size(), "one lane for the context: " + lanes);
        assertEquals(2, lanes.get(0).submitted(), "the handle's task joins the held lane: " + lanes);
        assertEquals(1, lanes.get(0).queued(), lanes.toString());
        gate.countDown();
        await(behind, "the handle's task");
        assertEquals(List.of("held", "handle"), order);
    }

    /** The sequential lanes of {@code context} that {@code contextStatistics()} lists (one, or none, is right). */
    private static List<ContextStatistics> lanesOf(GatlingExecutor e, Object context) {
        List<ContextStatistics> out = new ArrayList<>();
        for (ContextStatistics cs : e.contextStatistics()) {
            if (!cs.coalescing() && cs.context().equals(context)) {
                out.add(cs);
            }
        }
        return out;
    }

    /**
     * Two submitters make the first lane of a context at once: the one whose lane is mapped first wins, and the other
     * submits into that lane, dropping its own. Its lane is never mapped over the winner's: the winner's lane, active
     * and unmapped, would run on beside a lane made for the next task. The second submitter is paused inside the
     * map's insert (its context's second hash this submit: the look-up, then the insert) while the first maps its lane
     * and runs a task of it.
     */
    @Test
    void aSubmitThatLosesTheRaceToMakeAContextsLaneJoinsTheWinnersLane() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("lanes").coreThreads(2).build());
        CountDownLatch paused = new CountDownLatch(1);
        CountDownLatch resume = cleanup.gate();
        PausingKey key = new PausingKey("m", paused, resume);
        List<String> order = new CopyOnWriteArrayList<>();
        CountDownLatch ran = new CountDownLatch(2);
        Thread loser = new Thread(() -> e.execute(new Seq(key, () -> {
            order.add("loser");
            ran.countDown();
        })));
        key.pauseOn(loser);
        loser.start();
        await(paused, "the losing submitter to be between its look-up and its insert");
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Seq(key, () -> {
            order.add("winner");
            blocker.run();
        })));
        resume.countDown();
        loser.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertFalse(loser.isAlive(), "the losing submitter still submits");
        e.execute(new Seq(key, () -> {
            order.add("next");
            ran.countDown();
        }));
        List<ContextStatistics> lanes = lanesOf(e, key);
        assertEquals(1, lanes.size(), "one lane for the context: " + lanes);
        assertEquals(3, lanes.get(0).submitted(), "every task in the winner's lane: " + lanes);
        gate.countDown();
        await(ran, "the tasks behind the winner's");
        assertEquals(List.of("winner", "loser", "next"), order);
    }

    /**
     * A context equal by name whose hash, on one chosen thread, pauses at its second call until released: it stops
     * that thread between the lane map's look-up and its insert, where a preemption would.
     */
    private static final class PausingKey {
        private final String name;
        private final CountDownLatch paused;
        private final CountDownLatch resume;
        private volatile Thread pausing;
        private int calls; // on the pausing thread only

        PausingKey(String name, CountDownLatch paused, CountDownLatch resume) {
            this.name = name;
            this.paused = paused;
            this.resume = resume;
        }

        void pauseOn(Thread thread) {
            pausing = thread;
        }

        @Override
        public int hashCode() {
            if (Thread.currentThread() == pausing && ++calls == 2) {
                paused.countDown();
                blockQuietly(resume);
            }
            return name.hashCode();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof PausingKey && ((PausingKey) o).name.equals(name);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /**
     * A worker whose coalescing lane has nothing pending (it reads BUSY after its task) gives the lane up with one CAS
     * from BUSY to IDLE; a submit between that read and the CAS installs its task over BUSY, which is no activation:
     * it neither queues the lane nor wakes anyone, so only the owner's failed CAS sends it back to run the task. No
     * caller's code runs in that window, so the debugger holds the worker there ({@code idleSince}, just before the
     * CAS) while the child submits, then lets it go. A check period of 30 s keeps the checker from rescuing a task so
     * lost, and one thread at most leaves no other worker to find it. The randomized coalescing and stress tests meet
     * this window only by chance.
     */
    @Test
    void aCoalescingSubmitWhileItsWorkerMakesTheLaneIdleRuns() throws Exception {
        // Whichever of the worker (at its first idle transition) and the child's main thread comes first is held until
        // the other is there; then only the main thread goes on, to submit, and the worker once the submit returned.
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(GoingIdleChild.class, List.of(
                DebuggedChild.Spot.line("idle", CoalescingLane.class, "idleSince = worker.clock;"),
                DebuggedChild.Spot.entry("ready", GoingIdleChild.class, "ready"),
                DebuggedChild.Spot.entry("submitted", GoingIdleChild.class, "submitted")),
                (spot, thread, held) -> {
                    hits.add(spot);
                    switch (spot) {
                        case "idle":
                            if (meeting.reached()) {
                                return true; // a later idle transition: not the window
                            }
                            return meeting.windowReached(thread, held);
                        case "ready":
                            return meeting.mainReady(thread); // the worker is held: submit now; else wait for it
                        default: // submitted
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertTrue(hits.size() >= 3 && Set.copyOf(hits.subList(0, 2)).equals(Set.of("idle", "ready"))
                && hits.get(2).equals("submitted"), "the worker held going idle while the child submitted: " + hits
                + "\n" + out);
        assertTrue(out.contains(GoingIdleChild.RAN), out);
    }

    /** The child JVM of {@link #aCoalescingSubmitWhileItsWorkerMakesTheLaneIdleRuns}. */
    static final class GoingIdleChild {
        static final String RAN = "child: the task submitted while its lane went idle ran";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("going-idle").coreThreads(1).maxThreads(1)
                    .checkPeriod(Duration.ofSeconds(30)).build();
            CountDownLatch first = new CountDownLatch(1);
            CountDownLatch second = new CountDownLatch(1);
            e.execute(new Coal("c", first::countDown));
            await(first, "the first task");
            ready();
            e.execute(new Coal("c", second::countDown));
            submitted();
            boolean ran = second.await(5, TimeUnit.SECONDS); // far below the check period
            System.out.println(ran ? RAN : "child: the task submitted while its lane went idle did not start within"
                    + " 5 s: " + e.statistics());
            e.shutdownNow();
            System.out.println("child: terminated " + e.awaitTermination(10, TimeUnit.SECONDS));
            System.exit(0);
        }

        /** The worker is held where it makes the lane idle: the next submit comes now. */
        static void ready() {
        }

        /** The submit has returned: the worker may go on. */
        static void submitted() {
        }

        private GoingIdleChild() {
        }
    }
}
