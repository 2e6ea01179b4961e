package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.awaitQuiescent;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.lane;
import static io.github.gatlingexecutor.TestSupport.submitCallable;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.CoalCallable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Supplier;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** SPEC semantics 3: coalescing. */
class SemanticsCoalescingTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();

    @Test
    void aPendingTaskIsReplacedByTheNewestAndOnlyTheNewestRuns() {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(2).build());
        Executor lane = e.coalescing("c");
        CountDownLatch gate = cleanup.occupy(lane);
        AtomicIntegerArray ran = new AtomicIntegerArray(100);
        CountDownLatch last = new CountDownLatch(1);
        for (int i = 0; i < 100; i++) {
            int id = i;
            Runnable body = () -> {
                ran.incrementAndGet(id);
                if (id == 99) {
                    last.countDown();
                }
            };
            if (i % 2 == 0) {
                lane.execute(body);
            } else {
                e.execute(new Coal("c", body));
            }
        }
        gate.countDown();
        await(last, "the newest task");
        ExecutorStatistics s = awaitQuiescent(e);
        for (int i = 0; i < 99; i++) {
            assertEquals(0, ran.get(i), "replaced task " + i + " ran");
        }
        assertEquals(1, ran.get(99));
        assertEquals(101, s.submitted(), s.toString());
        assertEquals(99, s.coalesced(), s.toString());
        assertEquals(2, s.executed(), s.toString());
        waitUntil("the lane to be released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().toString());
    }

    /**
     * The same future given to a lane twice while it is pending is the last task submitted: it must run, not be
     * cancelled as the task it replaced. Accepted twice, it runs once, so one acceptance counts as coalesced.
     */
    @Test
    void aPendingFutureSubmittedAgainReplacesItselfAndStillRuns() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(1).build());
        Executor lane = e.coalescing("same");
        CountDownLatch gate = cleanup.occupy(lane);
        AtomicInteger runs = new AtomicInteger();
        FutureTask<Integer> task = new FutureTask<>(runs::incrementAndGet);
        lane.execute(task);
        lane.execute(task);
        assertFalse(task.isCancelled(), "the pending future was cancelled by its own resubmission");
        gate.countDown();
        assertEquals(1, task.get(10, TimeUnit.SECONDS));
        ExecutorStatistics s = awaitQuiescent(e);
        assertEquals(1, runs.get());
        assertEquals(3, s.submitted(), s.toString());
        assertEquals(1, s.coalesced(), s.toString());
        assertEquals(2, s.executed(), s.toString());
    }

    @Test
    void aTaskSubmittedWhileAnotherRunsIsNotDroppedAndRunsAfterIt() {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(4).build());
        Executor lane = e.coalescing("r");
        OrderChecker checker = new OrderChecker(1);
        for (int round = 0; round < 200; round++) {
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch gate = new CountDownLatch(1);
            CountDownLatch second = new CountDownLatch(1);
            long first = 2L * round + 1;
            lane.execute(() -> {
                checker.enter(0, first);
                started.countDown();
                blockQuietly(gate);
                checker.exit(0);
            });
            await(started, "first task");
            lane.execute(() -> {
                checker.enter(0, first + 1);
                checker.exit(0);
                second.countDown();
            });
            gate.countDown();
            await(second, "the task submitted while the first ran (round " + round + ")");
        }
        checker.assertClean("a coalescing task and the one submitted while it ran");
    }

    /**
     * One producer per context submits increasing values through every coalescing path: values run in increasing
     * order, never two at once, the last always runs, and the statistics account for every task.
     */
    static void runLastAlwaysRuns(GatlingExecutor e, int producers, int contextsPerProducer, int values,
                                  boolean slowTasks) throws Exception {
        int contexts = producers * contextsPerProducer;
        OrderChecker checker = new OrderChecker(contexts);
        CountDownLatch lastRan = new CountDownLatch(contexts);
        List<Future<?>> lastFutures = new ArrayList<>();
        CyclicBarrier start = new CyclicBarrier(producers);
        List<Thread> threads = new ArrayList<>();
        AtomicInteger producerFailures = new AtomicInteger();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    for (int v = 1; v <= values; v++) {
                        for (int k = 0; k < contextsPerProducer; k++) {
                            int c = producer * contextsPerProducer + k;
                            long value = v;
                            Runnable body = () -> {
                                checker.enterIncreasing(c, 0, value); // replaced values leave gaps
                                if (slowTasks) {
                                    TestSupport.spin(20);
                                }
                                checker.exit(c);
                                if (value == values) {
                                    lastRan.countDown();
                                }
                            };
                            String key = "coal-" + c;
                            switch ((int) ((value + c) % 4)) {
                                case 0:
                                    e.execute(new Coal(key, body));
                                    break;
                                case 1:
                                    e.coalescing(key).execute(body);
                                    break;
                                case 2:
                                    Future<?> f = e.submit(new Coal(key, body));
                                    if (value == values) {
                                        synchronized (lastFutures) {
                                            lastFutures.add(f);
                                        }
                                    }
                                    break;
                                default:
                                    submitCallable(e, new CoalCallable<>(key, () -> {
                                        body.run();
                                        return null;
                                    }));
                                    break;
                            }
                        }
                    }
                } catch (Throwable ex) {
                    producerFailures.incrementAndGet();
                    ex.printStackTrace();
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        }
        assertEquals(0, producerFailures.get());
        await(lastRan, "the last task of every context (" + TestSupport.describe(e) + ")");
        ExecutorStatistics s = awaitQuiescent(e);
        checker.assertClean("coalescing tasks");
        for (int c = 0; c < contexts; c++) {
            // the last value's task counted lastRan down after its exit
            assertEquals(values, checker.last(c, 0), "context " + c + " did not end with its last value");
        }
        for (Future<?> f : lastFutures) {
            assertTrue(f.isDone() && !f.isCancelled(), "a last task's future was cancelled");
        }
        long submitted = (long) contexts * values;
        assertEquals(submitted, s.submitted(), s.toString());
        assertEquals(checker.ran(), s.executed(), "executed() differs from the tasks that ran: " + s);
        assertEquals(submitted - checker.ran(), s.coalesced(), "submitted = executed + coalesced broken: " + s);
        assertEquals(0, s.failed(), s.toString());
        waitUntil("every lane to be released", () -> e.statistics().liveContexts() == 0,
                () -> e.contextStatistics().toString());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.github.gatlingexecutor.Configurations#builders")
    void theLastTaskAlwaysRunsAndEveryTaskIsAccountedFor(String label, Supplier<GatlingExecutor.Builder> builder)
            throws Exception {
        runLastAlwaysRuns(cleanup.track(builder.get().build()), 4, 4, 5000, false);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.github.gatlingexecutor.Configurations#builders")
    void slowCoalescingTasksNeverOverlap(String label, Supplier<GatlingExecutor.Builder> builder) throws Exception {
        runLastAlwaysRuns(cleanup.track(builder.get().build()), 4, 1, 2000, true);
    }

    @RepeatedTest(50)
    @Tag("stress")
    void lastAlwaysRunsRepeated() throws Exception {
        runLastAlwaysRuns(cleanup.track(gatling("coal").coreThreads(2).batchSize(2)
                .minTurn(Duration.ZERO).build()), 4, 4, 5000, false);
        runLastAlwaysRuns(cleanup.track(gatling("coal").coreThreads(4).batchSize(1)
                .minTurn(Duration.ZERO).build()), 4, 1, 2000, true);
    }

    @Test
    void aCoalescedAwayFutureIsCancelled() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(2).build());
        CountDownLatch gate = cleanup.occupy(e.coalescing("f"));
        AtomicInteger ran = new AtomicInteger();
        Future<?> f1 = e.submit(new Coal("f", ran::incrementAndGet));
        Future<String> f2 = e.submit(new Coal("f", ran::incrementAndGet), "two");
        Future<String> f3 = submitCallable(e, new CoalCallable<>("f", () -> {
            ran.incrementAndGet();
            return "three";
        }));
        gate.countDown();
        assertEquals("three", get(f3));
        waitUntil("replaced futures to complete", () -> f1.isDone() && f2.isDone());
        assertTrue(f1.isCancelled(), "replaced future f1 not cancelled");
        assertTrue(f2.isCancelled(), "replaced future f2 not cancelled");
        assertThrows(CancellationException.class, () -> f1.get(0, TimeUnit.MILLISECONDS));
        assertThrows(CancellationException.class, () -> f2.get(0, TimeUnit.MILLISECONDS));
        assertEquals(1, ran.get());
        assertEquals(2, awaitQuiescent(e).coalesced());
    }

    @Test
    void invokeAllOfCoalescingCallablesCancelsTheReplacedOnes() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(2).build());
        CountDownLatch gate = cleanup.occupy(e.coalescing("ia"));
        List<Callable<String>> tasks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String value = "v" + i;
            tasks.add(new CoalCallable<>("ia", () -> value));
        }
        java.util.concurrent.atomic.AtomicReference<Throwable> openerFailure =
                new java.util.concurrent.atomic.AtomicReference<>();
        Thread opener = new Thread(() -> {
            try {
                waitUntil("invokeAll to submit its tasks", () -> {
                    ContextStatistics cs = lane(e, "ia", true);
                    return cs != null && cs.submitted() == 4;
                });
            } catch (Throwable failure) {
                openerFailure.set(failure); // the lane never counted four: seen below, not lost on this thread
            } finally {
                gate.countDown();
            }
        });
        opener.start();
        List<Future<String>> futures = e.invokeAll(tasks);
        opener.join();
        assertNull(openerFailure.get(), () -> "the lane's count: " + openerFailure.get());
        assertTrue(futures.get(0).isCancelled(), "first replaced callable not cancelled");
        assertTrue(futures.get(1).isCancelled(), "second replaced callable not cancelled");
        assertEquals("v2", futures.get(2).get(0, TimeUnit.MILLISECONDS));
    }

    /**
     * A fixed-rate coalescing task behind its schedule (its lane held for periods) owes runs whose times have passed.
     * A newer task that replaced its waiting run was itself replaced at once by the next run owed, due before it was
     * submitted: the update never ran.
     */
    @Test
    void anUpdateThatReplacesAFixedRateRunBehindItsScheduleRuns() {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(2).build());
        List<String> ran = new java.util.concurrent.CopyOnWriteArrayList<>();
        Executor lane = e.coalescing("k");
        CountDownLatch gate = cleanup.occupy(lane);
        long period = TimeUnit.MILLISECONDS.toNanos(400);
        long start = System.nanoTime();
        java.util.concurrent.ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Coal("k", () -> ran.add("P")),
                0, period, TimeUnit.NANOSECONDS);
        TestSupport.sleep(900); // runs due at 0, 400 and 800 ms are owed; the first waits in the lane
        long phase = (System.nanoTime() - start) % period;
        TestSupport.sleep(TimeUnit.NANOSECONDS.toMillis(period - phase) + 20); // just past a time of the schedule
        e.execute(new Coal("k", () -> ran.add("U"))); // replaces the waiting run: the next is ~380 ms away
        // The checker drives the timer: after two of its looks, a run put back with a time already past (the defect
        // this guards against) has been dispatched into the lane, where it replaced the update.
        TestSupport.awaitTwoCheckerLooks(e, "two more looks of the checker");
        gate.countDown();
        waitUntil("the update to run", () -> ran.contains("U") || ran.contains("P"));
        periodic.cancel(false);
        assertEquals("U", ran.get(0), "a run owed from before the update replaced it: " + ran);
    }

    @Test
    void coalescingLanesOfDifferentContextsAreIndependent() {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(2).build());
        CountDownLatch gate = cleanup.occupy(e.coalescing("x"));
        CountDownLatch other = new CountDownLatch(1);
        e.coalescing("y").execute(other::countDown);
        await(other, "a coalescing task of another context while the first is busy");
        gate.countDown();
    }

    /**
     * A coalescing lane's {@code executed()} counts the task that runs now, as a sequential lane's does: it counts the
     * tasks that started (ContextStatistics#executed), and the running one is no longer queued. Counted only once the
     * task returned, a lane whose task runs long would show a task neither executed nor queued.
     */
    @Test
    void aRunningCoalescingTaskCountsAsExecutedAndTheOneBehindItAsQueued() {
        GatlingExecutor e = cleanup.track(gatling("coal").coreThreads(1).build());
        CountDownLatch gate = cleanup.occupy(e.coalescing("x"));
        ContextStatistics running = TestSupport.lane(e, "x", true);
        assertEquals(1, running.executed(), running.toString());
        assertEquals(0, running.queued(), running.toString());
        CountDownLatch behind = new CountDownLatch(1);
        e.coalescing("x").execute(behind::countDown);
        ContextStatistics pending = TestSupport.lane(e, "x", true);
        assertEquals(2, pending.submitted(), pending.toString());
        assertEquals(1, pending.executed(), pending.toString());
        assertEquals(1, pending.queued(), pending.toString());
        gate.countDown();
        await(behind, "the task behind the running one");
    }
}
