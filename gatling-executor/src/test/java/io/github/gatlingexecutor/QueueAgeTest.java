package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.awaitQuiescent;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.hold;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** SPEC "Observability": queued versus running, oldest-task ages (executor and lane), busiestContexts. */
@Timeout(60)
class QueueAgeTest {

    @RegisterExtension
    final ExecutorValidation v = new ExecutorValidation();

    /**
     * Asserts that {@code age}, of a task submitted after {@code before} and read before {@code after} (System.nanoTime
     * readings), comes from a stamp taken at its submit. The task's true age is at most what the test thread measured:
     * on a loaded machine the worker the test waits for, or the test thread itself, may be off the CPU for a long while
     * after the submit, and the task ages meanwhile (a fixed bound read 264 ms there). The stamp may lag the submit by
     * the coarse clock's tick, which load can delay as well; 100 ms covers that, well under the lag of the stale clocks
     * these tests pin (300 ms to a check period).
     */
    private static void assertStampedAtItsSubmit(Duration age, long before, long after, String task) {
        long bound = after - before + TimeUnit.MILLISECONDS.toNanos(100);
        assertTrue(age.toNanos() <= bound, task + ": an age of " + age + ", read " + Duration.ofNanos(after - before)
                + " after its submit");
    }

    private static GatlingExecutor.Builder oneWorker(String name) {
        return gatling(name).coreThreads(1).maxThreads(1);
    }

    /**
     * An idle executor's checker dozes for a check period; each of its rounds set the stale clock to its own reading
     * and left it there while it dozed, so the next tasks were stamped with a time up to a period old: accepted a
     * moment before, a task read an age of up to a second here (three rounds, at times unrelated to the checker's).
     */
    @Test
    void aTaskSubmittedToAnIdleExecutorReadsItsTrueAge() {
        GatlingExecutor ex = v.track(oneWorker("dozing-clock").checkPeriod(Duration.ofSeconds(1))
                .blockedThreshold(Duration.ofSeconds(10)).build());
        for (int round = 0; round < 3; round++) {
            CountDownLatch ran = new CountDownLatch(1);
            ex.execute(ran::countDown);
            await(ran, "a first task");
            TestSupport.sleep(1_300 + 200 * round); // the worker parks; the checker makes a round and dozes
            waitUntil("the checker to doze, every worker parked", () -> ex.engine().checker.isDozing());
            // Two tasks at once, before the woken worker is back (it marks the clock stale when it is): it runs one,
            // the other waits.
            CountDownLatch gate = v.gate();
            long before = System.nanoTime();
            ex.sequential("a").execute(() -> TestSupport.blockQuietly(gate));
            ex.sequential("b").execute(() -> TestSupport.blockQuietly(gate));
            waitUntil("one task to run and one to wait", () -> {
                ExecutorStatistics s = ex.statistics();
                return s.active() == 1 && s.queued() == 1;
            });
            Duration age = ex.statistics().oldestQueuedAge();
            long after = System.nanoTime();
            gate.countDown();
            assertStampedAtItsSubmit(age, before, after, "round " + round);
        }
    }

    /**
     * A worker woken from its park into a long first item leaves telling the dozing checker for after that item. A
     * second submit meanwhile restarted the clock that worker had marked stale, and the checker dozed on, so every
     * task appended later was stamped with that submit's time, up to a check period back (a task accepted 300 ms
     * later read an age of 300 ms the moment it was accepted).
     */
    @Test
    void aTaskSubmittedWhileAWokenWorkerRunsALongFirstItemReadsItsTrueAge() {
        GatlingExecutor ex = v.track(oneWorker("long-first-item").checkPeriod(Duration.ofSeconds(5))
                .blockedThreshold(Duration.ofSeconds(30)).build());
        CountDownLatch ran = new CountDownLatch(1);
        ex.execute(ran::countDown);
        await(ran, "a first task");
        waitUntil("the checker to doze, every worker parked", () -> ex.engine().checker.isDozing());
        CountDownLatch gate = v.gate();
        hold(ex.sequential("a"), gate);
        ex.sequential("a").execute(() -> { }); // restarts the clock the woken worker marked stale
        TestSupport.sleep(300);
        long before = System.nanoTime();
        ex.sequential("b").execute(() -> { });
        Duration age = ex.busiestContexts(2).stream().filter(c -> c.context().equals("b")).findFirst()
                .orElseThrow().oldestQueuedAge();
        long after = System.nanoTime();
        gate.countDown();
        assertStampedAtItsSubmit(age, before, after, "b");
    }

