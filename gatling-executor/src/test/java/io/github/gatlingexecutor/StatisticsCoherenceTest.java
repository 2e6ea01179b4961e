package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.lane;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Statistics read while tasks flow: each figure keeps the direction the Javadoc promises, snapshot after snapshot.
 * Each test pins a defect an outside audit found (the snapshot read races that only show under load), and each was
 * seen failing on the code before its fix.
 */
class StatisticsCoherenceTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();

    private static final long READ_NANOS = TimeUnit.MILLISECONDS.toNanos(400);

    /**
     * With both limits set, a submit that its lane's limit refuses took a place in the executor and gave it back: for
     * that moment the refused task was in {@code submitted()} and {@code queued()}, and the next snapshot was lower.
     */
    /**
     * {@code transfers()} counts contexts that moved from one worker to another (SPEC: statistics), so on an executor
     * of one worker it stays 0, however many contexts ran and however often their lanes went idle and came back. A
     * first batch on a lane new to every worker is no move: counted as one, every context's first task (and every
     * re-created lane's) read as a transfer.
     */
    @Test
    void contextsThatRanOnTheOnlyWorkerCountNoTransfer() {
        GatlingExecutor e = cleanup.track(gatling("no-transfer").coreThreads(1).maxThreads(1).build());
        for (int round = 0; round < 3; round++) {
            CountDownLatch done = new CountDownLatch(12);
            for (int i = 0; i < 12; i++) {
                Runnable task = done::countDown;
                if (i % 2 == 0) {
                    e.sequential("s" + i % 4).execute(task);
                } else {
                    e.coalescing("c" + i).execute(task); // one task each: none is replaced
                }
            }
            await(done, "round " + round);
        }
        ExecutorStatistics s = TestSupport.awaitQuiescent(e);
        assertEquals(1, s.peakThreads(), s.toString());
        assertEquals(0, s.transfers(), "a context counted as moved on an executor of one worker: " + s);
    }

    @Test
    @Timeout(20)
    void aSubmitRefusedByItsLanesLimitNeverShowsInTheSnapshot() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("refused-flicker").coreThreads(1).maxQueued(1000)
                .maxQueuedPerContext(1).blockedThreshold(Duration.ofSeconds(30)).build());
        Executor lane = e.sequential("a");
        CountDownLatch gate = cleanup.occupy(lane);
        lane.execute(() -> { }); // the one place of the lane
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger accepted = new AtomicInteger();
        Thread refused = new Thread(() -> {
            while (!stop.get()) {
                try {
                    lane.execute(() -> { });
                    accepted.incrementAndGet();
                } catch (RejectedExecutionException expected) {
                    // the lane is full: every one of these is refused
                }
            }
        }, "refused-submitter");
        refused.start();
        try {
            long end = System.nanoTime() + READ_NANOS;
            while (System.nanoTime() - end < 0) {
                ExecutorStatistics s = e.statistics();
                if (s.submitted() != 2 || s.queued() != 1) {
                    fail("a refused submit showed in the snapshot (true: submitted 2, queued 1): " + s);
                }
            }
        } finally {
            stop.set(true);
            refused.join();
            gate.countDown();
        }
        assertEquals(0, accepted.get(), "a submit into a full lane was accepted");
        assertTrue(e.statistics().rejected() > 0, "no submit was refused while the snapshots were read: no race");
    }

    /**
     * The oldest lanes are the ones nearest the ready queue's head, which a worker polls while the walk goes: the walk
     * kept only k of them, dropped those that had started since, and answered fewer than k (often none) while
     * hundreds of lanes waited.
     */
    @Test
    @Timeout(20)
    void busiestContextsAnswersKLanesWhileManyWait() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("busiest-k").coreThreads(1).maxThreads(1).build());
        AtomicBoolean stop = new AtomicBoolean();
        Runnable work = () -> TestSupport.spin(20);
        Thread producer = new Thread(() -> {
            long i = 0;
            while (!stop.get()) {
                if (e.statistics().queued() < 2_000) {
                    e.sequential("lane-" + i++).execute(work);
                } else {
                    Thread.onSpinWait();
                }
            }
        }, "busiest-producer");
        producer.start();
        try {
            TestSupport.waitUntil("a backlog of lanes", () -> e.statistics().queued() >= 1_000);
            int calls = 0;
            int shortAnswers = 0;
            long end = System.nanoTime() + READ_NANOS;
            while (System.nanoTime() - end < 0) {
                for (int k : new int[] {1, 3}) {
                    long before = e.statistics().queued();
                    List<ContextStatistics> busiest = e.busiestContexts(k);
                    for (ContextStatistics c : busiest) {
                        // Listed only with a waiting task: a kept lane that started its last one since the walk is
                        // left out, and here that is most calls, the worker taking the oldest lanes as they are read.
                        assertTrue(c.queued() > 0, () -> "a lane with no waiting task listed: " + busiest);
                    }
                    if (Math.min(before, e.statistics().queued()) < 100) {
                        continue; // only calls with a backlog on both sides count
                    }
                    calls++;
                    if (busiest.size() < k) {
                        shortAnswers++;
                    }
                }
            }
            assertTrue(calls > 0, "no call was made with a backlog");
            // Before the fix 5% to 30% of the calls came back short. A reader descheduled through all its walks may
            // still come back a lane short ("at most k"), which the bound leaves room for.
            assertTrue(shortAnswers <= calls / 100,
                    shortAnswers + " of " + calls + " calls answered fewer than k lanes");
        } finally {
            stop.set(true);
            producer.join();
        }
    }

    /**
     * The walk ordered the lanes by the stamps it saw, but the answer reported each lane's age as read after it: a
     * kept lane whose oldest tasks started in between reported a younger age and still came out ahead of older ones
     * (7 of 6,558 calls in a probe of 8 s; here one worker, so the lane it runs is always among the kept).
     */
    @Test
    @Timeout(20)
    void busiestContextsComesOutOldestFirstWhileTasksStart() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("busiest-order").coreThreads(1).maxThreads(1).build());
        AtomicBoolean stop = new AtomicBoolean();
        Runnable work = () -> TestSupport.spin(5);
        Thread producer = new Thread(() -> {
            Executor[] lanes = new Executor[16];
            for (int i = 0; i < lanes.length; i++) {
                lanes[i] = e.sequential("lane-" + i);
            }
            int i = 0;
            while (!stop.get()) {
                if (e.statistics().queued() < 2_000) {
                    lanes[i++ & (lanes.length - 1)].execute(work);
                } else {
                    Thread.onSpinWait();
                }
            }
        }, "busiest-order-producer");
        producer.start();
        try {
            TestSupport.waitUntil("a backlog", () -> e.statistics().queued() >= 1_000);
            int calls = 0;
            int compared = 0;
            long end = System.nanoTime() + READ_NANOS;
            while (System.nanoTime() - end < 0) {
                List<ContextStatistics> busiest = e.busiestContexts(16);
                calls++;
                for (int i = 1; i < busiest.size(); i++) {
                    compared++;
                    if (busiest.get(i).oldestQueuedAge().compareTo(busiest.get(i - 1).oldestQueuedAge()) > 0) {
                        fail("call " + calls + ": entry " + i + " is older than the one before it: " + busiest);
                    }
                }
            }
            assertTrue(compared > 0, "no call listed two lanes: nothing was compared in " + calls + " calls");
        } finally {
            stop.set(true);
            producer.join();
        }
    }

    /**
     * {@code active()} counted busy workers, and a worker stays busy for a moment after its lane's last task, while it
     * looks for more in that lane: a snapshot in which every submitted task had run still showed a task running.
     * SPEC: {@code active()} is the number of tasks running now.
     */
    @Test
    @Timeout(20)
    void aSnapshotInWhichEveryTaskHasRunShowsNoneRunning() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("active-exact").coreThreads(1).build());
        Executor lane = e.sequential("a");
        long end = System.nanoTime() + READ_NANOS;
        long tasks = 0;
        while (System.nanoTime() - end < 0) {
            lane.execute(() -> { });
            tasks++;
            ExecutorStatistics s;
            do {
                s = e.statistics();
            } while (s.executed() < tasks);
            if (s.executed() == s.submitted() && s.active() != 0) {
                fail("task " + tasks + ": every task ran, yet " + s.active() + " running: " + s);
            }
        }
    }

    /**
     * A future completes inside its task's run, and the worker counted the task as executed only after that run: a
     * caller woken by {@code get()} then read one too few in {@code executed()} (and one running in {@code active()})
     * in about two of five snapshots. Futures that succeed and futures that fail, one at a time.
     */
    @Test
    @Timeout(20)
    void aFutureSeenDoneIsSeenExecuted() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("done-executed").coreThreads(1)
                .uncaughtExceptionHandler((t, x) -> { }).build());
        long end = System.nanoTime() + READ_NANOS;
        for (long n = 1; System.nanoTime() - end < 0; n++) {
            boolean fails = (n & 1) == 0;
            java.util.concurrent.Future<String> f = e.submit(() -> {
                if (fails) {
                    throw new IllegalStateException("fails");
                }
                return "ran";
            });
            try {
                f.get(10, TimeUnit.SECONDS);
            } catch (ExecutionException expected) {
                // the failing ones
            }
            ExecutorStatistics s = e.statistics();
            if (s.executed() != n || s.active() != 0) {
                fail("future " + n + " is done: " + s);
            }
        }
    }

    /**
     * A worker start reserves its slot before the factory is called; a factory that took 20 ms to fail showed that
     * slot in {@code threads()} and {@code peakThreads()}, and the peak then went back down.
     */
    @Test
    @Timeout(20)
    void aStartThatFailsNeverCountsAsAThread() throws Exception {
        AtomicInteger made = new AtomicInteger();
        ThreadFactory slowToFail = r -> {
            if (made.getAndIncrement() < 2) {
                return new Thread(r); // the first worker and the checker
            }
            TestSupport.sleep(20);
            throw new IllegalStateException("no more threads");
        };
        GatlingExecutor e = cleanup.track(gatling("slow-factory").coreThreads(1).maxThreads(4)
                .threadFactory(slowToFail).checkPeriod(Duration.ofMillis(20))
                .blockedThreshold(Duration.ofMillis(20)).build());
        CountDownLatch gate = cleanup.occupy(e);
        for (int i = 0; i < 3; i++) {
            e.execute(() -> { }); // waits behind the stuck worker: the checker keeps trying to start another
        }
        try {
            long end = System.nanoTime() + READ_NANOS;
            while (System.nanoTime() - end < 0) {
                ExecutorStatistics s = e.statistics();
                if (s.threads() != 1 || s.peakThreads() != 1) {
                    fail("one worker thread ever ran, yet: " + s);
                }
            }
            assertTrue(e.statistics().threadStartFailures() > 0, "the factory was never asked again");
        } finally {
            gate.countDown();
        }
    }

    /**
     * The core size was read after the pool's counters, outside the lock a core bump takes: a snapshot taken while a
     * bump landed showed the configured core size plus a bump that {@code coreBumps()} did not count yet. Here every
     * auxiliary start is a bump, and the pool grows by one bump after another while snapshots are read.
     */
    @Test
    @Timeout(30)
    void theCoreSizeIsTheConfiguredOnePlusTheBumpsCounted() throws Exception {
        int tasks = 48;
        GatlingExecutor e = cleanup.track(gatling("bumps").coreThreads(1).maxThreads(tasks).coreBumpThreshold(1)
                .checkPeriod(Duration.ofMillis(1)).blockedThreshold(Duration.ofMillis(1)).build());
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(tasks);
        for (int i = 0; i < tasks; i++) {
            e.execute(() -> { // each holds its worker, blocked: the work behind it needs another thread
                started.countDown();
                TestSupport.blockQuietly(gate);
            });
        }
        try {
            long snapshots = 0;
            while (started.getCount() > 0) {
                ExecutorStatistics s = e.statistics();
                snapshots++;
                if (s.coreThreads() != 1 + s.coreBumps()) {
                    fail("after " + snapshots + " snapshots: " + s);
                }
            }
            ExecutorStatistics s = e.statistics();
            assertEquals(1 + s.coreBumps(), s.coreThreads(), s.toString());
            assertTrue(s.coreBumps() >= tasks / 2, "the pool grew by bumps too seldom to tell: " + s);
        } finally {
            gate.countDown();
        }
    }

    /**
     * After {@code shutdownNow} a lane whose task ignores the interrupt is closed, and {@code contextStatistics()}
     * listed only active lanes: the context with a running task vanished. Its figures also counted the returned task
     * as executed.
     */
    @Test
    @Timeout(20)
    void aLaneWhoseTaskStillRunsAfterShutdownNowIsStillListed() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("listed-after-now").coreThreads(2)
                .blockedThreshold(Duration.ofSeconds(30)).build());
        CountDownLatch release = cleanup.gate();
        CountDownLatch running = new CountDownLatch(2);
        Runnable ignoresInterrupts = () -> {
            running.countDown();
            while (release.getCount() > 0) {
                try {
                    release.await();
                } catch (InterruptedException ignored) {
                    // keeps running after shutdownNow
                }
            }
        };
        e.sequential("s").execute(ignoresInterrupts);
        e.coalescing("c").execute(ignoresInterrupts);
        await(running, "both tasks to start");
        e.sequential("s").execute(() -> { });
        e.coalescing("c").execute(() -> { });
        assertEquals(2, e.shutdownNow().size());
        ContextStatistics s = lane(e, "s", false);
        ContextStatistics c = lane(e, "c", true);
        assertNotNull(s, () -> "sequential lane with a running task not listed: " + e.contextStatistics());
        assertNotNull(c, () -> "coalescing lane with a running task not listed: " + e.contextStatistics());
        assertEquals(2, s.submitted());
        assertEquals(1, s.executed(), "the returned task counted as executed: " + s);
        assertEquals(0, s.queued());
        release.countDown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
    }

    /**
     * What {@code shutdownNow()} returns has left the queue: {@code queued()} counts it no more, {@code returned()}
     * does, before termination and after it. A snapshot that forgot the returned tasks in what left the queue kept
     * them as waiting for good, on an executor that would never run them.
     */
    @Test
    @Timeout(20)
    void theTasksShutdownNowReturnsAreNoLongerQueued() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("returned-not-queued").coreThreads(1).maxThreads(1).build());
        CountDownLatch gate = cleanup.occupy(e.sequential("held"));
        e.sequential("held").execute(() -> { }); // behind the held task, in the held lane
        e.sequential("s").execute(() -> { });
        e.sequential("s").execute(() -> { });
        e.coalescing("c").execute(() -> { });
        e.execute(() -> { });
        ExecutorStatistics before = e.statistics();
        assertEquals(5, before.queued(), before.toString());
        assertEquals(5, e.shutdownNow().size());
        ExecutorStatistics after = e.statistics();
        assertEquals(5, after.returned(), after.toString());
        assertEquals(0, after.queued(), "returned tasks still counted as waiting: " + after);
        assertEquals(Duration.ZERO, after.oldestQueuedAge(), after.toString());
        gate.countDown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
        ExecutorStatistics terminated = e.statistics();
        assertEquals(0, terminated.queued(), terminated.toString());
        assertEquals(terminated.submitted(), terminated.executed() + terminated.returned(), terminated.toString());
    }

    /**
     * A lane's figures were read submitted first: a burst between the reads showed more executed than submitted
     * (submitted 1, executed 1544).
     */
    @Test
    @Timeout(20)
    void aLanesFiguresNeverShowMoreRunOrWaitingThanSubmitted() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("lane-coherent").coreThreads(1).build());
        AtomicBoolean stop = new AtomicBoolean();
        Thread producer = new Thread(() -> {
            Executor lane = e.sequential("s");
            while (!stop.get()) {
                lane.execute(() -> { });
            }
        }, "lane-producer");
        producer.start();
        try {
            long seen = 0;
            long end = System.nanoTime() + READ_NANOS;
            while (System.nanoTime() - end < 0) {
                for (ContextStatistics cs : e.contextStatistics()) {
                    seen++;
                    if (cs.executed() + cs.queued() > cs.submitted()) {
                        fail("more ran or waits than was submitted: " + cs);
                    }
                }
            }
            assertTrue(seen > 0, "the lane was never listed: nothing was checked");
        } finally {
            stop.set(true);
            producer.join();
        }
    }

    /**
     * A coalescing submit counts itself in its lane just after the CAS that makes its task wait, so a lane read between
     * the two shows a task waiting that its submitted count does not hold yet: the snapshot raises submitted to what
     * ran and waits (see Snapshots#statisticsOf). No caller's code runs between the CAS and the count, and the
     * randomized test above submits to a sequential lane, whose count is taken before its task is stored: only a
     * debugger holds the submitter there. Without the raise, the new lane read queued 1 and submitted 0. The child's
     * main thread reads only once the submitter is held: its task waiting is seen from just after the CAS, before the
     * submitter reaches the held line, and a read that came first met the debugger out of order (once in a CI run).
     * Either thread may reach the meeting first; the hits once listed the main thread as held at the first count, where
     * the assertion wanted nothing held (one round in seventeen of a repetition), an order the meeting itself handles.
     */
    @Test
    void aCoalescingLaneReadBetweenItsSubmitsCasAndItsCountShowsNoMoreWaitingThanSubmitted() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting counting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(CountAfterCasChild.class, List.of(
                DebuggedChild.Spot.line("counted", CoalescingLane.class, "SUBMITTED.getAndAdd(this, 1L);"),
                DebuggedChild.Spot.entry("held", CountAfterCasChild.class, "held"),
                DebuggedChild.Spot.entry("read", CountAfterCasChild.class, "read")),
                (spot, thread, held) -> {
                    if (spot.equals("held")) { // the child's main thread, waiting for the submitter to be held
                        return counting.mainReady(thread);
                    }
                    // Only the read's held threads are asserted: at the first count the main thread may be held
                    // already (it reached held() first; the meeting then lets it go) or not yet.
                    hits.add(spot.equals("read") ? spot + " (holding " + held.size() + ")" : spot);
                    if (spot.equals("counted")) {
                        // the first submitter waits between its CAS and its count; the second goes on
                        return counting.reached() || counting.windowReached(thread, held);
                    }
                    DebuggedChild.resumeAll(held); // the child has read the lane
                    return true;
                });
        assertEquals(List.of("counted", "read (holding 1)", "counted"), hits, out);
        assertTrue(out.contains(CountAfterCasChild.COHERENT), out);
    }

    /** The child JVM of {@link #aCoalescingLaneReadBetweenItsSubmitsCasAndItsCountShowsNoMoreWaitingThanSubmitted}. */
    static final class CountAfterCasChild {
        static final String COHERENT = "child: submitted covers what waits";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("count-after-cas").coreThreads(1).build();
            Thread submitter = new Thread(() -> e.execute(new TestSupport.Coal("c", () -> { })), "submitter");
            submitter.setDaemon(true);
            submitter.start();
            TestSupport.waitUntil("the task waiting in its new lane", () -> {
                ContextStatistics c = lane(e, "c", true);
                return c != null && c.queued() == 1;
            });
            held(); // until the submitter is held between its CAS and its count
            ContextStatistics c = lane(e, "c", true);
            System.out.println(c.submitted() >= c.executed() + c.queued() ? COHERENT : "child: " + c);
            read();
            submitter.join(10_000);
            // A second submit, unheld, shows the breakpoint still set: the test sees it hit twice.
            e.execute(new TestSupport.Coal("c", () -> { }));
            e.shutdown();
            System.out.println("child: terminated " + e.awaitTermination(10, TimeUnit.SECONDS));
            System.exit(0);
        }

        /** Where the main thread waits until the debugger holds the submitter. */
        static void held() {
        }

        /** Where the debugger lets the submitter go on. */
        static void read() {
        }

        private CountAfterCasChild() {
        }
    }

    /**
     * {@code contextStatistics()} read the lanes workers named first, then the maps: a worker names its lane until its
     * batch returns, and meanwhile the lane could go idle, be released (a bounded executor releases an idle lane when
     * it refuses a submit) and give way to a new lane of the same context, which the map walk then listed beside it. A
     * caller that keyed the list by context met a duplicate key: 1 to 33,000 of a 2-second run's calls listed a context
     * twice, in every run.
     */
    @Test
    @Timeout(20)
    void contextStatisticsListsEachContextOnceWhileLanesComeAndGo() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("listed-once").coreThreads(2).maxQueued(8).build());
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] producers = new Thread[2];
        for (int p = 0; p < producers.length; p++) {
            producers[p] = new Thread(() -> {
                int i = 0;
                while (!stop.get()) {
                    int context = i++ & 7;
                    try {
                        e.execute(new TestSupport.Seq(context, () -> { }));
                    } catch (RejectedExecutionException full) {
                        // the executor is full: the refusal is what releases idle lanes at once
                    }
                }
            }, "listed-once-producer-" + p);
            producers[p].start();
        }
        try {
            long listed = 0;
            long end = System.nanoTime() + 2 * READ_NANOS;
            while (System.nanoTime() - end < 0) {
                Map<Object, ContextStatistics> byContext = new HashMap<>();
                for (ContextStatistics cs : e.contextStatistics()) {
                    listed++;
                    ContextStatistics before = byContext.put(cs.context(), cs);
                    if (before != null) {
                        fail("context listed twice in one call: " + before + " and " + cs);
                    }
                }
            }
            assertTrue(listed > 0, "no context was ever listed: nothing was checked");
            assertTrue(e.statistics().rejected() > 0, "no submit was refused, so no lane was released at once");
        } finally {
            stop.set(true);
            for (Thread t : producers) {
                t.join();
            }
        }
    }

    /** How the ping-pong producer below submits each task. */
    enum Outcome {
        RUNS, THROWS, FAILS_ITS_FUTURE
    }

    /**
     * The workers' counts were read started, then executed (and failed), per worker: a task that started after the
     * first read and ended before the second counted as executed (or failed) but not as started, and the snapshot's
     * {@code submitted} (raised to what had started) came out below {@code executed} (submitted 2, executed 3, in the
     * first milliseconds of a fresh executor, where a submit counts itself just after its task may already have run).
     * A failure, counted before its task counts as executed, also read above {@code executed}.
     */
    @ParameterizedTest
    @EnumSource(Outcome.class)
    @Timeout(30)
    void theSnapshotNeverShowsMoreRunThanSubmittedNorMoreFailedThanRun(Outcome outcome) throws Exception {
        // A few fresh executors in turn: the reads race most often once the reader and the workers are compiled.
        for (int round = 0; round < 6; round++) {
            GatlingExecutor e = cleanup.track(gatling("run-coherent").coreThreads(2)
                    .uncaughtExceptionHandler((t, x) -> { }).build());
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger ran = new AtomicInteger();
            Thread producer = new Thread(() -> {
                // One task at a time, each to a lane that has gone idle: a searching worker starts it at once, often
                // before its submit has counted itself, which is the window the snapshot must cover.
                int n = 0;
                while (!stop.get()) {
                    int target = ++n;
                    Runnable task = () -> {
                        ran.incrementAndGet();
                        if (outcome != Outcome.RUNS) {
                            throw new IllegalStateException("expected");
                        }
                    };
                    if (outcome == Outcome.FAILS_ITS_FUTURE) {
                        e.submit(new TestSupport.Seq(n & 63, task));
                    } else {
                        e.sequential(n & 63).execute(task);
                    }
                    while (ran.get() < target && !stop.get()) {
                        Thread.onSpinWait();
                    }
                }
            }, "ping-pong-producer");
            producer.start();
            try {
                long end = System.nanoTime() + READ_NANOS;
                while (System.nanoTime() - end < 0) {
                    ExecutorStatistics s = e.statistics();
                    if (s.executed() + s.coalesced() + s.returned() > s.submitted() || s.failed() > s.executed()) {
                        fail("more ran than was submitted, or more failed than ran: " + s);
                    }
                }
            } finally {
                stop.set(true);
                producer.join();
            }
            e.shutdown();
            assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
        }
    }

    /**
     * A failure counted in {@code failed()} before its future completes, and a cancel landing between the count and
     * the completion: the cancel won the future, the count was taken back, and a snapshot between the two read
     * {@code failed()} one higher than the next (a counter exported to Micrometer then went backwards). Shown with the
     * window widened by a pause in the code; unwidened it is tens of nanoseconds, so this run of cancels racing
     * failures rarely lands in it. What it checks every time: {@code failed()} never goes down; a cancel that returns
     * false leaves the future done (the failure's claim made it wait); and at the end {@code failed()} is exactly the
     * futures that completed with their task's throwable.
     */
    @Test
    @Timeout(30)
    void failedNeverGoesDownWhileCancelsRaceFailures() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("cancel-vs-failure").coreThreads(2).build());
        AtomicBoolean stop = new AtomicBoolean();
        List<Future<?>> futures = new CopyOnWriteArrayList<>();
        AtomicInteger notDoneAfterCancel = new AtomicInteger();
        Thread canceller = new Thread(() -> {
            Random random = new Random(42);
            while (!stop.get()) {
                Future<?> f = e.submit(() -> {
                    throw new IllegalStateException("expected");
                });
                futures.add(f);
                for (int spins = random.nextInt(400); spins > 0; spins--) {
                    Thread.onSpinWait(); // lands the cancel before, during or after the run, at random
                }
                if (!f.cancel(random.nextBoolean()) && !f.isDone()) {
                    notDoneAfterCancel.incrementAndGet();
                }
            }
        }, "canceller");
        canceller.start();
        long previous = 0;
        try {
            long end = System.nanoTime() + READ_NANOS;
            while (System.nanoTime() - end < 0) {
                long failed = e.statistics().failed();
                if (failed < previous) {
                    fail("failed() went down from " + previous + " to " + failed);
                }
                previous = failed;
            }
        } finally {
            stop.set(true);
            canceller.join();
        }
        TestSupport.awaitQuiescent(e);
        assertEquals(0, notDoneAfterCancel.get(), "cancels that returned false before the future was done");
        long failedFutures = 0;
        for (Future<?> f : futures) {
            if (!f.isCancelled()) {
                try {
                    f.get();
                } catch (ExecutionException expected) {
                    failedFutures++;
                }
            }
        }
        assertEquals(failedFutures, e.statistics().failed(), "failed() against the futures that failed");
        assertTrue(failedFutures > 0 && failedFutures < futures.size(),
                "no race: " + failedFutures + " of " + futures.size() + " futures failed, the others were cancelled");
    }
}