    /**
     * The checker stops ticking the coarse clock while nothing flows, and must start again when anyone sets the clock.
     * A worker that set it at the end of a batch (without waking the checker) and then went into a long task left it
     * frozen there: a task submitted 400 ms later read an age of about 340 ms the moment it was accepted.
     */
    @Test
    void aTaskStampedAfterAQuietSpellReadsItsTrueAge() {
        GatlingExecutor ex = v.track(oneWorker("frozen-clock").batchSize(4)
                .minTurn(Duration.ZERO).checkPeriod(Duration.ofSeconds(1))
                .blockedThreshold(Duration.ofSeconds(10)).build());
        CountDownLatch gate = v.gate();
        Executor lane = ex.sequential("b");
        lane.execute(() -> TestSupport.sleep(60)); // the checker's clock stalls meanwhile: nothing else flows
        for (int i = 0; i < 3; i++) {
            lane.execute(() -> { });
        }
        lane.execute(() -> TestSupport.blockQuietly(gate)); // the next batch: the worker ticks, then waits long
        TestSupport.sleep(400);
        long before = System.nanoTime();
        ex.sequential("d").execute(() -> { });
        Duration age = TestSupport.lane(ex, "d", false).oldestQueuedAge();
        long after = System.nanoTime();
        gate.countDown();
        assertStampedAtItsSubmit(age, before, after, "d");
    }

    /**
     * A thread start can take long (here a factory that takes 150 ms a thread), and until the first worker and the
     * checker run, nobody ticks the coarse clock: it held the time of the submit that asked for them, so a task
     * submitted right after their starts was stamped with that time and read an age of 300 ms the moment it was
     * accepted. The threads wait for the test before they run anything of the executor's, so only the starts
     * themselves can have brought the clock up to date.
     */
    @Test
    void aTaskSubmittedRightAfterSlowThreadStartsReadsItsTrueAge() {
        CountDownLatch go = v.gate();
        ThreadFactory slow = r -> {
            TestSupport.sleep(150);
            Thread t = new Thread(() -> {
                TestSupport.blockQuietly(go);
                r.run();
            });
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor ex = v.track(oneWorker("slow-starts").threadFactory(slow).build());
        ex.sequential("a").execute(() -> { }); // starts the worker, then the checker
        long before = System.nanoTime();
        ex.sequential("b").execute(() -> { });
        Duration age = TestSupport.lane(ex, "b", false).oldestQueuedAge();
        long after = System.nanoTime();
        go.countDown();
        assertStampedAtItsSubmit(age, before, after, "b");
    }

    @Test
    void aRunningTaskIsNotQueued() {
        GatlingExecutor ex = v.track(gatling("running").build());
        CountDownLatch gate = v.gate();
        hold(ex.sequential("k"), gate);
        ex.sequential("k").execute(() -> { });
        ex.sequential("k").execute(() -> { });
        assertEquals(2, ex.statistics().queued());
        assertEquals(1, ex.statistics().active());
        ContextStatistics lane = TestSupport.lane(ex, "k", false);
        assertEquals(2, lane.queued());
        gate.countDown();
        assertEquals(0, awaitQuiescent(ex).queued());
    }

    @Test
    void oldestQueuedAgeGrowsWhileHeldBackAndReturnsToZero() {
        GatlingExecutor ex = v.track(oneWorker("age").build());
        assertEquals(Duration.ZERO, ex.statistics().oldestQueuedAge());
        CountDownLatch gate = v.gate();
        hold(ex, gate);
        long before = System.nanoTime();
        ex.sequential("k").execute(() -> { });
        ex.execute(() -> { });
        TestSupport.sleep(60);
        long waitedAtLeast = System.nanoTime() - before;
        Duration first = ex.statistics().oldestQueuedAge();
        // Stamps come from a coarse clock refreshed every few ms, so the age may read a little more than the wait.
        assertTrue(first.toNanos() >= Duration.ofMillis(50).toNanos(), first.toString());
        assertTrue(first.toNanos() <= waitedAtLeast + Duration.ofMillis(500).toNanos(), first.toString());
        Duration laneAge = TestSupport.lane(ex, "k", false).oldestQueuedAge();
        assertTrue(laneAge.toMillis() >= 50, laneAge.toString());
        TestSupport.sleep(30);
        Duration later = ex.statistics().oldestQueuedAge();
        assertTrue(later.compareTo(first) > 0, "the age keeps growing while every worker is stuck: " + later);
        gate.countDown();
        awaitQuiescent(ex);
        assertEquals(Duration.ZERO, ex.statistics().oldestQueuedAge());
    }

    @Test
    void aTaskAcceptedAfterAQuietSpellIsNotStampedWithAnOldTime() {
        GatlingExecutor ex = v.track(oneWorker("quiet").build());
        ex.execute(() -> { });
        awaitQuiescent(ex);
        TestSupport.sleep(300); // every worker parks: nobody refreshes the coarse clock
        waitUntil("the checker to doze, every worker parked", () -> ex.engine().checker.isDozing());
        CountDownLatch gate = v.gate();
        hold(ex, gate);
        long before = System.nanoTime();
        ex.execute(() -> { });
        Duration age = ex.statistics().oldestQueuedAge();
        assertStampedAtItsSubmit(age, before, System.nanoTime(), "the task after a quiet spell");
        gate.countDown();
        awaitQuiescent(ex);
    }

    /**
     * A worker woken from a park tells the dozing checker only once it goes on past its first item, so while that item
     * runs nobody ticks the coarse clock, and the dozing checker's last tick may be a check period old. The worker
     * marks the clock stale instead: a task accepted behind that item is stamped with the time of its own submit.
     */
    @Test
    void aTaskQueuedBehindTheFirstItemAfterAParkReadsItsTrueAge() {
        GatlingExecutor ex = v.track(oneWorker("first-item").checkPeriod(Duration.ofSeconds(1))
                .blockedThreshold(Duration.ofSeconds(10)).build());
        ex.execute(() -> { });
        awaitQuiescent(ex);
        TestSupport.sleep(300); // the worker parks and the checker dozes: its last tick grows old
        waitUntil("the checker to doze, every worker parked", () -> ex.engine().checker.isDozing());
        CountDownLatch gate = v.gate();
        hold(ex, gate); // the first item after the park
        TestSupport.sleep(300);
        long before = System.nanoTime();
        ex.sequential("late").execute(() -> { });
        Duration age = ex.statistics().oldestQueuedAge();
        long after = System.nanoTime();
        gate.countDown();
        assertStampedAtItsSubmit(age, before, after, "late");
    }

    @Test
    void aCoalescingReplacementKeepsTheStampOfWhatItReplaced() {
        GatlingExecutor ex = v.track(oneWorker("stale").build());
        CountDownLatch gate = v.gate();
        hold(ex, gate);
        ex.coalescing("price").execute(() -> { });
        TestSupport.sleep(60);
        ex.coalescing("price").execute(() -> { }); // replaces: the lane is as stale as its oldest unserved update
        ContextStatistics lane = TestSupport.lane(ex, "price", true);
        assertEquals(1, lane.queued());
        assertTrue(lane.oldestQueuedAge().toMillis() >= 50, lane.toString());
        gate.countDown();
        awaitQuiescent(ex);
    }

    @Test
    void busiestContextsAreTheLanesWithTheOldestWaitingTasks() {
        GatlingExecutor ex = v.track(oneWorker("busiest").build());
        CountDownLatch gate = v.gate();
        hold(ex, gate);
        ex.sequential("a").execute(() -> { });
        TestSupport.nextStampLater(ex);
        ex.sequential("b").execute(() -> { });
        ex.sequential("b").execute(() -> { });
        TestSupport.nextStampLater(ex);
        ex.coalescing("c").execute(() -> { });
        ex.execute(() -> { }); // an unordered task is no lane: never listed
        waitUntil("three lanes listed", () -> ex.busiestContexts(10).size() == 3);
        List<Object> top2 = ex.busiestContexts(2).stream().map(ContextStatistics::context)
                .collect(Collectors.toList());
        assertEquals(List.of("a", "b"), top2);
        List<ContextStatistics> all = ex.busiestContexts(10);
        assertEquals(List.of("a", "b", "c"), all.stream().map(ContextStatistics::context).collect(Collectors.toList()));
        assertEquals(2, all.get(1).queued());
        assertTrue(all.get(2).coalescing());
        assertTrue(ex.busiestContexts(0).isEmpty());
        gate.countDown();
        awaitQuiescent(ex);
        assertTrue(ex.busiestContexts(10).isEmpty());
    }

    /**
     * Of many waiting lanes, {@code busiestContexts(k)} keeps the k oldest, oldest first, and with a k above the
     * number waiting it lists them all. Stamps come from a coarse clock, so lanes submitted close together tie: the
     * checks are on ages, not on an exact order of contexts.
     */
    @Test
    void busiestContextsKeepsTheOldestKOfManyWaitingLanes() {
        GatlingExecutor ex = v.track(oneWorker("busiest-many").build());
        CountDownLatch gate = v.gate();
        hold(ex, gate);
        int lanes = 3_000;
        for (int i = 0; i < lanes; i++) {
            ex.sequential(i).execute(() -> { });
            if (i % 500 == 0) {
                TestSupport.sleep(5); // a few distinct stamps
            }
        }
        List<ContextStatistics> all = ex.busiestContexts(Integer.MAX_VALUE);
        assertEquals(lanes, all.size());
        assertOldestFirst(all);
        assertEquals(lanes, all.stream().map(ContextStatistics::context).distinct().count(), "a lane listed twice");
        for (int k : new int[] {1, 10, 700, lanes - 1}) {
            List<ContextStatistics> top = ex.busiestContexts(k);
            assertEquals(k, top.size());
            assertOldestFirst(top);
            // No lane left out is older than a kept one. Both lists come from the same held worker, so no lane
            // changed between them; ages are compared within the one list of all, so both sides are of one moment.
            Map<Object, Duration> age = new HashMap<>();
            all.forEach(c -> age.put(c.context(), c.oldestQueuedAge()));
            Duration youngestKept = top.stream().map(c -> age.get(c.context()))
                    .min(Comparator.naturalOrder()).orElseThrow();
            Set<Object> keptContexts = top.stream().map(ContextStatistics::context)
                    .collect(Collectors.toSet());
            for (ContextStatistics c : all) {
                if (!keptContexts.contains(c.context())) {
                    assertTrue(c.oldestQueuedAge().compareTo(youngestKept) <= 0,
                            "k=" + k + ": left out " + c + ", older than a kept lane (" + youngestKept + ")");
                }
            }
        }
        gate.countDown();
        awaitQuiescent(ex);
    }

    /**
     * A lane whose task runs is held by its worker, out of the ready queue, and what waits behind that task is only
     * there: the executor's oldest age and {@code busiestContexts} must look at the workers' lanes too. Read from the
     * ready queue alone, a backlog stuck behind a blocked task read an age of zero and was listed nowhere.
     */
    @Test
    void theBacklogBehindARunningTaskCountsInTheAgeAndTheBusiestLanes() {
        GatlingExecutor ex = v.track(oneWorker("behind-running").build());
        CountDownLatch gate = v.occupy(ex.sequential("k")); // k's first task runs, and blocks
        ex.sequential("k").execute(() -> { });
        TestSupport.sleep(60); // the waiting task ages; nothing else waits anywhere
        ExecutorStatistics s = ex.statistics();
        assertEquals(1, s.queued(), s.toString());
        assertTrue(s.oldestQueuedAge().toMillis() >= 50, "the task waiting behind k's running one: " + s);
        List<ContextStatistics> busiest = ex.busiestContexts(5);
        assertEquals(List.of("k"), busiest.stream().map(ContextStatistics::context).collect(Collectors.toList()));
        assertEquals(1, busiest.get(0).queued());
        assertTrue(busiest.get(0).oldestQueuedAge().toMillis() >= 50, busiest.toString());
        gate.countDown();
        awaitQuiescent(ex);
    }

    /**
     * A lane its worker emptied while other work waited is sent round the ready queue once more, still active, with an
     * entry marked as holding nothing (see SequentialLane#runBatch); a task submitted to it then is a plain append,
     * and only the lane knows it waits. Here the only worker empties a, then blocks in b's task, so a's marked entry
     * stays in the queue with a task behind it; the checker, held at its start, makes no look that could take the
     * entry out (see Checker#releaseStrandedRounds). The walk must follow such an entry to its lane: taken as empty,
     * the waiting task read an age of zero and its context was missing from {@code busiestContexts}. Whether a goes
     * round rests on the trip being short (ROUND_LIMIT_NANOS, by the coarse clock); a round where it went idle
     * instead (it is then not listed at all) is tried again with new contexts.
     */
    @Test
    void aTaskWaitingInALaneSentRoundEmptyCountsInTheAgeAndTheBusiestLanes() {
        CountDownLatch checkerGate = v.gate();
        GatlingExecutor ex = v.track(oneWorker("sent-round").threadFactory(
                r -> TestSupport.isChecker(r) ? TestSupport.heldChecker(r, checkerGate) : new Thread(r)).build());
        for (int attempt = 0; ; attempt++) {
            assertTrue(attempt < 20, "a lane emptied while other work waited never went round the queue");
            String a = "a" + attempt;
            String b = "b" + attempt;
            CountDownLatch gate = v.gate();
            CountDownLatch blocking = new CountDownLatch(1);
            ex.execute(() -> { // queues a, then b, from the worker itself: a's trip round the queue is short
                ex.execute(new TestSupport.Seq(a, () -> { }));
                ex.execute(new TestSupport.Seq(b, () -> {
                    blocking.countDown();
                    TestSupport.blockQuietly(gate);
                }));
            });
            await(blocking, "b's task to hold the worker");
            if (TestSupport.lane(ex, a, false) == null) {
                gate.countDown(); // a went idle: no marked entry this time
                awaitQuiescent(ex);
                continue;
            }
            ex.execute(new TestSupport.Seq(a, () -> { })); // appended to the active lane: no entry of its own
            TestSupport.sleep(60); // the waiting task ages
            ExecutorStatistics s = ex.statistics();
            assertEquals(1, s.queued(), s.toString());
            assertTrue(s.oldestQueuedAge().toMillis() >= 50, "the task waiting in a lane sent round: " + s);
            List<ContextStatistics> busiest = ex.busiestContexts(5);
            assertEquals(List.of(a), busiest.stream().map(ContextStatistics::context).collect(Collectors.toList()));
            assertEquals(1, busiest.get(0).queued());
            gate.countDown();
            awaitQuiescent(ex);
            return;
        }
    }

    /**
     * The walk meets lanes in ready-queue order, which is not the order of their ages once lanes have gone round: a
     * lane that ran a batch goes to the back with the stamp of its next waiting task. Here every lane has gone round
     * once and the queue holds them youngest first, so each lane the walk meets is older than all those kept so far
     * and must push the youngest kept one out: the heap of kept lanes has to keep its youngest at the root through
     * every such exchange (a root that was not the youngest answered with lanes younger than some it left out).
     */
    @Test
    void busiestContextsKeepsTheOldestKWhenTheWalkMeetsTheYoungestFirst() {
        GatlingExecutor ex = v.track(oneWorker("busiest-reversed").batchSize(1).minTurn(Duration.ZERO).build());
        CountDownLatch first = v.gate();
        hold(ex, first);
        int lanes = 12;
        for (int i = 0; i < lanes; i++) {
            ex.sequential(i).execute(() -> { }); // the lanes enter the ready queue in this order
        }
        CountDownLatch second = v.gate();
        CountDownLatch holdingAgain = new CountDownLatch(1);
        ex.execute(() -> { // behind every lane: holds the worker again once each has run its first task
            holdingAgain.countDown();
            TestSupport.blockQuietly(second);
        });
        for (int i = lanes - 1; i >= 0; i--) {
            TestSupport.nextStampLater(ex);
            ex.sequential(i).execute(() -> { }); // the second tasks: the last lane's is the oldest, lane 0's the youngest
        }
        first.countDown(); // each lane runs one task and goes to the back, behind the holder, with its second waiting
        await(holdingAgain, "the worker held again");
        waitUntil("every lane waiting with its second task", () -> ex.busiestContexts(lanes).size() == lanes
                && ex.busiestContexts(lanes).stream().allMatch(c -> c.executed() == 1));
        for (int k = 1; k <= lanes; k++) {
            List<Object> expected = new ArrayList<>();
            for (int i = lanes - 1; i >= lanes - k; i--) {
                expected.add(i);
            }
            assertEquals(expected, ex.busiestContexts(k).stream().map(ContextStatistics::context)
                    .collect(Collectors.toList()), "k=" + k);
        }
        second.countDown();
        awaitQuiescent(ex);
    }

    private static void assertOldestFirst(List<ContextStatistics> list) {
        for (int i = 1; i < list.size(); i++) {
            assertTrue(list.get(i - 1).oldestQueuedAge().compareTo(list.get(i).oldestQueuedAge()) >= 0,
                    "not oldest first at " + i + ": " + list.get(i - 1) + " then " + list.get(i));
        }
    }

    /**
     * The call's memory follows the lanes waiting, not k: with nothing waiting, {@code busiestContexts(MAX_VALUE)}
     * allocated 12 MB (arrays of min(k, 2^20)) and threw {@code OutOfMemoryError} under a 12 MB heap, and with many
     * lanes waiting it took time in k times lanes (a million lanes, k = a million: about two minutes).
     */
    @Test
    void busiestContextsWithAHugeKAllocatesForWhatWaitsNotForK() {
        GatlingExecutor ex = v.track(oneWorker("busiest-huge-k").build());
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        org.junit.jupiter.api.Assumptions.assumeTrue(mx instanceof com.sun.management.ThreadMXBean,
                "no per-thread allocation counter on this JVM");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) mx;
        long me = Thread.currentThread().getId();
        ex.busiestContexts(Integer.MAX_VALUE); // loads and links what the call uses
        long before = threads.getThreadAllocatedBytes(me);
        for (int i = 0; i < 10; i++) {
            assertTrue(ex.busiestContexts(Integer.MAX_VALUE).isEmpty());
        }
        long perCall = (threads.getThreadAllocatedBytes(me) - before) / 10;
        assertTrue(perCall < 16 * 1024, "busiestContexts(MAX_VALUE) on an idle executor allocated " + perCall
                + " bytes per call");
    }

    /**
     * {@code shutdownNow()} drains the ready queue, then closes each lane and takes its waiting task. A lane put in
     * the ready queue between the two (by a submitter that activated it just before the shutdown and reached its offer
     * only after the drain) stayed there, closed and empty, with the stamp of the task the close took; the walk took
     * that stamp as waiting work. Under load with {@code shutdownNow}, a terminated executor read an oldest queued age
     * of 15 ms, and 574 ms half a second later, growing for good, with {@code queued} 0 and no lane waiting. Here the
     * offer comes from the hashCode of a sequential lane's context, which {@code shutdownNow} runs as it unmaps that
     * lane, after the drain and before it closes the coalescing lanes.
     */
    @Test
    void aLaneQueuedAgainDuringShutdownNowLeavesNoAgeBehind() throws InterruptedException {
        GatlingExecutor ex = v.track(oneWorker("late-offer").build());
        hold(ex, v.gate()); // its worker, interrupted by shutdownNow, sees the stop and takes nothing more
        shutDownNowQueueingALaneAfterItsDrain(ex);
        assertTrue(ex.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        ExecutorStatistics s = ex.statistics();
        assertEquals(0, s.queued());
        assertEquals(Duration.ZERO, s.oldestQueuedAge(), "a terminated executor has nothing waiting: " + s);
        assertTrue(ex.busiestContexts(1).isEmpty(), "no lane waits");
    }

    /**
     * As above, with a task still running once {@code shutdownNow()} has returned (it ignores the interrupt), so the
     * executor is stopping, not terminated, and the lane queued after the drain is still in the ready queue (only
     * termination takes it out). The walk must read that lane itself, emptied by the close, not the stamp it was
     * queued with: taken as waiting work, that stamp gave an executor with nothing waiting an age that grew until the
     * last task returned.
     */
    @Test
    void aLaneQueuedAgainDuringShutdownNowShowsNoAgeWhileATaskStillRuns() throws InterruptedException {
        GatlingExecutor ex = v.track(oneWorker("late-offer-running").build());
        Engine engine = ex.engine();
        CountDownLatch gate = v.gate();
        CountDownLatch running = new CountDownLatch(1);
        ex.execute(() -> {
            running.countDown();
            awaitIgnoringInterrupts(gate); // keeps the executor from terminating after shutdownNow
        });
        await(running, "the holding task to start");
        shutDownNowQueueingALaneAfterItsDrain(ex);
        assertFalse(engine.readyQueue.isEmpty(), "k was queued after the drain");
        TestSupport.sleep(60); // what a stamp taken as waiting work would age by
        ExecutorStatistics s = ex.statistics();
        assertFalse(ex.isTerminated());
        assertEquals(0, s.queued(), s.toString());
        assertEquals(Duration.ZERO, s.oldestQueuedAge(), "nothing waits in a stopping executor: " + s);
        assertTrue(ex.busiestContexts(1).isEmpty(), "no lane waits");
        gate.countDown();
        assertTrue(ex.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    /**
     * Makes a coalescing lane wait with a task, and a sequential one whose context's hashCode, which
     * {@code shutdownNow()} runs as it unmaps that lane (after its drain of the ready queue, before it closes the
     * coalescing lanes), puts the coalescing lane back in the ready queue; then shuts the executor down now.
     */
    private static void shutDownNowQueueingALaneAfterItsDrain(GatlingExecutor ex) {
        Engine engine = ex.engine();
        ex.coalescing("k").execute(() -> { });
        Lane k = engine.lanes(true).get("k");
        AtomicBoolean armed = new AtomicBoolean();
        Object late = new Object() {
            @Override
            public int hashCode() {
                if (armed.getAndSet(false)) {
                    engine.readyQueue.offerLane(k, engine.stamp()); // k still has its task waiting
                }
                return 1;
            }
        };
        ex.sequential(late).execute(() -> { });
        armed.set(true);
        List<Runnable> back = ex.shutdownNow();
        assertEquals(2, back.size(), "the waiting tasks of k and of the other lane are returned");
    }

    /** Waits for {@code gate} through interrupts (shutdownNow's), and keeps the status. */
    private static void awaitIgnoringInterrupts(CountDownLatch gate) {
        boolean interrupted = false;
        for (;;) {
            try {
                gate.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * An unordered submit reads the state, queues its task, and reads the state again: shut down meanwhile, it takes
     * its task back and is refused. The executor may have terminated in between (nothing waits for such a submit),
     * and {@code oldestQueuedAge()} counted the task in the ready queue until it was taken back: a terminated executor
     * read an age above zero with nothing accepted waiting, and zero a moment later. No caller's code runs in that
     * window, so the debugger holds the submitter: after its first read of the state until the executor has
     * terminated, and then between its offer and its second read.
     */
    @Test
    void aRefusedUnorderedTaskInTransitShowsNoAgeOnATerminatedExecutor() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(LatePlainChild.class, List.of(
                DebuggedChild.Spot.line("made", Engine.class, "PlainTask item = new PlainTask(task, stamp());"),
                DebuggedChild.Spot.line("offered", Engine.class, "readyQueue.takeBack(item)"),
                DebuggedChild.Spot.entry("held", LatePlainChild.class, "held"),
                DebuggedChild.Spot.entry("terminated", LatePlainChild.class, "terminated"),
                DebuggedChild.Spot.entry("read", LatePlainChild.class, "read")),
                (spot, thread, held) -> {
                    boolean late = LatePlainChild.SUBMITTER.equals(thread.name());
                    if ((spot.equals("made") || spot.equals("offered")) && !late) {
                        return true; // the child's own submits
                    }
                    if (spot.equals("held")) { // the child's main thread, waiting for the submitter to be held
                        return meeting.mainReady(thread);
                    }
                    hits.add(spot);
                    switch (spot) {
                        case "made":
                        case "offered": // the submitter stays; the child's main thread, if it waits, goes on
                            return meeting.windowReached(thread, held);
                        case "terminated":
                            DebuggedChild.resumeAll(held); // the submitter goes on to its offer...
                            return false; // ...while the child's main thread waits for it
                        default:
                            DebuggedChild.resumeAll(held); // the submitter goes on to its refusal
                            return true;
                    }
                });
        assertEquals(List.of("made", "terminated", "offered", "read"), hits, out);
        assertTrue(out.contains(LatePlainChild.TERMINATED + "true"), out);
        assertTrue(out.contains(LatePlainChild.SEEN + "PT0S"), out);
        assertTrue(out.contains(LatePlainChild.REFUSED + "true"), out);
    }

    /** The child JVM of {@link #aRefusedUnorderedTaskInTransitShowsNoAgeOnATerminatedExecutor}. */
    static final class LatePlainChild {
        static final String SUBMITTER = "late submitter";
        static final String TERMINATED = "child: terminated ";
        static final String SEEN = "child: oldest queued age with the refused task in transit ";
        static final String REFUSED = "child: refused ";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("late-plain").coreThreads(1).build();
            CountDownLatch ran = new CountDownLatch(1);
            e.execute(ran::countDown);
            ran.await();
            AtomicBoolean refused = new AtomicBoolean();
            Thread submitter = new Thread(() -> {
                try {
                    e.execute(() -> { });
                } catch (RejectedExecutionException expected) {
                    refused.set(true);
                }
            }, SUBMITTER);
            submitter.setDaemon(true);
            submitter.start();
            held(); // until the submitter is held past its first read of the state
            e.shutdownNow();
            System.out.println(TERMINATED + e.awaitTermination(10, TimeUnit.SECONDS));
            terminated(); // held until the submitter has queued its task
            System.out.println(SEEN + e.statistics().oldestQueuedAge());
            read();
            submitter.join(10_000);
            System.out.println(REFUSED + refused.get());
            System.exit(0);
        }

        static void held() {
        }

        static void terminated() {
        }

        static void read() {
        }

        private LatePlainChild() {
        }
    }
}
