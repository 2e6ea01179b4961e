package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.Seq;
import java.lang.ref.Reference;
import java.lang.ref.WeakReference;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One regression test per defect found by testing the executor from outside (issue 10); each was seen failing on the
 * code before its fix (the closing note of that issue says how). The Javadoc of each test names the bug it pins.
 */
class DefectRegressionTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();

    private static final Runnable NOOP = () -> { };

    /** Item 1: shutdownNow() cancelled periodic tasks instead of returning them (it returned 1 task of 3). */
    @Test
    @Timeout(20)
    void shutdownNowReturnsDelayedAndPeriodicTasksNeitherDoneNorCancelled() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("now-periodic").coreThreads(1).build());
        ScheduledFuture<?> once = e.schedule(NOOP, 9, TimeUnit.SECONDS);
        ScheduledFuture<?> rate = e.scheduleAtFixedRate(NOOP, 9, 1, TimeUnit.SECONDS);
        ScheduledFuture<?> delay = e.scheduleWithFixedDelay(NOOP, 9, 1, TimeUnit.SECONDS);
        ScheduledFuture<?> coalescing = e.schedule(new Coal("k", NOOP), 9, TimeUnit.SECONDS);
        CountDownLatch firstRun = new CountDownLatch(1);
        ScheduledFuture<?> ranOnce = e.scheduleAtFixedRate(new Seq("s", firstRun::countDown), 0, 1, TimeUnit.HOURS);
        await(firstRun, "the first run of a periodic task, which then waits an hour for its next");
        waitUntil("its run to end, and its next to wait on the timer with the others",
                () -> e.statistics().executed() == 1 && e.statistics().delayed() == 5, () -> e.statistics().toString());
        List<Runnable> returned = e.shutdownNow();
        assertEquals(5, returned.size(), returned::toString);
        assertEquals(0, e.statistics().delayed(), "returned, yet still counted as waiting on the timer");
        for (ScheduledFuture<?> f : List.of(once, rate, delay, coalescing, ranOnce)) {
            assertTrue(returned.contains(f), "not returned: " + f);
            assertFalse(f.isDone(), "returned, yet done: " + f);
            assertFalse(f.isCancelled(), "returned, yet cancelled: " + f);
        }
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
    }

    /**
     * Shutdown stops periodic tasks at once, as ScheduledThreadPoolExecutor does, including a run that is already due
     * and waiting in its lane (before the fix, that one stayed not-done until the lane reached it).
     */
    @Test
    @Timeout(20)
    void shutdownCancelsAPeriodicRunWaitingInItsLaneAtOnce() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("shutdown-periodic").coreThreads(2).build());
        CountDownLatch gate = cleanup.occupy(r -> e.execute(new Seq("c", r)));
        AtomicInteger runs = new AtomicInteger();
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Seq("c", runs::incrementAndGet), 0, 5,
                TimeUnit.MILLISECONDS);
        waitUntil("the periodic run waiting in lane c", () -> e.statistics().submitted() >= 2);
        e.shutdown();
        assertTrue(periodic.isCancelled(), "a periodic task must be cancelled by shutdown(), wherever its run waits");
        gate.countDown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
        assertEquals(0, runs.get(), "a periodic run must not start after shutdown()");
    }

    /** Item 2: cancelling the last delayed task after shutdown() never let the executor terminate. */
    @Test
    @Timeout(20)
    void cancellingTheLastDelayedTaskAfterShutdownTerminates() throws Exception {
        for (boolean workerStarted : new boolean[] {false, true}) {
            GatlingExecutor e = cleanup.track(gatling("cancel-after-shutdown").coreThreads(1).build());
            if (workerStarted) {
                CountDownLatch ran = new CountDownLatch(1);
                e.execute(ran::countDown);
                await(ran, "a first task");
            }
            ScheduledFuture<?> f = e.schedule(NOOP, 1, TimeUnit.MINUTES);
            e.shutdown();
            // A pending delayed task keeps the executor alive; meanwhile the woken workers go back to waiting.
            assertFalse(e.awaitTermination(200, TimeUnit.MILLISECONDS), "terminated with a delayed task pending");
            assertTrue(f.cancel(false));
            assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), "did not terminate (a worker started: "
                    + workerStarted + "): " + e.statistics());
            assertEquals(0, e.statistics().threads());
        }
    }

    /** A thread whose start() fails as it does when the system has no native thread left. */
    private static Thread failingToStart(Runnable r) {
        return new Thread(r) {
            @Override
            public synchronized void start() {
                throw new OutOfMemoryError("unable to create native thread: possibly out of memory");
            }
        };
    }

    /** A thread factory whose threads for the checker fail to start, {@code failures} times or for good. */
    private static final class CheckerFailingFactory implements ThreadFactory {
        final AtomicInteger checkerFailuresLeft;
        final AtomicInteger checkerAsked = new AtomicInteger();

        CheckerFailingFactory(int failures) {
            this.checkerFailuresLeft = new AtomicInteger(failures);
        }

        @Override
        public Thread newThread(Runnable r) {
            if (TestSupport.isChecker(r)) {
                checkerAsked.incrementAndGet();
                if (checkerFailuresLeft.getAndDecrement() > 0) {
                    return failingToStart(r);
                }
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        }
    }

    /**
     * Item 3: when the checker's thread failed to start, submits threw after queueing their task (which then ran
     * anyway), the slot was never given back, and the timer and termination stayed dead. Then {@code schedule*} was
     * refused while the checker could not start, where {@code ScheduledThreadPoolExecutor} accepts such a task and runs
     * it on the threads it has (SPEC point 9: a failing factory leaves the executor working on those). Now: a submit
     * never throws for it; the workers dispatch due tasks, whether they are parked (timed by the next due task) or
     * busy (between items); shutdown runs the delayed task left, then terminates.
     */
    @Test
    @Timeout(20)
    void aCheckerThatCannotStartLeavesTheTimerToTheWorkers() throws Exception {
        CheckerFailingFactory factory = new CheckerFailingFactory(Integer.MAX_VALUE);
        GatlingExecutor e = cleanup.track(gatling("no-checker").coreThreads(2).threadFactory(factory).build());
        CountDownLatch ran = new CountDownLatch(200);
        for (int i = 0; i < 200; i++) {
            e.execute(i % 2 == 0 ? new Seq(i % 5, ran::countDown) : ran::countDown); // must not throw
        }
        await(ran, "every task, on the workers the factory gave");
        assertTrue(factory.checkerAsked.get() >= 1, "the thread factory was never asked for the checker thread");
        TestSupport.awaitQuiescent(e);

        // Parked workers: the first park after the schedule call is timed by the task.
        long scheduledAt = System.nanoTime();
        ScheduledFuture<String> delayed = e.schedule(() -> "due", 30, TimeUnit.MILLISECONDS);
        assertEquals("due", delayed.get(5, TimeUnit.SECONDS));
        assertTrue(System.nanoTime() - scheduledAt >= TimeUnit.MILLISECONDS.toNanos(30), "ran before its delay");

        CountDownLatch periodicRuns = new CountDownLatch(5);
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(periodicRuns::countDown, 0, 2, TimeUnit.MILLISECONDS);
        await(periodicRuns, "five runs of a periodic task");
        assertTrue(periodic.cancel(false));

        // Busy workers: each keeps resubmitting itself until the delayed task has run, so neither ever parks.
        AtomicBoolean dueRan = new AtomicBoolean();
        AtomicInteger spins = new AtomicInteger();
        CountDownLatch spinnersDone = new CountDownLatch(2);
        long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        for (int i = 0; i < 2; i++) {
            e.execute(new Runnable() {
                @Override
                public void run() {
                    spins.incrementAndGet();
                    if (dueRan.get() || System.nanoTime() - giveUpAt > 0) {
                        spinnersDone.countDown();
                    } else {
                        e.execute(this);
                    }
                }
            });
        }
        e.schedule(() -> dueRan.set(true), 5, TimeUnit.MILLISECONDS);
        await(spinnersDone, "the busy workers");
        assertTrue(dueRan.get(), "busy workers never dispatched a due task (" + spins + " items run meanwhile)");

        AtomicBoolean afterShutdown = new AtomicBoolean();
        e.schedule(() -> afterShutdown.set(true), 50, TimeUnit.MILLISECONDS);
        e.shutdown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), "no checker, and no termination: " + e.statistics());
        assertTrue(afterShutdown.get(), "a delayed one-shot task did not run after shutdown");
        assertEquals(0, e.statistics().threads());
        assertTrue(e.statistics().threadStartFailures() >= 1, e.statistics().toString());
    }

    /**
     * A thread factory that gives a single thread: when the first call was a delayed {@code schedule}, or a periodic
     * task with no initial delay, that call started the checker before any worker, the thread went to the checker, no
     * worker could start, and no task ever ran ({@code close()} then waited for good). The worker now gets it, and
     * drives the timer itself.
     */
    @ParameterizedTest(name = "first call periodic: {0}")
    @ValueSource(booleans = {false, true})
    @Timeout(20)
    void aSingleThreadFromTheFactoryGoesToAWorkerThatRunsScheduledTasks(boolean periodicFirst) throws Exception {
        List<Runnable> given = new CopyOnWriteArrayList<>();
        AtomicInteger calls = new AtomicInteger();
        ThreadFactory oneThread = r -> {
            if (calls.incrementAndGet() > 1) {
                throw new IllegalStateException("no more threads");
            }
            given.add(r);
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("one-thread").coreThreads(1).threadFactory(oneThread).build());
        CountDownLatch runs = new CountDownLatch(3);
        if (periodicFirst) {
            e.scheduleAtFixedRate(runs::countDown, 0, 1, TimeUnit.MILLISECONDS);
        } else {
            ScheduledFuture<String> f = e.schedule(() -> "due", 10, TimeUnit.MILLISECONDS);
            assertEquals("due", f.get(5, TimeUnit.SECONDS));
            e.scheduleWithFixedDelay(runs::countDown, 1, 1, TimeUnit.MILLISECONDS);
        }
        await(runs, "a periodic task on the one worker");
        assertEquals(1, given.size());
        assertFalse(TestSupport.isChecker(given.get(0)), "the only thread went to the checker");
        e.close();
        assertTrue(e.isTerminated());
    }

    /**
     * As above, with the first worker's start still in the factory when another thread schedules a delayed task: that
     * call saw a thread slot taken, started no worker, and started the checker, which took the factory's one thread;
     * the worker's start then failed, and no task ever ran (found by randomized rounds from outside: 30 s with 23
     * tasks queued and no worker, a factory of one thread, three producers). The start under way starts the checker
     * itself once its worker has its thread, so the schedule leaves the checker to it.
     */
    @Test
    @Timeout(20)
    void aSingleThreadFromTheFactoryGoesToTheWorkerWhoseStartIsUnderWayWhenATaskIsScheduled() throws Exception {
        CountDownLatch inFactory = new CountDownLatch(1);
        CountDownLatch scheduled = new CountDownLatch(1);
        AtomicInteger given = new AtomicInteger();
        List<Runnable> runnables = new CopyOnWriteArrayList<>();
        ThreadFactory oneThread = r -> {
            if (inFactory.getCount() > 0) {
                inFactory.countDown();
                TestSupport.await(scheduled, "the delayed task to be scheduled"); // the first start is held here
            }
            if (given.incrementAndGet() > 1) {
                throw new IllegalStateException("no more threads");
            }
            runnables.add(r);
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("one-thread-racing").coreThreads(1).threadFactory(oneThread).build());
        CountDownLatch ran = new CountDownLatch(1);
        Thread submitter = new Thread(() -> e.execute(ran::countDown));
        submitter.start();
        await(inFactory, "the first worker's start in the factory");
        ScheduledFuture<String> due = e.schedule(() -> "due", 10, TimeUnit.MILLISECONDS);
        scheduled.countDown();
        submitter.join();
        assertFalse(TestSupport.isChecker(runnables.get(0)), "the only thread went to the checker");
        await(ran, "the task on the one worker");
        assertEquals("due", due.get(5, TimeUnit.SECONDS));
        e.close();
        assertTrue(e.isTerminated());
    }

    /**
     * The first worker's start held in a slow factory call (a factory that waits for a resource, say) while another
     * thread schedules a delayed task, with room for a second core worker and a factory that gives it at once. The
     * schedule call left the checker to the start under way, and nothing else started it: the task, due in 10 ms,
     * waited for as long as that one factory call took (for good with a factory that waits for the executor's own
     * work), where {@code execute} from the same thread started the second core worker at once. The checker, started
     * by the schedule call, dispatches the task when due and refills the pool below its core size for it.
     */
    @Test
    @Timeout(20)
    void aDelayedTaskRunsWhileTheFirstWorkersStartIsHeldInASlowFactory() throws Exception {
        CountDownLatch inFactory = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        ThreadFactory slowFirst = r -> {
            if (calls.incrementAndGet() == 1) {
                inFactory.countDown();
                TestSupport.await(release, "the end of the test"); // the first worker's start is held here
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("slow-first-start").coreThreads(2).threadFactory(slowFirst).build());
        Thread submitter = new Thread(() -> e.execute(() -> { }));
        submitter.start();
        try {
            await(inFactory, "the first worker's start in the factory");
            ScheduledFuture<String> due = e.schedule(() -> "due", 10, TimeUnit.MILLISECONDS);
            assertEquals("due", due.get(5, TimeUnit.SECONDS), () -> "the delayed task waited for the slow factory call: "
                    + e.statistics());
        } finally {
            release.countDown();
            submitter.join();
        }
        e.close();
        assertTrue(e.isTerminated());
    }

    /**
     * A lane closed by the shutdown while idle (within its grace) kept its last chunk, and with it the tasks it had
     * run: the engine lets go of its lanes at termination, but a lane handle keeps its last lane for good, and so kept
     * those tasks and what they captured (an outside audit: a 1 MiB capture reachable after close() in 12 to 18 of 20
     * rounds with the handle kept). A lane released before the shutdown dropped its chunks already; each round here
     * ends either way, and no round may keep the capture. (A lane that {@code shutdownNow} closes while a worker still
     * runs it keeps its chunk: README, known limits.)
     */
    @Test
    @Timeout(60)
    void aLaneHandleKeepsNoTaskThatRanOnceItsLaneIsClosed() throws Exception {
        for (int round = 0; round < 20; round++) {
            GatlingExecutor e = gatling("closed-lane-" + round).coreThreads(1).build();
            Executor handle = e.sequential("ctx");
            WeakReference<byte[]> capture = runCapturing(handle);
            e.close(); // closes the lane once it is idle, if it is still within its grace
            TestSupport.waitUntil("round " + round + ": the task's capture collected with the handle kept", () -> {
                System.gc();
                return capture.get() == null;
            }, () -> "handle " + handle, 5_000);
            Reference.reachabilityFence(handle);
        }
    }

    /** Runs, through {@code lane}, a task that captures 1 MiB, and returns a weak reference to the capture. */
    private static WeakReference<byte[]> runCapturing(Executor lane) throws InterruptedException {
        byte[] payload = new byte[1 << 20];
        CountDownLatch ran = new CountDownLatch(1);
        lane.execute(new Runnable() {
            final byte[] captured = payload;

            @Override
            public void run() {
                ran.countDown();
            }
        });
        await(ran, "the capturing task");
        return new WeakReference<>(payload);
    }

    /**
     * A coalescing submit that replaced a waiting task cancelled that task's {@code Future} on the submitter's thread,
     * and a {@code Future} of the caller's whose {@code done()} throws made the submit throw, though its own task was
     * accepted and ran. The replaced task's failure now goes to the uncaught-exception handler.
     */
    @Test
    @Timeout(20)
    void aReplacedFutureWhoseDoneThrowsDoesNotFailTheSubmitThatReplacedIt() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = cleanup.track(gatling("replaced-done-throws").coreThreads(1)
                .uncaughtExceptionHandler((t, x) -> reported.add(x)).build());
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(1);
        e.coalescing("px").execute(() -> {
            holding.countDown();
            TestSupport.blockQuietly(gate);
        });
        await(holding, "the context's running task");
        AtomicInteger runs = new AtomicInteger();
        ThrowingDoneUpdate pending = new ThrowingDoneUpdate(runs);
        e.execute(pending);
        ThrowingDoneUpdate replacing = new ThrowingDoneUpdate(runs);
        e.execute(replacing); // replaces the pending one: its cancel runs its done(), which throws
        assertTrue(pending.isCancelled());
        gate.countDown();
        replacing.get(5, TimeUnit.SECONDS);
        assertEquals(1, runs.get());
        assertEquals(1, reported.size(), () -> "reported: " + reported);
        assertEquals("done() of a replaced update", reported.get(0).getMessage());
    }

    /** A coalescing update that is a {@code Future} of the caller's, whose {@code done()} throws once cancelled. */
    private static final class ThrowingDoneUpdate extends FutureTask<Void> implements CoalescingRunnable {
        ThrowingDoneUpdate(AtomicInteger runs) {
            super(runs::incrementAndGet, null);
        }

        @Override
        public Object context() {
            return "px";
        }

        @Override
        protected void done() {
            if (isCancelled()) {
                throw new IllegalStateException("done() of a replaced update");
            }
        }
    }

    /**
     * Without a checker, the workers time their parks by the timer's hint of its first due time. The hint was the first
     * task itself, and a task due at once, dispatched on its caller's thread, first dispatched the overdue tasks ahead
     * of it without refreshing the hint: left naming an overdue periodic task, the hint read that task's next run
     * once it had run, a period later, and the one worker parked that long while a one-shot task fell due (it ran 29
     * seconds late with a 30 s period). Here the worker is held in a task of the periodic task's context until that
     * dispatch has put the periodic run behind it, so it runs the periodic task and then parks.
     */
    @Test
    @Timeout(20)
    void withoutACheckerADelayedTaskRunsWhenDueAfterACallersDispatchTookAPeriodicTaskOut() throws Exception {
        ThreadFactory oneThread = TestSupport.oneDaemonThread();
        GatlingExecutor e = cleanup.track(gatling("stale-hint").coreThreads(1).threadFactory(oneThread).build());
        long start = System.nanoTime();
        CountDownLatch periodicRan = new CountDownLatch(1);
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Seq("c", periodicRan::countDown), 50, 30_000,
                TimeUnit.MILLISECONDS);
        ScheduledFuture<String> oneShot = e.schedule(() -> "due", 1_000, TimeUnit.MILLISECONDS);
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(1);
        e.execute(new Seq("c", () -> {
            holding.countDown();
            TestSupport.blockQuietly(gate);
        }));
        await(holding, "the worker to be held in context c");
        assertTrue(e.engine().checker.absent(), "a checker started: the workers do not drive the timer here");
        long overdueIn = TimeUnit.MILLISECONDS.toNanos(60) - (System.nanoTime() - start);
        if (overdueIn > 0) {
            TimeUnit.NANOSECONDS.sleep(overdueIn); // the periodic task is due at 50 ms; its context is held
        }
        e.schedule(() -> { }, 0, TimeUnit.MILLISECONDS); // dispatches the overdue periodic run, behind the held task
        gate.countDown();
        await(periodicRan, "the periodic task's first run");
        assertEquals("due", oneShot.get(5, TimeUnit.SECONDS), "the one-shot task, due at 1 s");
        assertTrue(periodic.cancel(false));
    }

    /**
     * The window of a checker start that fails after its thread was published: a worker that found it published left
     * the timer to it and parked without a timeout, and a delayed task scheduled meanwhile told only the checker. The
     * failed start now wakes an idle worker, which drives the timer. Here the start blocks until the worker is parked
     * and the task is in the timer, then fails; any later try of the checker fails in the factory, which wakes
     * nobody.
     */
    @Test
    @Timeout(20)
    void aCheckerStartThatFailsAfterItsThreadWasPublishedWakesAWorkerForTheTimer() throws Exception {
        CountDownLatch startEntered = new CountDownLatch(1);
        CountDownLatch failStart = cleanup.gate();
        AtomicInteger checkerCalls = new AtomicInteger();
        ThreadFactory factory = r -> {
            if (TestSupport.isChecker(r)) {
                if (checkerCalls.incrementAndGet() > 1) {
                    throw new IllegalStateException("no checker thread");
                }
                return new Thread(r) {
                    @Override
                    public synchronized void start() {
                        startEntered.countDown();
                        TestSupport.blockQuietly(failStart);
                        throw new OutOfMemoryError("unable to create native thread: possibly out of memory");
                    }
                };
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("published-then-failed").coreThreads(1).threadFactory(factory)
                .build());
        AtomicReference<Throwable> helperFailure = new AtomicReference<>();
        Thread starter = new Thread(() -> e.execute(NOOP)); // starts the worker, then blocks in the checker's start
        starter.setUncaughtExceptionHandler((t, failure) -> helperFailure.compareAndSet(null, failure));
        starter.start();
        await(startEntered, "the checker's start");
        Worker worker = e.engine().pool.workers()[0];
        waitUntil("the worker to park", () -> worker.parkState() == Worker.PARKED);
        AtomicReference<ScheduledFuture<String>> delayed = new AtomicReference<>();
        Thread scheduler = new Thread(() -> delayed.set(e.schedule(() -> "due", 10, TimeUnit.MILLISECONDS)));
        scheduler.setUncaughtExceptionHandler((t, failure) -> helperFailure.compareAndSet(null, failure));
        scheduler.start(); // queues the task, and finds the checker published: it tells only the checker
        waitUntil("the task in the timer", () -> !e.engine().timer.noDelayedWork());
        failStart.countDown();
        starter.join(5_000);
        scheduler.join(5_000);
        assertFalse(starter.isAlive() || scheduler.isAlive(), "a submitting thread is still in its call");
        // SPEC point 9: a failing factory leaves the executor working; neither call may throw the start's failure
        assertNull(helperFailure.get(), () -> "a submit threw: " + helperFailure.get());
        assertEquals("due", delayed.get().get(5, TimeUnit.SECONDS), "the parked worker never drove the timer");
    }

    /** Item 3, continued: a checker start that failed is tried again, and scheduling works once it succeeds. */
    @Test
    @Timeout(20)
    void aCheckerStartThatFailedOnceIsRetried() throws Exception {
        CheckerFailingFactory factory = new CheckerFailingFactory(1);
        GatlingExecutor e = cleanup.track(gatling("checker-retry").coreThreads(1).threadFactory(factory).build());
        CountDownLatch ran = new CountDownLatch(1);
        e.execute(ran::countDown);
        await(ran, "a task on the worker");
        ScheduledFuture<String> f = e.schedule(() -> "due", 1, TimeUnit.MILLISECONDS);
        assertEquals("due", f.get(5, TimeUnit.SECONDS));
        assertEquals(2, factory.checkerAsked.get(), "one failed start, then one that worked");
        assertEquals(1, e.statistics().threadStartFailures());
    }

    /**
     * Item 3, workers: a worker thread whose start() fails gives its slot back; the task runs on a later start. The
     * checker is held until the test has counted the threads: its first look, 5 ms after the failed start, would
     * refill the core worker for the queued task (a test thread descheduled that long read one thread where none was
     * left by the failed start), and a later look that found the task queued behind the worker running the other
     * could add an auxiliary thread.
     */
    @Test
    @Timeout(20)
    void aWorkerWhoseStartFailsGivesItsSlotBackAndLosesNothing() throws Exception {
        AtomicInteger workerCalls = new AtomicInteger();
        CountDownLatch checkerGate = cleanup.gate();
        ThreadFactory factory = r -> {
            Thread t;
            if (TestSupport.isChecker(r)) {
                t = TestSupport.heldChecker(r, checkerGate);
            } else if (workerCalls.incrementAndGet() == 1) {
                return failingToStart(r);
            } else {
                t = new Thread(r);
            }
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("worker-start").coreThreads(1).threadFactory(factory).build());
        AtomicInteger runs = new AtomicInteger();
        e.execute(runs::incrementAndGet); // the first start fails: no exception here
        assertEquals(0, e.statistics().threads(), "a failed start kept its slot");
        CountDownLatch second = new CountDownLatch(1);
        e.execute(second::countDown);   // the next start works and runs both
        await(second, "the second task");
        waitUntil("the first task", () -> runs.get() == 1);
        ExecutorStatistics s = e.statistics();
        assertEquals(1, s.threads(), s.toString());
        assertEquals(1, s.threadStartFailures(), s.toString());
    }

    /**
     * Item 4: lanes a worker had ringed as idle, then stuck in a long task, were never released once other workers
     * had run and emptied them again (liveContexts() stayed up as long as that worker was stuck).
     */
    @Test
    @Timeout(20)
    void idleLanesAreReleasedWhileTheWorkerThatRangThemIsStuck() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("stuck-ring").coreThreads(1).maxThreads(40)
                .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(20)).build());
        int contexts = 20;
        CountDownLatch gate = cleanup.occupy(e);
        CountDownLatch firstRound = new CountDownLatch(contexts);
        for (int c = 0; c < contexts; c++) {
            e.sequential(c).execute(firstRound::countDown);
        }
        CountDownLatch stuck = cleanup.gate();
        CountDownLatch isStuck = new CountDownLatch(1);
        AtomicBoolean stuckEnded = new AtomicBoolean();
        e.execute(() -> {          // queued behind the lanes: the core worker goes from them straight into this
            isStuck.countDown();
            TestSupport.blockQuietly(stuck);
            stuckEnded.set(true);
        });
        gate.countDown();
        await(isStuck, "the core worker stuck after running every lane once");
        await(firstRound, "the first round");
        CountDownLatch second = cleanup.gate();
        CountDownLatch secondStarted = new CountDownLatch(contexts);
        CountDownLatch secondDone = new CountDownLatch(contexts);
        for (int c = 0; c < contexts; c++) {
            e.sequential(c).execute(() -> {
                secondStarted.countDown();
                TestSupport.blockQuietly(second);
                secondDone.countDown();
            });
        }
        await(secondStarted, "the second round, on auxiliary workers");
        long swept = e.statistics().blockedDetections();
        waitUntil("the checker's look while the lanes run elsewhere", () -> e.statistics().blockedDetections() > swept);
        second.countDown();
        await(secondDone, "the second round");
        waitUntil("every lane released while the core worker is still stuck",
                () -> e.statistics().liveContexts() == 0, () -> e.statistics().toString());
        assertFalse(stuckEnded.get(), "the stuck task ended too early for the test to mean anything");
    }

    /** Item 5: a held lane handle kept its last lane, which kept the last (retired) worker and its thread. */
    @Test
    @Timeout(30)
    void aHeldLaneHandleDoesNotKeepARetiredWorker() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("pin").coreThreads(1).maxThreads(2)
                .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(20))
                .auxiliaryKeepAlive(Duration.ofMillis(30)).build());
        java.util.concurrent.Executor handle = e.sequential("held");
        CountDownLatch gate = cleanup.occupy(e);
        AtomicReference<WeakReference<Thread>> thread = new AtomicReference<>();
        AtomicReference<WeakReference<Object>> worker = new AtomicReference<>();
        CountDownLatch ran = new CountDownLatch(1);
        handle.execute(() -> {
            thread.set(new WeakReference<>(Thread.currentThread()));
            worker.set(new WeakReference<>(Worker.current()));
            ran.countDown();
        });
        await(ran, "the held context's task on an auxiliary worker");
        gate.countDown();
        waitUntil("the auxiliary worker to retire", () -> {
            Thread t = thread.get().get();
            return t == null || !t.isAlive();
        });
        waitUntil("the retired worker and its thread to be collected while the handle is held", () -> {
            System.gc();
            return thread.get().get() == null && worker.get().get() == null;
        });
        CountDownLatch again = new CountDownLatch(1);
        handle.execute(again::countDown); // the handle still works
        await(again, "a task through the held handle");
    }

    /**
     * A terminated executor that is still referenced (a field kept after {@code close()}, a future or a lane handle of
     * it kept) does not keep its workers: their idle entries stayed in the pool's idle stack after they ended, and kept
     * each worker, its thread and its 64 KB idle ring reachable (an outside audit: 265 KB per closed executor of four
     * threads, where a {@code ThreadPoolExecutor} kept 0.7 KB).
     */
    @Test
    @Timeout(30)
    void aTerminatedExecutorStillReferencedKeepsNoWorker() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("kept").coreThreads(2).build());
        java.util.concurrent.Executor handle = e.sequential("a");
        List<WeakReference<Object>> workers = new CopyOnWriteArrayList<>();
        List<WeakReference<Thread>> threads = new CopyOnWriteArrayList<>();
        CyclicBarrier both = new CyclicBarrier(2);
        List<Future<?>> futures = new java.util.ArrayList<>();
        for (int i = 0; i < 2; i++) {
            futures.add(e.submit(() -> { // one on each core worker: the barrier needs both at once
                workers.add(new WeakReference<>(Worker.current()));
                threads.add(new WeakReference<>(Thread.currentThread()));
                both.await(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS);
                return null;
            }));
        }
        for (Future<?> f : futures) {
            TestSupport.get(f);
        }
        waitUntil("both workers to park", () -> e.statistics().active() == 0);
        e.close();
        waitUntil("the workers and their threads to be collected while the executor is kept", () -> {
            System.gc();
            return workers.stream().allMatch(w -> w.get() == null) && threads.stream().allMatch(t -> t.get() == null);
        }, () -> workers.stream().filter(w -> w.get() != null).count() + " of 2 workers kept");
        assertTrue(e.isTerminated() && handle != null && futures.get(0).isDone());
    }

    /**
     * Nor does it keep its checker's thread or a submitter's that has ended, nor through them the context class
     * loaders they hold (an outside audit: a submitter with a class loader of its own started the executor, and after
     * {@code close()} the loader stayed reachable). The checker's ended thread stayed in its field; the submit count's
     * cell of a submitter that ended in the second before termination stayed until a read folded it, and nothing reads
     * the count of a terminated executor.
     */
    @Test
    @Timeout(30)
    void aTerminatedExecutorStillReferencedKeepsNeitherItsCheckerThreadNorAnEndedSubmitter() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("kept-threads").coreThreads(1).build());
        CountDownLatch ran = new CountDownLatch(1);
        Thread submitter = new Thread(() -> e.execute(ran::countDown));
        submitter.start();
        submitter.join();
        await(ran, "the submitter's task");
        Thread checker = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(e.name() + "-checker")).findFirst()
                .orElseThrow(() -> new AssertionError("no checker thread"));
        List<WeakReference<Thread>> ended = List.of(new WeakReference<>(submitter), new WeakReference<>(checker));
        submitter = null;
        checker = null;
        e.close();
        waitUntil("the submitter and the checker's thread to be collected while the executor is kept", () -> {
            System.gc();
            return ended.stream().allMatch(t -> t.get() == null);
        }, () -> ended.stream().map(Reference::get).filter(Objects::nonNull).map(Thread::getName).toList() + " kept");
        assertTrue(e.isTerminated());
    }

    /**
     * Nor does it keep the lane maps' tables: a map never shrinks its table (README, "Memory follows the peak of live
     * contexts"), and termination emptied the maps but kept them, so a future kept after {@code close()} kept tables
     * sized for the most contexts ever live at once (5,267 KB after 500,000 sequential lanes, where README promises a
     * few kilobytes). Nothing can make a lane live once the executor has terminated, so the tables can go.
     */
    @Test
    @Timeout(60)
    void aTerminatedExecutorStillReferencedKeepsNoLaneMapTable() throws Exception {
        int perKind = 150_000; // each map's table then takes about 2 MB
        GatlingExecutor e = gatling("kept-maps").coreThreads(1).maxThreads(1).build();
        Future<?> kept;
        try {
            CountDownLatch gate = cleanup.occupy(e); // holds the worker, not the executor
            Runnable nothing = () -> { };
            for (int i = 0; i < perKind; i++) {
                e.execute(new Seq(i, nothing));
                e.execute(new Coal(i, nothing));
            }
            assertEquals(2L * perKind, e.statistics().liveContexts(), "every lane live at once");
            gate.countDown();
            kept = e.submit(nothing);
            TestSupport.get(kept);
        } finally {
            e.close();
        }
        assertEquals(0, e.statistics().liveContexts());
        WeakReference<GatlingExecutor> executor = new WeakReference<>(e);
        long withExecutor = TestSupport.usedHeapAfterGc();
        Reference.reachabilityFence(kept);
        kept = null;
        e = null;
        long retainedKb = (withExecutor - TestSupport.usedHeapAfterGc()) / 1024;
        // Reachable some other way, the executor would be in both figures, and nothing below would be shown.
        assertNull(executor.get(), "the executor outlived the future that kept it");
        assertTrue(retainedKb < 512, "a terminated executor kept by a future retained " + retainedKb + " KB after "
                + 2 * perKind + " lanes were live at once");
    }

    /**
     * Nor the tables of its admission under {@code Overflow.block}: the queues of parked submitters (a map of the
     * contexts' queues, their published heads, the executor-wide queue) never shrink either, and termination left them
     * sized for the most submitters ever parked at once: 4,106 KB kept by a future after 100,000 virtual submitters had
     * waited for room in as many contexts. Once the executor is shut down no submitter waits any more, so the last one
     * out, or termination, drops them. Virtual submitters (JDK 21+): that many parked platform threads would not fit.
     */
    @Test
    @Timeout(120)
    void aTerminatedExecutorStillReferencedKeepsNoTableOfItsWaitingSubmitters() throws Exception {
        ThreadFactory submitters = TestSupport.virtualThreadFactory();
        List<WeakReference<GatlingExecutor>> executor = new ArrayList<>(1);
        Future<?>[] kept = {futureOfAnExecutorWhoseSubmittersWaited(100_000, submitters, executor)};
        long withExecutor = TestSupport.usedHeapAfterGc();
        Reference.reachabilityFence(kept[0]);
        kept[0] = null;
        long retainedKb = (withExecutor - TestSupport.usedHeapAfterGc()) / 1024;
        // Reachable some other way, the executor would be in both figures, and nothing below would be shown.
        assertNull(executor.get(0).get(), "the executor outlived the future that kept it");
        assertTrue(retainedKb < 512, "a terminated executor kept by a future retained " + retainedKb
                + " KB after 100000 submitters waited for room at once");
    }

    /**
     * Parks {@code contexts} submitters for room at once, one per full context, lets them all in, closes the executor
     * and returns a future of it (the executor itself is unreachable from the caller once this returns, but through
     * the weak reference added to {@code executor}).
     */
    private Future<?> futureOfAnExecutorWhoseSubmittersWaited(int contexts, ThreadFactory submitters,
            List<WeakReference<GatlingExecutor>> executor) throws Exception {
        GatlingExecutor e = gatling("kept-admission").coreThreads(1).maxThreads(1).maxQueuedPerContext(1)
                .overflow(Overflow.block(Duration.ofMinutes(5))).build();
        executor.add(new WeakReference<>(e));
        try {
            CountDownLatch gate = cleanup.occupy(e); // holds the worker, not the executor
            Runnable nothing = () -> { };
            for (int i = 0; i < contexts; i++) {
                e.execute(new Seq(i, nothing)); // each context's lane full
            }
            List<Thread> waiting = new ArrayList<>(contexts);
            for (int i = 0; i < contexts; i++) {
                Seq second = new Seq(i, nothing);
                Thread t = submitters.newThread(() -> e.execute(second));
                t.start();
                waiting.add(t);
            }
            waitUntil("every submitter parked for room", () -> e.statistics().waitingSubmitters() == contexts,
                    () -> e.statistics().toString(), 60_000);
            gate.countDown();
            for (Thread t : waiting) {
                t.join();
            }
            assertEquals(2L * contexts + 1, e.statistics().submitted(), e.statistics().toString());
            Future<?> kept = e.submit(nothing);
            TestSupport.get(kept);
            return kept;
        } finally {
            e.close();
        }
    }

    /** Item 6: a periodic coalescing task whose pending run was replaced was cancelled for good. */
    @Test
    @Timeout(20)
    void aPeriodicCoalescingTaskSkipsAReplacedRunAndGoesOn() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("periodic-coalescing").coreThreads(2).build());
        CountDownLatch gate = cleanup.occupy(r -> e.execute(new Coal("c", r)));
        AtomicInteger runs = new AtomicInteger();
        // A period far longer than the steps below take: with 5 ms, a next run that came due between the wait and
        // the count below made a second replacement, and the count read 2 (seen under load).
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Coal("c", runs::incrementAndGet), 0, 100,
                TimeUnit.MILLISECONDS);
        waitUntil("the periodic run pending in lane c", () -> e.statistics().submitted() >= 2);
        // Replaces the pending periodic run (counted at this call). The periodic task's next run, due later, replaces
        // this one in turn if the lane is still held then: it is the newer task, and that is coalescing.
        e.execute(new Coal("c", NOOP));
        assertEquals(1, e.statistics().coalesced(), e.statistics().toString());
        gate.countDown();
        waitUntil("three more periodic runs", () -> runs.get() >= 3);
        assertFalse(periodic.isDone(), "the periodic task ended: " + periodic);
        periodic.cancel(false);
    }

    /**
     * A periodic coalescing task whose pending run a submit replaced is in no queue until that submitter puts it back
     * on the timer; a {@code shutdownNow} in that window made the put-back fail and cancelled the task, which had
     * never started: neither run nor returned (24 of 300 rounds in an outside audit). The only worker is held by a
     * task that ignores interrupts, so the periodic task can only wait; a second thread keeps replacing its runs.
     */
    @Test
    @Timeout(60)
    void aPeriodicTaskWhoseRunWasJustReplacedIsReturnedByShutdownNow() throws Exception {
        for (int round = 0; round < 200; round++) {
            GatlingExecutor e = cleanup.track(gatling("skip-vs-stop").coreThreads(1).maxThreads(1).build());
            AtomicBoolean release = new AtomicBoolean();
            CountDownLatch holding = new CountDownLatch(1);
            e.execute(() -> {
                holding.countDown();
                while (!release.get()) {
                    Thread.onSpinWait(); // deaf to shutdownNow's interrupt: the periodic task never runs
                }
            });
            await(holding, "the task holding the only worker");
            ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Coal("c", NOOP), 0, 20, TimeUnit.MICROSECONDS);
            AtomicInteger replacements = new AtomicInteger();
            Thread replacer = new Thread(() -> {
                try {
                    for (;;) {
                        e.execute(new Coal("c", NOOP));
                        replacements.incrementAndGet();
                    }
                } catch (RejectedExecutionException shutDown) {
                    // done
                }
            });
            replacer.start();
            int enough = 50 + 50 * (round % 4);
            List<Runnable> returned;
            try {
                waitUntil("replacements under way", () -> replacements.get() >= enough);
                returned = e.shutdownNow();
                replacer.join(10_000);
                assertFalse(replacer.isAlive(), "round " + round + ": the replacer still submits after shutdownNow");
            } finally {
                release.set(true); // else the only worker spins on a core for the rest of the JVM (non-daemon)
            }
            assertTrue(e.awaitTermination(10, TimeUnit.SECONDS), "round " + round + ": not terminated");
            assertTrue(returned.contains(periodic), "round " + round + ": the periodic task, which never ran, was "
                    + "not returned (cancelled: " + periodic.isCancelled() + ")");
            assertFalse(periodic.isDone(), "round " + round + ": returned, yet done");
        }
    }

    /** Two distinct tasks that are equal. */
    static final class EqualTask implements Runnable {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        public void run() {
            runs.incrementAndGet();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof EqualTask;
        }

        @Override
        public int hashCode() {
            return 0;
        }
    }

    /**
     * Item 7: a submit that saw shutdown after queueing its task took it back with {@code remove(Object)}, which
     * removes the first <em>equal</em> element: another caller's accepted task was lost and the rejected one ran.
     * No caller's code runs between the queueing and the look at the state (the wake-up of a worker, which may run the
     * thread factory, comes after the count), so the debugger holds the second submit there while the executor shuts
     * down, the first, equal, task still queued behind the one worker's running task.
     */
    @Test
    void aRejectedSubmitTakesBackItsOwnTaskNotAnEqualOne() throws Exception {
        DebuggedChild.Meeting queued = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(TakeBackChild.class, List.of(
                DebuggedChild.Spot.line("queued", Engine.class,
                        "if (!internal && state != RUNNING && readyQueue.takeBack(item)) {"),
                DebuggedChild.Spot.entry("shut", TakeBackChild.class, "shut"),
                DebuggedChild.Spot.entry("release", TakeBackChild.class, "release")),
                (spot, thread, held) -> {
                    switch (spot) {
                        case "queued":
                            if (!TakeBackChild.SUBMITTER.equals(thread.name()) || queued.reached()) {
                                return true;
                            }
                            return queued.windowReached(thread, held);
                        case "shut":
                            return queued.mainReady(thread);
                        default:
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertTrue(out.contains("child: rejected true, accepted ran 1, rejected ran 0, terminated true"), out);
    }

    /** The child JVM of {@link #aRejectedSubmitTakesBackItsOwnTaskNotAnEqualOne}. */
    static final class TakeBackChild {
        static final String SUBMITTER = "submitter";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("equal").coreThreads(1).maxThreads(1).build();
            CountDownLatch gate = new CountDownLatch(1);
            TestSupport.hold(e, gate);
            EqualTask accepted = new EqualTask();
            EqualTask rejected = new EqualTask();
            e.execute(accepted); // queued behind the running task
            AtomicBoolean refused = new AtomicBoolean();
            Thread submitter = new Thread(() -> {
                try {
                    e.execute(rejected);
                } catch (RejectedExecutionException expected) {
                    refused.set(true);
                }
            }, SUBMITTER);
            submitter.start();
            shut(); // until the submitter is held between its queueing and its look at the state
            e.shutdown();
            release();
            submitter.join(10_000);
            gate.countDown();
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println("child: rejected " + refused.get() + ", accepted ran " + accepted.runs.get()
                    + ", rejected ran " + rejected.runs.get() + ", terminated " + terminated);
            System.exit(0);
        }

        static void shut() {
        }

        static void release() {
        }

        private TakeBackChild() {
        }
    }

    /**
     * Item 8: the interrupt status was cleared after each task, not right before the next, so an interrupt sent to a
     * worker between tasks reached the next task (185 of 427k tasks under an interrupter). Deterministic: the worker
     * is held between tasks in the executor's uncaught-exception handler, which it calls after a task has thrown and
     * before it takes the next one, and is interrupted there; the next task must not start interrupted.
     */
    @Test
    @Timeout(20)
    void anInterruptBetweenTasksDoesNotReachTheNextTask() throws Exception {
        AtomicBoolean release = new AtomicBoolean();
        CountDownLatch held = new CountDownLatch(1);
        AtomicReference<Thread> heldThread = new AtomicReference<>();
        GatlingExecutor e = cleanup.track(gatling("interrupt-between").coreThreads(1).maxThreads(1)
                .uncaughtExceptionHandler((thread, failure) -> {
                    heldThread.set(thread);
                    held.countDown();
                    while (!release.get()) {
                        Thread.onSpinWait(); // not interruptible: the interrupt stays pending
                    }
                }).build());
        try {
            e.execute(new Seq("ctx", () -> {
                throw new IllegalStateException("the task ends; the handler holds its worker");
            }));
            await(held, "the worker in the uncaught-exception handler");
            Thread worker = heldThread.get();
            worker.interrupt();
            assertTrue(worker.isInterrupted(), "the interrupt is pending while the worker is between tasks");
            AtomicReference<Thread> ranOn = new AtomicReference<>();
            AtomicBoolean startedInterrupted = new AtomicBoolean();
            CountDownLatch secondRan = new CountDownLatch(1);
            e.execute(new Seq("ctx", () -> {
                startedInterrupted.set(Thread.currentThread().isInterrupted());
                ranOn.set(Thread.currentThread());
                secondRan.countDown();
            }));
            release.set(true);
            await(secondRan, "the next task");
            assertSame(worker, ranOn.get(), "the next task ran on the interrupted worker (maxThreads 1)");
            assertFalse(startedInterrupted.get(), "the next task started with the interrupt status set by an"
                    + " interrupt delivered between tasks");
        } finally {
            release.set(true);
        }
    }

    /**
     * Item 9: with every worker stuck on the CPU in one long task, no thread was started because all cores were
     * busy, so another context's task waited for the stuck tasks to end (2,996 ms of 3 s). SPEC point 7: a worker
     * that has run one task longer than blockedThreshold is stuck, whatever it is doing.
     */
    @Test
    @Timeout(30)
    void tasksStuckOnTheCpuDoNotStallOtherContexts() throws Exception {
        int cores = Runtime.getRuntime().availableProcessors();
        GatlingExecutor e = cleanup.track(gatling("cpu-stuck").coreThreads(cores).maxThreads(cores + 4)
                .checkPeriod(Duration.ofMillis(50)).blockedThreshold(Duration.ofMillis(100)).build());
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch spinning = new CountDownLatch(cores);
        try {
            for (int i = 0; i < cores; i++) {
                e.execute(new Seq("spinner-" + i, () -> {
                    spinning.countDown();
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                    while (!stop.get() && System.nanoTime() - end < 0) {
                        Thread.onSpinWait();
                    }
                }));
            }
            await(spinning, "every worker spinning");
            long submitted = System.nanoTime();
            CountDownLatch other = new CountDownLatch(1);
            AtomicLong waited = new AtomicLong();
            e.execute(new Seq("other", () -> {
                waited.set(System.nanoTime() - submitted);
                other.countDown();
            }));
            assertTrue(other.await(5, TimeUnit.SECONDS));
            assertTrue(waited.get() < TimeUnit.MILLISECONDS.toNanos(1500), "another context waited "
                    + waited.get() / 1_000_000 + " ms behind tasks stuck on the CPU: " + e.statistics());
        } finally {
            stop.set(true);
        }
    }

    /**
     * A context whose hashCode throws an Error when the checker dispatches its task (a caller's bug that shows only
     * then: one that throws at once throws at the call, where the task is scheduled).
     */
    private static final class PoisonContext {
        @Override
        public int hashCode() {
            if (Thread.currentThread().getName().endsWith("-checker")) {
                throw new AssertionError("hashCode of a broken context");
            }
            return 1;
        }
    }

    /**
     * Also seen: an Error from a context's hashCode while a due task was dispatched ended the checker thread (it
     * caught only RuntimeException), so the timer and termination stopped for good.
     */
    @Test
    @Timeout(20)
    void anErrorAtDispatchFailsThatTaskOnlyAndTheTimerLivesOn() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("dispatch-error").coreThreads(1).build());
        startCheckerRunning(e); // the context throws on the checker's thread only
        ScheduledFuture<?> poisoned = e.schedule(new Seq(new PoisonContext(), NOOP), 1, TimeUnit.MILLISECONDS);
        ExecutionException failure = assertThrows(ExecutionException.class, () -> poisoned.get(5, TimeUnit.SECONDS));
        assertInstanceOf(AssertionError.class, failure.getCause());
        assertEquals(0, e.statistics().failed(), "a task that never ran counted as failed");
        ScheduledFuture<String> later = e.schedule(() -> "still ticking", 5, TimeUnit.MILLISECONDS);
        assertEquals("still ticking", later.get(5, TimeUnit.SECONDS));
        e.shutdown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
    }

    /**
     * A context whose hashCode throws while {@code broken}, on threads whose name contains {@code where} only: a
     * caller's bug that shows after the context's tasks were accepted, met first by the executor's own threads.
     */
    private static final class BreakingContext {
        final String where;
        volatile boolean broken;

        BreakingContext(String where) {
            this.where = where;
        }

        @Override
        public int hashCode() {
            if (broken && Thread.currentThread().getName().contains(where)) {
                throw new IllegalStateException("hashCode of a broken context");
            }
            return 1;
        }
    }

    private GatlingExecutor boundedOneWorker(String name, List<Throwable> reported) {
        return cleanup.track(gatling(name).coreThreads(1).maxThreads(1).maxQueuedPerContext(1)
                .overflow(Overflow.block(Duration.ofSeconds(30))).uncaughtExceptionHandler((t, x) -> reported.add(x))
                .build());
    }

    /**
     * Starts a thread that submits {@code task} to the full lane of {@code context}, and waits until {@code waiting}
     * submitters wait for room. What its submit throws goes to {@code thrown}.
     */
    private static Thread waitingSubmitter(GatlingExecutor e, Object context, Runnable task, int waiting,
                                           AtomicReference<Throwable> thrown) {
        Thread t = new Thread(() -> {
            try {
                e.sequential(context).execute(task);
            } catch (RuntimeException | Error failed) {
                thrown.set(failed);
            }
        }, "waiting-submitter-" + waiting);
        t.start();
        waitUntil("submitter " + waiting + " waiting for room", () -> e.statistics().waitingSubmitters() == waiting);
        return t;
    }

    /** Holds the only worker in {@code context}'s lane and takes the lane's one place; returns the worker's gate. */
    private CountDownLatch holdFullLane(GatlingExecutor e, Object context) {
        CountDownLatch gate = cleanup.occupy(blocker -> e.sequential(context).execute(blocker));
        e.sequential(context).execute(NOOP);
        return gate;
    }

    /** A context whose equals throws (one that casts without looking, say). */
    private static final class ThrowingEquals {
        private final int hash;

        ThrowingEquals(int hash) {
            this.hash = hash;
        }

        @Override
        public boolean equals(Object o) {
            throw new ClassCastException("equals of a broken context");
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private static void assertEnds(Thread submitter) throws InterruptedException {
        submitter.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(submitter.isAlive(), submitter.getName() + " is still waiting");
    }

    private static void assertTerminatesHavingRun(GatlingExecutor e, long tasks) throws InterruptedException {
        e.shutdown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
        assertEquals(tasks, e.statistics().executed());
    }

    /**
     * A context that broke while a submitter waits for room in its lane: the checker's look for room (each tick while
     * anyone waits) hashed it, and the exception ended the checker thread. Nothing restarted it, so delayed tasks
     * stopped and the executor never terminated. Failed before: the delayed task never ran.
     */
    @Test
    @Timeout(30)
    void aContextThatBreaksWhileASubmitterWaitsLeavesTheCheckerRunning() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = boundedOneWorker("poll-broken", reported);
        BreakingContext k = new BreakingContext("-checker");
        CountDownLatch gate = holdFullLane(e, k);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread submitter = waitingSubmitter(e, k, NOOP, 1, thrown);
        k.broken = true;
        waitUntil("the checker's look meeting the broken context", () -> !reported.isEmpty());
        k.broken = false;
        assertInstanceOf(IllegalStateException.class, reported.get(0));
        gate.countDown();
        assertEnds(submitter);
        assertNull(thrown.get());
        ScheduledFuture<String> later = e.schedule(() -> "still ticking", 5, TimeUnit.MILLISECONDS); // on the checker
        assertEquals("still ticking", later.get(5, TimeUnit.SECONDS));
        assertTerminatesHavingRun(e, 4);
    }

    /**
     * A context that broke while a submitter waits for room in its lane: the worker that took the lane's task woke
     * that submitter first, by the context, outside the task's guard; the exception skipped the task, its slot
     * already taken: neither run nor returned. Failed before: one of the context's two tasks never ran.
     */
    @Test
    @Timeout(30)
    void aContextThatBreaksWhileASubmitterWaitsLosesNoTaskOnTheWorker() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = boundedOneWorker("started-broken", reported);
        BreakingContext k = new BreakingContext("-core-");
        CountDownLatch gate = cleanup.occupy(e); // the only worker
        CountDownLatch ran = new CountDownLatch(2);
        e.sequential(k).execute(ran::countDown); // the lane's one place
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread submitter = waitingSubmitter(e, k, ran::countDown, 1, thrown);
        k.broken = true;
        gate.countDown(); // the worker takes k's task while the submitter waits
        assertTrue(ran.await(5, TimeUnit.SECONDS), "a task of the broken context was lost: " + e.statistics());
        k.broken = false;
        assertEnds(submitter);
        assertNull(thrown.get());
        assertTerminatesHavingRun(e, 3);
    }

    /**
     * A context that breaks on every thread while a submitter waits for room in its lane: woken by the checker, the
     * waiter's attempt throws at its call, as it should, but its way out of the wait hashed the context again, threw
     * once more and skipped giving the admission lock back and counting itself out, so every later wait, and
     * shutdown, hung. Hung before, on the checker's mend alone (the lock held by a thread that had left).
     */
    @Test
    @Timeout(30)
    void aContextThatBreaksEverywhereWhileASubmitterWaitsFailsThatSubmitAndHoldsNothing() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = boundedOneWorker("all-broken", reported);
        BreakingContext k = new BreakingContext(""); // every thread
        CountDownLatch gate = holdFullLane(e, k);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread submitter = waitingSubmitter(e, k, NOOP, 1, thrown);
        k.broken = true;
        try {
            assertEnds(submitter);
        } finally {
            k.broken = false;
        }
        assertInstanceOf(IllegalStateException.class, thrown.get(), "the context's own failure, at the waiting call");
        assertEquals(0, e.statistics().waitingSubmitters());
        // The lock is free: another submitter waits for room in the same full lane, and gets it.
        AtomicReference<Throwable> nextThrown = new AtomicReference<>();
        Thread next = waitingSubmitter(e, k, NOOP, 1, nextThrown);
        gate.countDown();
        assertEnds(next);
        assertNull(nextThrown.get());
        assertTerminatesHavingRun(e, 3);
    }

    /**
     * A context whose equals throws, used as one object by every submitter: its waiters share one queue and are let
     * in in arrival order. The admission's maps, once keyed by a key made per look, called that equals on the same
     * object twice, read the failure as unequal, and queued each waiter apart (two heads, two entries).
     */
    @Test
    @Timeout(30)
    void waitersOfAContextWhoseEqualsThrowsShareOneQueueInArrivalOrder() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = boundedOneWorker("equals-broken", reported);
        Object k = new ThrowingEquals(1);
        CountDownLatch gate = holdFullLane(e, k);
        List<String> order = new CopyOnWriteArrayList<>();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread a = waitingSubmitter(e, k, () -> order.add("a"), 1, thrown);
        Thread b = waitingSubmitter(e, k, () -> order.add("b"), 2, thrown);
        assertEquals(1, e.engine().admission.contextQueueCount(), "the context's waiters queued apart");
        assertAdmittedInArrivalOrder(gate, a, b, thrown, order);
        assertTrue(reported.isEmpty(), () -> "reported: " + reported);
    }

    /**
     * Another context whose equals throws (one that casts without looking), with the same hash as a context whose
     * submitters wait: its submit fails at its call, and the waiting context's queue is left as it was. A first mend
     * of the admission's keys marked a key whose equals had thrown as equal only to itself, the waiting context's
     * mapped key included: its next submitter missed the queue and waited in a second one.
     */
    @Test
    @Timeout(30)
    void aCollidingContextWhoseEqualsThrowsLeavesAnotherContextsQueueWhole() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = boundedOneWorker("collision", reported);
        // Contexts equal to one another but each a new object, as boxed numbers are.
        CountDownLatch gate = holdFullLane(e, new String("seven"));
        Object broken = new ThrowingEquals("seven".hashCode());
        List<String> order = new CopyOnWriteArrayList<>();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread a = waitingSubmitter(e, new String("seven"), () -> order.add("a"), 1, thrown);
        assertThrows(ClassCastException.class, () -> e.sequential(broken).execute(NOOP));
        Thread b = waitingSubmitter(e, new String("seven"), () -> order.add("b"), 2, thrown);
        assertEquals(1, e.engine().admission.contextQueueCount(), "the waiting context's queue was split");
        assertAdmittedInArrivalOrder(gate, a, b, thrown, order);
    }

    /** Opens the full lane; the waiting submitters a and b (in that order) end, and their tasks run in that order. */
    private static void assertAdmittedInArrivalOrder(CountDownLatch gate, Thread a, Thread b,
                                                     AtomicReference<Throwable> thrown, List<String> order)
            throws InterruptedException {
        gate.countDown();
        assertEnds(a);
        assertEnds(b);
        assertNull(thrown.get());
        waitUntil("both tasks run", () -> order.size() == 2);
        assertEquals(List.of("a", "b"), order);
    }

    /**
     * A context whose hashCode, when the checker calls it while dispatching a due task, holds the dispatch until the
     * thread calling shutdownNow() is parked: shutdownNow has then reached the timer's lock.
     */
    private static final class DispatchHoldingContext {
        final CountDownLatch entered = new CountDownLatch(1);
        volatile Thread stopper;

        @Override
        public int hashCode() {
            if (Thread.currentThread().getName().endsWith("-checker")) {
                entered.countDown();
                waitUntil("shutdownNow parked on the timer's lock", () -> {
                    Thread t = stopper;
                    return t != null && t.getState() == Thread.State.WAITING;
                });
            }
            return 1;
        }

        @Override
        public boolean equals(Object o) {
            return o == this;
        }
    }

    /**
     * Found by the scheduled stress rounds: shutdownNow() drains the ready queue and the lanes, and the timer. Once it
     * no longer cancelled periodic tasks (item 1), which had taken the timer's lock before any drain, a due task that
     * the checker dispatched between the lane drain and the timer drain was in neither: neither run nor returned
     * (lost). The timer is now drained first: its lock waits out the dispatch in progress, whose task the lane drain
     * then returns. Seen failing with the timer drained last.
     */
    @Test
    @Timeout(20)
    void aTaskDispatchedWhileShutdownNowDrainsIsReturned() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("dispatch-vs-stop").coreThreads(1).build());
        startCheckerRunning(e); // the context holds the dispatch on the checker's thread only
        DispatchHoldingContext context = new DispatchHoldingContext();
        AtomicBoolean ran = new AtomicBoolean();
        ScheduledFuture<?> task = e.schedule(new Seq(context, () -> ran.set(true)), 20, TimeUnit.MILLISECONDS);
        await(context.entered, "the checker dispatching the due task");
        AtomicReference<List<Runnable>> returned = new AtomicReference<>();
        Thread stopper = new Thread(() -> returned.set(e.shutdownNow()));
        context.stopper = stopper;
        stopper.start();
        stopper.join(10_000);
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
        assertFalse(ran.get(), "the task ran after shutdownNow");
        assertTrue(returned.get().contains(task), "lost: neither run nor returned by shutdownNow: " + returned.get());
        assertFalse(task.isDone(), "returned, yet done: " + task);
    }

    /**
     * A thread factory that starts the threads it makes (a common mistake): the executor's own {@code start()} then
     * failed, so it gave the slot back and counted a failed start, but its worker (or checker) already ran on the
     * factory's thread, uncounted: 24 to 32 threads with {@code maxThreads} 4, a checker per failed start, and workers
     * parked for good after termination. Now, as in {@code ThreadPoolExecutor}, a thread that is not new is refused,
     * and it runs nothing of ours. Here the first worker's and the first checker's threads come started; the ones
     * after are fine.
     */
    @Test
    @Timeout(20)
    void aThreadTheFactoryStartedItselfIsRefusedAndRunsNothing() throws Exception {
        List<Thread> made = new CopyOnWriteArrayList<>();
        AtomicInteger workerCalls = new AtomicInteger();
        AtomicInteger checkerCalls = new AtomicInteger();
        ThreadFactory factory = r -> {
            boolean checker = TestSupport.isChecker(r);
            int n = (checker ? checkerCalls : workerCalls).incrementAndGet();
            Thread t = new Thread(r, (checker ? "checker-" : "worker-") + n);
            t.setDaemon(true);
            if (n == 1) {
                t.start();
            }
            made.add(t);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("started-by-factory").coreThreads(2).maxThreads(4)
                .threadFactory(factory).build());
        CountDownLatch ran = new CountDownLatch(200);
        for (int i = 0; i < 200; i++) {
            e.execute(ran::countDown);
        }
        await(ran, "every task");
        ExecutorStatistics s = e.statistics();
        assertEquals(2, s.threadStartFailures(), s.toString());
        assertTrue(s.peakThreads() <= 2, s.toString());
        for (Thread t : made) {
            if (t.getName().endsWith("-1")) {
                t.join(5_000);
                assertFalse(t.isAlive(), t.getName() + " was refused, yet it runs: " + describeStack(t));
            }
        }
        e.shutdown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
        for (Thread t : made) {
            t.join(5_000);
            assertFalse(t.isAlive(), t.getName() + " outlived termination: " + describeStack(t));
        }
    }

    /**
     * A factory may return a thread that runs the runnable it was given on a thread of its own (for a larger stack,
     * say). The gate ran the body only on the thread the pool had started, so it ran nothing: the worker's slot stayed
     * taken, the task never ran, and the executor never terminated (an outside audit; {@code ThreadPoolExecutor} works
     * with such a factory). The first thread to run the gate after the start runs the body, and wake-ups, the
     * checker's looks and interrupts go to it: here a worker parks and is woken, a delayed task needs the checker, and
     * {@code shutdownNow} must interrupt a running task.
     */
    @Test
    @Timeout(30)
    void aFactoryWhoseThreadRunsTheRunnableOnAnInnerThreadGetsAWorkingExecutor() throws Exception {
        List<Thread> inner = new CopyOnWriteArrayList<>();
        ThreadFactory wrapping = r -> {
            Thread outer = new Thread(() -> {
                Thread t = new Thread(null, r, Thread.currentThread().getName() + "-inner", 1 << 20);
                t.setDaemon(true);
                inner.add(t);
                t.start();
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "wrapping");
            outer.setDaemon(true);
            return outer;
        };
        GatlingExecutor e = gatling("inner-threads").coreThreads(1).threadFactory(wrapping).build();
        CountDownLatch first = new CountDownLatch(1);
        e.execute(first::countDown);
        await(first, "a task on the worker's inner thread");
        Worker worker = e.engine().pool.workers()[0];
        waitUntil("the worker to park", () -> worker.parkState() == Worker.PARKED);
        assertTrue(inner.contains(worker.thread), "the worker's thread is the one that runs it");
        CountDownLatch second = new CountDownLatch(1);
        e.execute(second::countDown); // wakes the parked worker: an unpark of the thread that runs it
        await(second, "a task after the worker parked");
        assertEquals("due", e.schedule(() -> "due", 20, TimeUnit.MILLISECONDS).get(5, TimeUnit.SECONDS));
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        e.execute(() -> {
            running.countDown();
            try {
                new CountDownLatch(1).await();
            } catch (InterruptedException expected) {
                interrupted.countDown();
            }
        });
        await(running, "the task to interrupt");
        e.shutdownNow();
        await(interrupted, "shutdownNow's interrupt of the running task");
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        assertEquals(0, e.statistics().threadStartFailures());
        for (Thread t : inner) {
            t.join(5_000);
            assertFalse(t.isAlive(), t.getName() + " outlived termination");
        }
    }

    /**
     * A factory whose thread ends without running the runnable it was given (a wrapper that fails before it calls it,
     * or a thread made for another runnable): the start had succeeded, so the worker's slot stayed taken for good. The
     * task never ran, no other worker was started (the one that never ran looked idle, ready to take work), and after
     * {@code shutdownNow} the executor never terminated (an outside audit). The checker now takes such a worker back as
     * a failed start, and the next start gets a thread that works.
     */
    @Test
    @Timeout(30)
    void aWorkerWhoseFactoryThreadNeverRunsItIsTakenBackAsAFailedStart() throws Exception {
        ThreadFactory factory = firstWorkerNeverRuns();
        GatlingExecutor e = cleanup.track(gatling("never-ran").coreThreads(1).threadFactory(factory).build());
        CountDownLatch ran = new CountDownLatch(2);
        e.execute(ran::countDown);
        e.sequential("a").execute(ran::countDown);
        await(ran, "the tasks, on the worker started after the first one never ran");
        ExecutorStatistics s = e.statistics();
        assertEquals(1, s.threadStartFailures(), s.toString());
        assertTerminatesAfterShutdown(e);
    }

    /**
     * As above, with a factory none of whose worker threads ever runs: {@code shutdownNow} returns the task, and the
     * executor then terminates, where the slots those threads held kept it from terminating for good.
     */
    @Test
    @Timeout(30)
    void anExecutorWhoseWorkerThreadsNeverRunTerminatesAfterShutdownNow() throws Exception {
        ThreadFactory factory = r -> TestSupport.isChecker(r) ? daemon(new Thread(r)) : neverRuns(r);
        GatlingExecutor e = cleanup.track(gatling("never-runs").coreThreads(1).threadFactory(factory).build());
        Runnable task = () -> { };
        e.execute(task);
        assertEquals(List.of(task), e.shutdownNow());
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), () -> "not terminated: "
                + e.statistics());
        assertEquals(0, e.statistics().threads(), () -> e.statistics().toString());
    }

    /**
     * As above, for the checker's thread: published, it was left termination, which it never claimed, and the timer,
     * which it never ran, so a delayed task never ran and {@code shutdown()} never ended in termination. Once seen
     * ended, it leaves the timer to the workers through its grace, and it is taken back as a failed start where the
     * checker is relied on (here by the caller waiting for termination).
     */
    @Test
    @Timeout(30)
    void aCheckerWhoseFactoryThreadNeverRunsItIsTakenBackAsAFailedStart() throws Exception {
        FirstCheckerNeverRuns factory = new FirstCheckerNeverRuns();
        GatlingExecutor e = cleanup.track(gatling("checker-never-ran").coreThreads(1).threadFactory(factory).build());
        TestSupport.get(e.submit(() -> { })); // the worker runs, and its start made the checker's thread
        factory.awaitEnded();
        assertEquals("due", e.schedule(() -> "due", 20, TimeUnit.MILLISECONDS)
                .get(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertTerminatesAfterShutdown(e);
        assertEquals(1, e.statistics().threadStartFailures(), () -> e.statistics().toString());
    }

    /**
     * A factory that hands the runnable to a thread of its own, which gets to it 20 ms later, and lets the thread it
     * returned end at once: the gate is open behind an ended thread until then. Taken back at the first look that
     * found the thread ended, such a start failed every time (the checker looks every few milliseconds while work
     * waits: 444 failed starts in 3 s, and the task that needed an auxiliary worker never ran). An ended thread is now
     * taken back only after a grace ({@link StartGate#NEVER_RAN_GRACE_NANOS}).
     */
    @Test
    @Timeout(30)
    void aFactoryThatHandsTheRunnableToALateThreadOfItsOwnLosesNoStart() throws Exception {
        ThreadFactory late = r -> daemon(new Thread(() -> daemon(new Thread(() -> {
            TestSupport.sleep(20);
            r.run();
        })).start()));
        GatlingExecutor e = cleanup.track(gatling("late-handover").coreThreads(1).threadFactory(late).build());
        assertATaskBehindABlockedOneGetsAnAuxiliaryWorker(e);
        assertEquals(0, e.statistics().threadStartFailures(), () -> e.statistics().toString());
    }

    /**
     * Blocks the one core worker of {@code e} in a task, then waits for a task submitted behind it, which only an
     * auxiliary worker can run.
     */
    private void assertATaskBehindABlockedOneGetsAnAuxiliaryWorker(GatlingExecutor e) {
        CountDownLatch gate = cleanup.gate();
        CountDownLatch firstRunning = new CountDownLatch(1);
        e.execute(() -> {
            firstRunning.countDown();
            TestSupport.blockQuietly(gate);
        });
        await(firstRunning, "the first task");
        CountDownLatch second = new CountDownLatch(1);
        e.execute(second::countDown);
        await(second, "the task that needs an auxiliary worker");
    }

    /**
     * The checker's thread from the factory ends without running it 300 ms after its start, after the last worker has
     * ended on {@code shutdown()}: the worker's end found it alive, and a caller already waiting for termination was
     * not told to look again, so the wait ran out (and {@code close()} waited a day). Waiters now ask again every
     * check period while the checker's thread has not begun.
     */
    @Test
    @Timeout(30)
    void aCheckerThreadThatEndsAfterTheLastWorkerIsStillTakenBack() throws Exception {
        ThreadFactory factory = r -> TestSupport.isChecker(r) ? neverRuns(r, 300) : daemon(new Thread(r));
        GatlingExecutor e = cleanup.track(gatling("checker-ends-late").coreThreads(1).threadFactory(factory).build());
        TestSupport.get(e.submit(() -> { }));
        assertTerminatesAfterShutdown(e);
    }

    /**
     * A factory that hands the runnable to a thread of its own only after the start was taken back (the thread it
     * returned ended at once, and the grace passed): the slot was given back and a worker started in its place, so the
     * late thread must run nothing of ours. Running the worker there would add a worker that nothing counts or stops.
     */
    @Test
    @Timeout(60)
    void aRunnableHandedOverAfterItsStartWasTakenBackRunsNothing() throws Exception {
        AtomicInteger workerCalls = new AtomicInteger();
        AtomicReference<GatlingExecutor> executor = new AtomicReference<>();
        AtomicReference<Thread> late = new AtomicReference<>();
        ThreadFactory factory = r -> {
            if (TestSupport.isChecker(r) || workerCalls.incrementAndGet() > 1) {
                return daemon(new Thread(r));
            }
            Thread handover = daemon(new Thread(() -> {
                waitUntil("the start taken back", () -> executor.get().statistics().threadStartFailures() == 1);
                r.run();
            }));
            late.set(handover);
            return daemon(new Thread(handover::start));
        };
        GatlingExecutor e = cleanup.track(gatling("late-after-reclaim").coreThreads(1).threadFactory(factory).build());
        executor.set(e);
        CountDownLatch ran = new CountDownLatch(1);
        e.execute(ran::countDown);
        await(ran, "the task, on the worker started after the first start was taken back");
        Thread handover = late.get();
        handover.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertFalse(handover.isAlive(), "the late thread runs the worker whose start was taken back");
        assertEquals(1, e.statistics().threadStartFailures(), () -> e.statistics().toString());
        assertTerminatesAfterShutdown(e);
    }

    /**
     * A worker taken back as a failed start leaves the pool's list: left there, the checker kept counting it as an
     * idle worker ready to take work, and started no auxiliary worker for a task queued behind a blocked one.
     */
    @Test
    @Timeout(30)
    void aWorkerTakenBackAsAFailedStartIsNotCountedAsIdle() throws Exception {
        ThreadFactory factory = firstWorkerNeverRuns();
        GatlingExecutor e = cleanup.track(gatling("taken-back").coreThreads(1).threadFactory(factory).build());
        assertATaskBehindABlockedOneGetsAnAuxiliaryWorker(e); // the first runs on the worker started after the take-back
        assertEquals(1, e.statistics().threadStartFailures(), () -> e.statistics().toString());
    }

    /**
     * As {@link #aCheckerThreadThatEndsAfterTheLastWorkerIsStillTakenBack}, for a caller that polls
     * {@code isTerminated()} instead of waiting in {@code awaitTermination}: nobody else looks at the checker's
     * thread, so the poll itself must take it back, and the executor then terminates.
     */
    @Test
    @Timeout(30)
    void aCallerPollingIsTerminatedSeesTheEndWhenTheCheckerThreadNeverRuns() throws Exception {
        ThreadFactory factory = r -> TestSupport.isChecker(r) ? neverRuns(r) : daemon(new Thread(r));
        GatlingExecutor e = cleanup.track(gatling("checker-never-runs-polled").coreThreads(1).threadFactory(factory)
                .build());
        TestSupport.get(e.submit(() -> { }));
        e.shutdown();
        waitUntil("isTerminated()", e::isTerminated, () -> e.statistics().toString());
    }

    /**
     * After the checker's thread from the factory ended without running it, a delayed task runs though nobody waits on
     * its future: the {@code schedule} call found the thread ended and started its grace, and nothing looked again
     * after the grace, so the task never ran (20 s here). The workers now drive the timer through the grace, as after a
     * failed start. Once the grace is over, {@code schedule} calls take the thread back and start the checker again.
     */
    @Test
    @Timeout(30)
    void aDelayedTaskNobodyWaitsForRunsWhileTheCheckerThreadThatNeverRanIsInItsGrace() throws Exception {
        FirstCheckerNeverRuns factory = new FirstCheckerNeverRuns();
        GatlingExecutor e = startedWithAnEndedChecker(gatling("schedule-in-grace"), factory);
        CountDownLatch due = new CountDownLatch(1);
        e.schedule(due::countDown, 20, TimeUnit.MILLISECONDS);
        await(due, "the delayed task, its future never waited on");
        waitUntil("the checker started again by schedule calls", () -> {
            e.schedule(() -> { }, 1, TimeUnit.MILLISECONDS);
            return factory.checkerCalls.get() == 2;
        }, () -> e.statistics().toString());
        assertEquals(1, e.statistics().threadStartFailures(), () -> e.statistics().toString());
        assertTerminatesAfterShutdown(e);
    }

    /**
     * As {@link #aDelayedTaskNobodyWaitsForRunsWhileTheCheckerThreadThatNeverRanIsInItsGrace}, for a delayed task
     * scheduled once the grace has begun, with the only worker parked without a timeout (nothing was in the timer):
     * the {@code schedule} call woke the checker's thread, published though ended, instead of an idle worker, and the
     * task never ran (20 s here).
     */
    @Test
    @Timeout(30)
    void aDelayedTaskScheduledDuringTheCheckersGraceWakesAParkedWorker() throws Exception {
        FirstCheckerNeverRuns factory = new FirstCheckerNeverRuns();
        GatlingExecutor e = startedWithAnEndedChecker(gatling("schedule-later-in-grace"), factory);
        TestSupport.get(e.schedule(() -> { }, 1, TimeUnit.MILLISECONDS)); // its look begins the grace
        Thread worker = factory.workers.get(0);
        waitUntil("the worker to park with nothing in the timer", () -> worker.getState() == Thread.State.WAITING,
                () -> e.statistics().toString());
        CountDownLatch due = new CountDownLatch(1);
        e.schedule(due::countDown, 10, TimeUnit.MILLISECONDS); // within the grace (1 s) on all but a stalled machine
        await(due, "the delayed task, its future never waited on");
        assertTerminatesAfterShutdown(e);
    }

    /**
     * A delayed task scheduled while the checker's thread from the factory is still alive, due after that thread ended
     * without running the checker: the workers left the timer to the published thread and parked without a timeout,
     * and nothing looked at the thread again, so the task never ran (20 s here; 5 runs of 5 in a probe, with or without
     * other tasks flowing). A worker now times its park by the timer while the checker is not running its rounds.
     */
    @Test
    @Timeout(30)
    void aDelayedTaskDueAfterTheCheckersThreadEndedWithoutRunningItRuns() throws Exception {
        AtomicInteger checkerCalls = new AtomicInteger();
        ThreadFactory factory = r -> TestSupport.isChecker(r) && checkerCalls.incrementAndGet() == 1
                ? neverRuns(r, 300) : daemon(new Thread(r));
        GatlingExecutor e = cleanup.track(gatling("checker-ends-later").coreThreads(1).threadFactory(factory).build());
        TestSupport.get(e.submit(() -> { })); // the worker, and the checker's thread, alive for 300 ms
        CountDownLatch due = new CountDownLatch(1);
        e.schedule(due::countDown, 600, TimeUnit.MILLISECONDS);
        await(due, "the delayed task, due after the checker's thread ended");
        assertTerminatesAfterShutdown(e);
    }

    /**
     * Work queued behind a stuck worker, with the checker's thread from the factory ended without running it: the
     * submit that found every worker busy only unparked that ended thread, nothing else looked at it while tasks
     * flowed, and the work waited for the stuck task to end (not within 20 s here; 5 runs of 5 in a probe). The submit
     * now looks at the thread, takes it back once a second has passed since its start, and starts the checker again,
     * which finds the stuck worker and starts a thread for the work.
     */
    @Test
    @Timeout(30)
    void workBehindAStuckWorkerMovesOnWhenTheCheckersThreadEndedWithoutRunningIt() throws Exception {
        FirstCheckerNeverRuns factory = new FirstCheckerNeverRuns();
        GatlingExecutor e = startedWithAnEndedChecker(gatling("checker-never-ran-stuck")
                .checkPeriod(Duration.ofMillis(20)).blockedThreshold(Duration.ofMillis(50)), factory);
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(StartGate.NEVER_RAN_GRACE_NANOS) + 100); // its grace, from its start
        CountDownLatch gate = cleanup.gate();
        TestSupport.hold(e, gate);
        CountDownLatch behind = new CountDownLatch(1);
        e.execute(behind::countDown);
        await(behind, "the task behind the stuck one");
        assertEquals(2, factory.checkerCalls.get(), () -> e.statistics().toString());
        gate.countDown();
        assertTerminatesAfterShutdown(e);
    }

    /**
     * After failed starts of the checker (a factory failing for a while), its retries wait up to a check period; the
     * factory then works again. A task blocks, and the one submit behind it came within that wait: it tried nothing,
     * and nobody came back once the wait was over, so the task behind waited for the blocked one (not within 20 s
     * here; 3 runs of 3 in a probe). The first submit since the last failed start that finds every worker busy now
     * tries at once. A submit behind a briefly held worker first tries (and fails) while the factory still fails: a
     * try that counted once for the whole absence left this one to the backoff again.
     */
    @Test
    @Timeout(30)
    void workBehindAStuckWorkerMovesOnWhenTheCheckersFactoryRecoversWithinItsBackoff() throws Exception {
        AtomicBoolean failChecker = new AtomicBoolean(true);
        ThreadFactory factory = r -> {
            if (TestSupport.isChecker(r) && failChecker.get()) {
                throw new IllegalStateException("no thread for the checker now");
            }
            return daemon(new Thread(r));
        };
        GatlingExecutor e = cleanup.track(gatling("checker-backoff").coreThreads(1).threadFactory(factory)
                .checkPeriod(Duration.ofSeconds(5)).blockedThreshold(Duration.ofMillis(50)).build());
        CountDownLatch brief = cleanup.gate();
        TestSupport.hold(e, brief);
        CountDownLatch behindBrief = new CountDownLatch(1);
        e.execute(behindBrief::countDown); // every worker busy: this submit tries the checker's start, which fails
        brief.countDown();
        await(behindBrief, "the task behind the briefly held one");
        List<ScheduledFuture<?>> far = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            far.add(e.schedule(() -> { }, 1, TimeUnit.HOURS)); // each tries the checker: the waits grow to 5 s
        }
        far.forEach(f -> f.cancel(false));
        assertTrue(e.statistics().threadStartFailures() >= 10, () -> e.statistics().toString());
        failChecker.set(false);
        CountDownLatch gate = cleanup.gate();
        TestSupport.hold(e, gate);
        CountDownLatch behind = new CountDownLatch(1);
        e.execute(behind::countDown);
        await(behind, "the task behind the stuck one");
        gate.countDown();
        assertTerminatesAfterShutdown(e);
    }

    /**
     * Starts the threads and waits until the checker runs its rounds: until then the workers drive the timer too (a
     * thread from the factory may never run the checker), and a due task may be dispatched on a worker.
     */
    private static void startCheckerRunning(GatlingExecutor e) throws Exception {
        TestSupport.get(e.submit(() -> { }));
        waitUntil("the checker to run its rounds", () -> e.engine().checker.running());
    }

    /**
     * An executor of one core worker from {@code factory}, its first task run (the worker's start made the checker's
     * thread), once that thread has ended without running the checker. Nothing has waited on a future of it.
     */
    private GatlingExecutor startedWithAnEndedChecker(GatlingExecutor.Builder builder, FirstCheckerNeverRuns factory)
            throws InterruptedException {
        GatlingExecutor e = cleanup.track(builder.coreThreads(1).threadFactory(factory).build());
        CountDownLatch workerRan = new CountDownLatch(1);
        e.execute(workerRan::countDown);
        await(workerRan, "the first task");
        factory.awaitEnded();
        return e;
    }

    /** A factory whose first thread for the checker ends without running it; every other thread is a plain daemon. */
    private static final class FirstCheckerNeverRuns implements ThreadFactory {
        final AtomicInteger checkerCalls = new AtomicInteger();
        final List<Thread> workers = new CopyOnWriteArrayList<>();
        private volatile Thread neverRan;

        @Override
        public Thread newThread(Runnable r) {
            if (TestSupport.isChecker(r) && checkerCalls.incrementAndGet() == 1) {
                neverRan = neverRuns(r);
                return neverRan;
            }
            Thread t = daemon(new Thread(r));
            if (!TestSupport.isChecker(r)) {
                workers.add(t);
            }
            return t;
        }

        /** Waits for the checker's first thread, made by now, to have ended. */
        void awaitEnded() throws InterruptedException {
            Thread t = neverRan;
            t.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
            assertFalse(t.isAlive(), "the factory's thread ended");
        }
    }

    /** A factory whose first thread for a worker ends without running it; every other thread is a plain daemon. */
    private static ThreadFactory firstWorkerNeverRuns() {
        AtomicInteger workerCalls = new AtomicInteger();
        return r -> TestSupport.isChecker(r) || workerCalls.incrementAndGet() > 1
                ? daemon(new Thread(r)) : neverRuns(r);
    }

    /** A thread that ends at once, with a failure it keeps to itself, without running {@code r}. */
    private static Thread neverRuns(Runnable r) {
        return neverRuns(r, 0);
    }

    /** As {@link #neverRuns(Runnable)}, ending {@code afterMillis} after its start. */
    private static Thread neverRuns(Runnable r, long afterMillis) {
        Thread t = new Thread(() -> {
            TestSupport.sleep(afterMillis);
            throw new IllegalStateException("a wrapper that fails before it runs " + r);
        });
        t.setUncaughtExceptionHandler((thread, failure) -> { });
        return daemon(t);
    }

    private static void assertTerminatesAfterShutdown(GatlingExecutor e) throws InterruptedException {
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), () -> "not terminated: "
                + e.statistics());
    }

    private static Thread daemon(Thread t) {
        t.setDaemon(true);
        return t;
    }

    /**
     * A factory whose thread runs the runnable it was given on two threads at once, its own and a twin it starts (a
     * broken wrapper, say): the body behind the runnable, a worker or the checker, must still run once. Two threads
     * running one worker's loop would run two tasks at once on an executor of one thread, and a second checker would
     * run rounds nothing stops. The first of the two to pass the start gate runs the body; the other returns at once.
     */
    @Test
    @Timeout(30)
    void aFactoryWhoseThreadRunsTheRunnableTwiceAtOnceGetsEachBodyRunOnce() throws Exception {
        List<Thread> made = new CopyOnWriteArrayList<>();
        ThreadFactory twice = r -> {
            Thread outer = new Thread(() -> {
                Thread twin = new Thread(r, Thread.currentThread().getName() + "-twin");
                twin.setDaemon(true);
                made.add(twin);
                twin.start();
                r.run();
                try {
                    twin.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "twice");
            outer.setDaemon(true);
            made.add(outer);
            return outer;
        };
        GatlingExecutor e = gatling("twice").coreThreads(1).maxThreads(1).threadFactory(twice).build();
        AtomicInteger running = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        Set<Thread> ranOn = ConcurrentHashMap.newKeySet();
        int tasks = 400;
        CountDownLatch done = new CountDownLatch(tasks);
        for (int i = 0; i < tasks; i++) {
            e.execute(new Seq("c" + (i % 50), () -> {
                mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
                ranOn.add(Thread.currentThread());
                TestSupport.spin(20);
                running.decrementAndGet();
                done.countDown();
            }));
        }
        await(done, "the tasks");
        assertEquals(1, mostAtOnce.get(), "tasks ran at once on an executor of one thread, on " + ranOn);
        assertEquals(1, ranOn.size(), "tasks ran on " + ranOn);
        e.close();
        for (Thread t : made) {
            t.join(5_000);
            assertFalse(t.isAlive(), t.getName() + " outlived termination: " + describeStack(t));
        }
    }

    /**
     * A core worker being started is not among the workers until its factory returns; the checker, nudged meanwhile
     * by a submit that found no worker free, counted only the running one and started an auxiliary worker beside the
     * core start: three threads for a CPU-bound load on two cores (an outside audit, with a factory taking 100 ms a
     * thread: 3 of 5 runs). Here the second core start is held in the factory while the first core worker computes,
     * and a submit nudges the checker, which looks every 10 ms; in the 300 ms the start is held, no auxiliary worker
     * may be asked for.
     */
    @Test
    @Timeout(30)
    void aCoreStartInTheFactoryCountsAsAWorkerOnItsWay() throws Exception {
        assumeTrue(Runtime.getRuntime().availableProcessors() == 2, "the pool's numbers below are for two cores");
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch secondAsked = new CountDownLatch(1);
        AtomicInteger workersAsked = new AtomicInteger();
        ThreadFactory factory = r -> {
            if (!TestSupport.isChecker(r) && workersAsked.incrementAndGet() == 2) {
                secondAsked.countDown();
                TestSupport.blockQuietly(release);
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("slow-core-start").coreThreads(2).maxThreads(4)
                .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofSeconds(10)).threadFactory(factory)
                .build());
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch computing = new CountDownLatch(1);
        e.execute(new Seq("a", () -> {
            computing.countDown();
            while (!stop.get()) {
                Thread.onSpinWait(); // on the CPU: a running worker, not a blocked or stuck one
            }
        }));
        await(computing, "the first core worker's task");
        Thread starter = new Thread(() -> e.execute(new Seq("b", () -> { })), "starter"); // its start is held
        starter.start();
        await(secondAsked, "the second core start in the factory");
        CountDownLatch third = new CountDownLatch(1);
        e.execute(new Seq("c", third::countDown)); // no worker free, the core full: nudges the checker
        Thread.sleep(300); // 30 of the checker's looks, with the second core start held in the factory
        int askedWhileHeld = workersAsked.get();
        release.countDown();
        starter.join(5_000);
        await(third, "the third task");
        stop.set(true);
        assertEquals(2, askedWhileHeld, "workers asked of the factory while a core start was in it");
        assertEquals(0, e.statistics().auxiliaryThreadsStarted(), e.statistics().toString());
    }

    /**
     * A worker's idle ring may name a lane that is active again: its next task came within the grace, and most often
     * that very worker took it and runs its task now. The checker looked at such an entry every 2 ms until the lane
     * finished, which cannot happen while the task runs: a task that blocked there woke the checker 500 times a second
     * (an outside audit: 46 to 61 ms of the checker's CPU over 2 s, against 2 with a fresh context). Such an entry now
     * waits for the checker's usual pace; a lane within its grace, or a worker that has started an item since the last
     * sweep, still asks for a look within 2 ms.
     */
    @Test
    void aRingEntryOfALaneActiveAgainAsksTheCheckerForNoQuickLook() {
        Engine e = LincheckLaneTest.engine();
        Worker w = LincheckLaneTest.worker(e, null);
        LincheckLaneTest.set(e.pool, "workers", new Worker[] {w});
        e.submitToLane(false, "a", () -> { }, null, false);
        Lane lane = (Lane) e.readyQueue.poll();
        w.clock = System.nanoTime(); // the lane's idle time: its grace runs from here
        assertEquals(Lane.IDLED, lane.runBatch(w, 1));
        w.rememberIdle(lane);
        long now = w.clock;
        assertTrue(e.checker.sweepIdleLanes(now), "a lane within its grace asks for a look soon");
        e.submitToLane(false, "a", () -> { }, null, false); // active again, queued: its entry waits for it to finish
        assertEquals(Checker.SWEEP_LATER, Checker.releaseIdleLanesOf(w, now));
        assertFalse(e.checker.sweepIdleLanes(now + TimeUnit.MILLISECONDS.toNanos(3)));
        assertFalse(e.checker.sweepIdleLanes(now + TimeUnit.MILLISECONDS.toNanos(6)));
        assertEquals(lane, w.idleLaneAcquire(w.idleStartOpaque()), "the entry goes only once the lane is finished");
    }

    private static String describeStack(Thread t) {
        return java.util.Arrays.toString(t.getStackTrace());
    }

    /** peakThreads() counted a worker slot reserved for a start that failed: 1 with no worker thread ever alive. */
    @Test
    @Timeout(20)
    void aWorkerStartThatFailedIsNotInThePeak() {
        ThreadFactory factory = r -> {
            if (TestSupport.isChecker(r)) {
                Thread t = new Thread(r);
                t.setDaemon(true);
                return t;
            }
            throw new IllegalStateException("no worker threads here");
        };
        GatlingExecutor e = cleanup.track(gatling("no-workers").coreThreads(2).threadFactory(factory).build());
        e.execute(NOOP);
        e.execute(NOOP);
        ExecutorStatistics s = e.statistics();
        assertTrue(s.threadStartFailures() >= 2, s.toString());
        assertEquals(0, s.threads(), s.toString());
        assertEquals(0, s.peakThreads(), s.toString());
        assertEquals(2, e.shutdownNow().size(), "both tasks are still there to return");
    }

    /** A task that holds on to nothing but a payload whose collection is watched. */
    private static final class Payload implements java.util.concurrent.Callable<String> {
        final byte[] bytes = new byte[1024];

        @Override
        public String call() {
            return "done";
        }
    }

    /**
     * A future kept by its caller kept the caller's task (and all it captured) after it completed or was cancelled:
     * {@code FutureTask} drops its callable then, this executor's futures kept a second reference (50 of 50 completed
     * futures, and 200 cancelled while queued, kept their 1 MB tasks from outside).
     */
    @Test
    @Timeout(30)
    void aFutureKeptByItsCallerDoesNotKeepItsTaskOnceDone() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("kept-future").coreThreads(1).build());
        List<java.util.concurrent.Future<String>> kept = new java.util.ArrayList<>();
        List<WeakReference<Payload>> tasks = new java.util.ArrayList<>();
        CountDownLatch gate = cleanup.occupy(e.sequential("busy"));
        for (int i = 0; i < 20; i++) {
            Payload p = new Payload();
            tasks.add(new WeakReference<>(p));
            java.util.concurrent.Future<String> f = i % 2 == 0 ? e.submit(p)
                    : e.schedule(p, 1, TimeUnit.MILLISECONDS);
            kept.add(f);
        }
        Payload queued = new Payload();
        WeakReference<Payload> cancelledTask = new WeakReference<>(queued);
        java.util.concurrent.Future<String> cancelled = e.submit(queued);
        queued = null;
        assertTrue(cancelled.cancel(false));
        waitUntil("the task of a future cancelled while queued to be collected", () -> {
            System.gc();
            return cancelledTask.get() == null;
        });
        gate.countDown();
        for (java.util.concurrent.Future<String> f : kept) {
            assertEquals("done", f.get(10, TimeUnit.SECONDS));
        }
        waitUntil("the tasks of completed futures to be collected", () -> {
            System.gc();
            return tasks.stream().allMatch(r -> r.get() == null);
        });
        assertTrue(cancelled.isCancelled());
        java.lang.ref.Reference.reachabilityFence(kept); // the futures were held all along
    }

    /**
     * An auxiliary worker counted itself in {@code threads()} first thing, but its start (and the core size it raised)
     * was counted by its starter after {@code Thread.start()} returned, so the new worker's first tasks could read a
     * snapshot with two threads, no auxiliary start and no bump (3 to 7 rounds in 200, in an audit's probe; here one
     * snapshot per round over 150 rounds, each a fresh executor whose one core worker is stuck). A snapshot taken
     * elsewhere read the threads apart from those counts, after the pool's lock, and could see the same (51 of 6.4
     * million snapshots of a watcher in a review's probe): the watcher here checks every snapshot it takes.
     */
    @Test
    @Timeout(60)
    void anAuxiliaryWorkersFirstTaskSeesItsStartCounted() throws Exception {
        AtomicReference<GatlingExecutor> current = new AtomicReference<>();
        AtomicReference<ExecutorStatistics> incoherent = new AtomicReference<>();
        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<Throwable> watcherFailure = new AtomicReference<>();
        AtomicInteger watched = new AtomicInteger();
        Thread watcher = new Thread(() -> {
            while (!done.get()) {
                GatlingExecutor e = current.get();
                if (e != null) {
                    ExecutorStatistics s = e.statistics();
                    watched.incrementAndGet();
                    if (s.threads() > 1 + s.auxiliaryThreadsStarted() || s.coreThreads() != 1 + s.coreBumps()) {
                        incoherent.compareAndSet(null, s);
                    }
                }
            }
        }, "statistics-watcher");
        // a snapshot that throws (of a closing executor, say) would end the watch unseen
        watcher.setUncaughtExceptionHandler((t, failure) -> watcherFailure.compareAndSet(null, failure));
        watcher.start();
        try {
            for (int round = 0; round < 150; round++) {
                GatlingExecutor e = cleanup.track(gatling("aux-counted").coreThreads(1).maxThreads(2)
                        .coreBumpThreshold(1).blockedThreshold(Duration.ofMillis(5)).checkPeriod(Duration.ofMillis(5))
                        .build());
                current.set(e);
                CountDownLatch gate = cleanup.occupy(e.sequential("stuck"));
                AtomicReference<ExecutorStatistics> seen = new AtomicReference<>();
                CountDownLatch ran = new CountDownLatch(1);
                e.sequential("other").execute(() -> {
                    seen.set(e.statistics());
                    ran.countDown();
                });
                await(ran, "the auxiliary worker's first task");
                gate.countDown();
                e.close();
                ExecutorStatistics s = seen.get();
                int r = round;
                assertEquals(2, s.threads(), () -> "round " + r + ": " + s);
                assertEquals(1, s.auxiliaryThreadsStarted(), () -> "round " + r + ": " + s);
                assertEquals(1, s.coreBumps(), () -> "round " + r + ": " + s);
                assertEquals(2, s.coreThreads(), () -> "round " + r + ": " + s);
            }
        } finally {
            done.set(true);
            watcher.join();
        }
        assertNull(watcherFailure.get(), () -> "the watcher's snapshot threw: " + watcherFailure.get());
        assertTrue(watched.get() > 0, "the watcher took no snapshot");
        assertNull(incoherent.get(), () -> "a snapshot with a thread its starts do not account for: " + incoherent);
    }

    /**
     * A {@code checkPeriod} of centuries (any over about 292 years, {@code ChronoUnit.FOREVER} among them) was accepted
     * and switched the checker off: its next inspection, the period added to the clock, wrapped into the past, so it
     * never inspected (a context queued behind a stuck worker never ran) and, while that work waited, never slept
     * (a core's worth of CPU). Such a period now counts as about 73 years, and the backlog's quick looks go on.
     */
    @Test
    @Timeout(30)
    void aCheckPeriodOfCenturiesStillMovesWorkAwayFromAStuckWorker() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("forever-period").coreThreads(1).maxThreads(2)
                .checkPeriod(java.time.temporal.ChronoUnit.FOREVER.getDuration())
                .blockedThreshold(Duration.ofMillis(50)).build());
        cleanup.occupy(e.sequential("stuck"));
        CountDownLatch ran = new CountDownLatch(1);
        e.sequential("other").execute(ran::countDown);
        await(ran, "the context queued behind the stuck worker to run on a new thread");
        assertEquals(1, e.statistics().auxiliaryThreadsStarted());
    }

    /**
     * A terminated executor kept every periodic task {@code shutdownNow} had returned, and all they captured, for as
     * long as it was referenced (a 1 MB payload, one periodic task waiting on the timer and one due in its busy lane:
     * both still reachable through the executor after the caller dropped the returned list;
     * {@code ScheduledThreadPoolExecutor} keeps neither).
     */
    @Test
    @Timeout(30)
    void aTerminatedExecutorDoesNotKeepThePeriodicTasksShutdownNowReturned() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("kept-periodic").coreThreads(1).build());
        cleanup.occupy(e.sequential("busy"));
        byte[][] payloads = {new byte[1 << 20], new byte[1 << 20]};
        Runnable waiting = new Seq("other", () -> payloads[0][0]++);
        Runnable dueInLane = new Seq("busy", () -> payloads[1][0]++);
        WeakReference<Runnable> waitingRef = new WeakReference<>(waiting);
        WeakReference<Runnable> dueRef = new WeakReference<>(dueInLane);
        e.scheduleAtFixedRate(waiting, 1, 1, TimeUnit.HOURS);
        e.scheduleWithFixedDelay(dueInLane, 0, 1, TimeUnit.HOURS);
        waiting = null;
        dueInLane = null;
        List<Runnable> returned = e.shutdownNow();
        assertEquals(2, returned.size(), () -> "returned " + returned);
        returned.clear();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
        waitUntil("the periodic tasks shutdownNow returned to be collected", () -> {
            System.gc();
            return waitingRef.get() == null && dueRef.get() == null;
        });
        java.lang.ref.Reference.reachabilityFence(e); // the executor is referenced all along
    }

    /**
     * {@code shutdownNow()} drains the ready queue, then closes each lane and takes its waiting task. A lane put in the
     * ready queue between the two (by a submitter that activated it before the shutdown and reached its offer only
     * after the drain, by a worker sending it round at its batch's end, or by the checker) stayed there, closed and
     * empty, for good: nothing polls the queue of a terminated executor. With it stayed its context: a 1 MB context
     * still reachable through the terminated executor after the caller had dropped it. Here the offer comes, as in
     * {@code QueueAgeTest}, from the hashCode of a lane's context that {@code shutdownNow} unmaps after its drain.
     */
    @Test
    @Timeout(30)
    void aTerminatedExecutorDoesNotKeepTheContextOfALaneQueuedDuringShutdownNow() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("kept-lane").coreThreads(1).maxThreads(1).build());
        Engine engine = e.engine();
        cleanup.occupy(e); // its worker, interrupted by shutdownNow, sees the stop and takes nothing more
        Object context = new byte[1 << 20];
        WeakReference<Object> contextRef = new WeakReference<>(context);
        e.coalescing(context).execute(() -> { });
        AtomicReference<Lane> lane = new AtomicReference<>(engine.lanes(true).get(context));
        context = null;
        AtomicBoolean armed = new AtomicBoolean();
        Object late = new Object() {
            @Override
            public int hashCode() {
                if (armed.getAndSet(false)) {
                    engine.readyQueue.offerLane(lane.getAndSet(null), engine.stamp()); // its task still waits
                }
                return 1;
            }
        };
        e.sequential(late).execute(() -> { });
        armed.set(true);
        List<Runnable> returned = e.shutdownNow();
        assertEquals(2, returned.size(), () -> "returned " + returned);
        assertNull(lane.get(), "the lane was offered during shutdownNow");
        returned.clear();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
        waitUntil("the context of the lane queued during shutdownNow to be collected", () -> {
            System.gc();
            return contextRef.get() == null;
        });
        Reference.reachabilityFence(e); // the executor is referenced all along
    }

    /**
     * As above, with two lanes queued after the drain: termination must take every lane out of the ready queue, not
     * only the first it meets (a drop that stopped there left the second lane, and its context, kept by the
     * terminated executor).
     */
    @Test
    @Timeout(30)
    void aTerminatedExecutorDoesNotKeepTheContextsOfTwoLanesQueuedDuringShutdownNow() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("kept-lanes").coreThreads(1).maxThreads(1).build());
        Engine engine = e.engine();
        cleanup.occupy(e); // its worker, interrupted by shutdownNow, sees the stop and takes nothing more
        Object first = new byte[1 << 20];
        Object second = new byte[1 << 20];
        WeakReference<Object> firstRef = new WeakReference<>(first);
        WeakReference<Object> secondRef = new WeakReference<>(second);
        e.coalescing(first).execute(() -> { });
        e.coalescing(second).execute(() -> { });
        AtomicReference<Lane> firstLane = new AtomicReference<>(engine.lanes(true).get(first));
        AtomicReference<Lane> secondLane = new AtomicReference<>(engine.lanes(true).get(second));
        first = null;
        second = null;
        AtomicBoolean armed = new AtomicBoolean();
        Object late = new Object() {
            @Override
            public int hashCode() {
                if (armed.getAndSet(false)) { // both tasks still wait
                    engine.readyQueue.offerLane(firstLane.getAndSet(null), engine.stamp());
                    engine.readyQueue.offerLane(secondLane.getAndSet(null), engine.stamp());
                }
                return 1;
            }
        };
        e.sequential(late).execute(() -> { });
        armed.set(true);
        List<Runnable> returned = e.shutdownNow();
        assertEquals(3, returned.size(), () -> "returned " + returned);
        assertNull(secondLane.get(), "the lanes were offered during shutdownNow");
        returned.clear();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
        assertTrue(engine.readyQueue.isEmpty(), "a lane queued during shutdownNow is still in the ready queue");
        waitUntil("the contexts of both lanes queued during shutdownNow to be collected", () -> {
            System.gc();
            return firstRef.get() == null && secondRef.get() == null;
        });
        Reference.reachabilityFence(e); // the executor is referenced all along
    }

    /**
     * A worker stuck in one long task kept the contexts of lanes the checker had released: its idle ring still named
     * the released lanes (279 to 1,721 contexts of 16 KB, with liveContexts() 0, until the task returned).
     */
    @Test
    @Timeout(30)
    void aStuckWorkerDoesNotKeepTheContextsOfLanesReleasedForIt() throws Exception {
        // Room for a second worker: a lane emptied as the long task arrives goes round the ready queue once more,
        // behind it, and needs another worker to come round (a worker stuck with nobody else to take the queue
        // holds what waits there, lanes that went round included).
        GatlingExecutor e = cleanup.track(gatling("stuck-ring").coreThreads(1).maxThreads(2).build());
        List<WeakReference<Object>> contexts = new java.util.ArrayList<>();
        // One task at a time, each to a context of its own: the worker empties each lane with nothing else queued,
        // so it makes it idle and rings it.
        for (int i = 0; i < 300; i++) {
            Object context = new byte[1024];
            contexts.add(new WeakReference<>(context));
            CountDownLatch ran = new CountDownLatch(1);
            e.execute(new Seq(context, ran::countDown));
            await(ran, "task " + i);
        }
        long ringed = e.statistics().liveContexts();
        CountDownLatch gate = cleanup.occupy(e);
        waitUntil("the checker to release the idle lanes", () -> e.statistics().liveContexts() == 0,
                () -> e.statistics().toString());
        waitUntil("the released contexts to be collected while the worker is stuck", () -> {
            System.gc();
            return contexts.stream().allMatch(r -> r.get() == null);
        }, () -> contexts.stream().filter(r -> r.get() != null).count() + " of 300 still reachable (" + ringed
                + " lanes were live as the worker got stuck)");
        assertEquals(1, e.statistics().active(), "the worker was stuck all along");
        gate.countDown();
    }

    private static Engine engineOf(GatlingExecutor e) throws ReflectiveOperationException {
        Field engine = GatlingExecutor.class.getDeclaredField("engine");
        engine.setAccessible(true);
        return (Engine) engine.get(e);
    }

    /** A {@code shutdown()} running on its own thread, held inside its cancel of {@link #periodic}. */
    private static final class HeldShutdown {
        final ScheduledTask<Object> periodic;
        final Thread thread;

        HeldShutdown(ScheduledTask<Object> periodic, Thread thread) {
            this.periodic = periodic;
            this.thread = thread;
        }
    }

    /**
     * Schedules a periodic task due in an hour, then calls {@code shutdown()} on a thread of its own, which takes the
     * task out of the timer and cancels it after letting the timer's lock go; returns once that cancel has begun. The
     * cancel waits for {@code proceed}.
     */
    private static HeldShutdown shutdownHeldInItsCancel(GatlingExecutor e, CountDownLatch proceed)
            throws ReflectiveOperationException, InterruptedException {
        Engine engine = engineOf(e);
        CountDownLatch cancelling = new CountDownLatch(1);
        long hour = TimeUnit.HOURS.toNanos(1);
        ScheduledTask<Object> periodic = new ScheduledTask<>(engine, java.util.concurrent.Executors.callable(NOOP),
                NOOP, TaskFuture.PLAIN, null, System.nanoTime() + hour, hour) {
            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                if (Thread.currentThread().getName().equals("shutdown")) {
                    cancelling.countDown();
                    TestSupport.blockIgnoringInterrupts(proceed);
                }
                return super.cancel(mayInterruptIfRunning);
            }
        };
        assertTrue(engine.timer.schedule(periodic, false));
        Thread shutdown = new Thread(e::shutdown, "shutdown");
        shutdown.setDaemon(true);
        shutdown.start();
        await(cancelling, "shutdown() cancelling the periodic task it took out");
        return new HeldShutdown(periodic, shutdown);
    }

    /** The timer's lock, held by a test to stop a scheduling thread at a chosen point. */
    private static ReentrantLock timerLock(GatlingExecutor e) throws ReflectiveOperationException {
        Field lock = TaskTimer.class.getDeclaredField("lock");
        lock.setAccessible(true);
        return (ReentrantLock) lock.get(engineOf(e).timer);
    }

    /**
     * A periodic future cancelled between the end of a run and the timer taking the next run back stayed in the
     * timer for good (its cancellation had found nothing to remove): 59 to 66 of 50,000 such futures still reachable
     * after their period, and {@code shutdownNow()} returned them, cancelled. The worker is held at that point by
     * the timer's lock.
     */
    @Test
    void aPeriodicTaskCancelledAsItsRunEndsLeavesTheTimer() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("cancel-periodic").coreThreads(1).build());
        ReentrantLock lock = timerLock(e);
        AtomicReference<Thread> runner = new AtomicReference<>();
        ScheduledFuture<?> f;
        lock.lock();
        try {
            f = e.scheduleWithFixedDelay(() -> runner.set(Thread.currentThread()), 0, 1, TimeUnit.HOURS);
            waitUntil("the first run to end and its worker to wait for the timer",
                    () -> runner.get() != null && lock.hasQueuedThread(runner.get()));
            assertTrue(f.cancel(false));
        } finally {
            lock.unlock();
        }
        waitUntil("the worker to have put the next run back", () -> !lock.hasQueuedThread(runner.get()));
        assertTrue(engineOf(e).timer.noDelayedWork(), "the cancelled task is still in the timer");
        List<Runnable> returned = e.shutdownNow();
        assertEquals(List.of(), returned, "a cancelled periodic task is not waiting for a run");
    }

    /**
     * A periodic task whose run throws is done for good, and leaves the timer's set of live periodic tasks as a
     * cancelled one does. Kept there, every periodic task that ever failed stayed reachable, with all it captured,
     * until shutdown, however long the executor ran.
     */
    @Test
    @Timeout(30)
    void aPeriodicTaskThatFailedLeavesTheTimer() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("failed-periodic").coreThreads(1).build());
        WeakReference<ScheduledFuture<?>> failed = aFailedPeriodicTask(e);
        waitUntil("the failed periodic task to be collected while the executor runs", () -> {
            System.gc();
            return failed.get() == null;
        });
        assertFalse(e.isShutdown());
    }

    /** Apart, so the test's frame holds no reference to the future. */
    private static WeakReference<ScheduledFuture<?>> aFailedPeriodicTask(GatlingExecutor e) {
        ScheduledFuture<?> f = e.scheduleAtFixedRate(() -> {
            throw new IllegalStateException("planned");
        }, 0, 1, TimeUnit.HOURS);
        assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
        return new WeakReference<>(f);
    }

    /**
     * {@code shutdownNow()} returned a delayed task whose cancellation was under way (its future cancelled, its
     * removal from the timer waiting for the lock the drain held); SPEC 10: the futures returned are neither done
     * nor cancelled.
     */
    @Test
    void shutdownNowDoesNotReturnADelayedTaskCancelledAsItDrains() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("cancel-drain").coreThreads(1).build());
        ReentrantLock lock = timerLock(e);
        ScheduledFuture<?> cancelled = e.schedule(NOOP, 1, TimeUnit.HOURS);
        ScheduledFuture<?> kept = e.schedule(NOOP, 1, TimeUnit.HOURS);
        Thread canceller = new Thread(() -> cancelled.cancel(false), "canceller");
        List<Runnable> returned;
        lock.lock();
        try {
            canceller.start();
            waitUntil("the cancellation to wait for the timer", () -> lock.hasQueuedThread(canceller));
            assertTrue(cancelled.isCancelled());
            returned = e.shutdownNow();
        } finally {
            lock.unlock();
        }
        canceller.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
        assertEquals(List.of(kept), returned);
        assertFalse(kept.isDone());
    }

    /** The JDK's pools return true at once when terminated, whatever the caller's interrupt status, and keep it. */
    @Test
    void awaitTerminationOfATerminatedExecutorIgnoresTheCallersInterrupt() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("await-interrupted").coreThreads(1).build());
        e.execute(NOOP);
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        Thread.currentThread().interrupt();
        try {
            assertTrue(e.awaitTermination(0, TimeUnit.NANOSECONDS));
            assertTrue(e.awaitTermination(1, TimeUnit.SECONDS));
            assertTrue(Thread.currentThread().isInterrupted(), "the caller's interrupt status is kept");
        } finally {
            Thread.interrupted();
        }
    }

    /**
     * A lane emptied while other work waited goes round the ready queue once more; when every worker then got stuck,
     * nobody came round to it, and it stayed mapped (and listed by contextStatistics) for as long as they were stuck,
     * with nothing queued or running; with room to grow it made the checker start an auxiliary worker for it. Here
     * each x task submits its y task, so x's lane empties with y waiting, and each y blocks its worker.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void anEmptiedLaneIsReleasedWhileEveryWorkerIsStuck(int workers) {
        GatlingExecutor e = cleanup.track(gatling("stuck-rounds").coreThreads(workers).maxThreads(workers)
                .checkPeriod(Duration.ofMillis(20)).blockedThreshold(Duration.ofMillis(20)).build());
        CountDownLatch gate = cleanup.gate();
        CountDownLatch stuck = new CountDownLatch(workers);
        for (int i = 0; i < workers; i++) {
            Runnable y = () -> {
                stuck.countDown();
                TestSupport.blockQuietly(gate);
            };
            String context = "y" + i;
            e.execute(new Seq("x" + i, () -> e.sequential(context).execute(y)));
        }
        await(stuck, "every worker stuck in a y task");
        waitUntil("the x lanes to be released", () -> e.statistics().liveContexts() == workers,
                () -> e.statistics() + " " + e.contextStatistics(), 2_000);
        for (ContextStatistics c : e.contextStatistics()) {
            assertTrue(c.context().toString().startsWith("y"), "only the stuck contexts are live: " + c);
        }
        gate.countDown();
    }

    /**
     * While the checker held a lane it had taken out of the ready queue empty, a worker that found nothing to run
     * after shutdown() asked whether the executor was quiescent (no: the lane was active) and parked for good; the
     * release that followed woke nobody, and the executor never terminated. Here the test takes the lane in the
     * checker's place (the checker thread is held back by its factory until the end), then hands it to the checker's
     * release once the worker has parked.
     */
    @Test
    void releasingAnEmptyRoundAfterShutdownLetsTheExecutorTerminate() throws Exception {
        CountDownLatch checkerGate = cleanup.gate();
        ThreadFactory factory = r -> TestSupport.isChecker(r)
                ? TestSupport.heldChecker(r, checkerGate)
                : new Thread(r, "round-worker");
        GatlingExecutor e = cleanup.track(gatling("round-shutdown").coreThreads(1).threadFactory(factory).build());
        Engine engine = engineOf(e);
        TestSupport.get(e.submit(() -> { })); // the worker first: a thread's start counted in a's trip
        Lane[] held = new Lane[1];
        CountDownLatch gate;
        for (int attempt = 0; ; attempt++) {
            // Lane a empties while the plain task waits: it goes round the ready queue once more, and the only
            // worker then runs the plain task, which blocks. A lane goes round only after a short trip by the coarse
            // clock (SequentialLane.ROUND_LIMIT_NANOS), so lane a is queued by a task on the worker, which takes it
            // next. Even so, a worker that loses its core for a millisecond between the two reads a long trip, and
            // the lane goes idle instead: that round is tried again with a new context.
            assertTrue(attempt < 20, "a lane emptied while the plain task waited never went round the queue");
            CountDownLatch thisGate = cleanup.gate();
            CountDownLatch blocking = new CountDownLatch(1);
            String a = "a" + attempt;
            e.execute(() -> e.execute(new Seq(a, () -> e.execute(() -> {
                blocking.countDown();
                TestSupport.blockQuietly(thisGate);
            }))));
            await(blocking, "the plain task");
            engine.readyQueue.takeEmptyRounds(lane -> held[0] = lane);
            if (held[0] != null) {
                gate = thisGate;
                break;
            }
            thisGate.countDown(); // lane a went idle: this round is let go
            TestSupport.awaitQuiescent(e);
        }
        e.shutdown();
        gate.countDown();
        Thread worker = TestSupport.liveThreads("round-worker").get(0);
        waitUntil("the worker to park", () -> worker.getState() == Thread.State.WAITING);
        engine.checker.releaseHeldRound(held[0]);
        checkerGate.countDown();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS), "not terminated: " + e.statistics());
    }

    /**
     * {@code shutdownNow()} while a task still ran left the lanes it drained mapped, closed, until termination:
     * {@code liveContexts()} counted four contexts where {@code contextStatistics()} listed one, the context whose
     * task runs on, and the running lane's chunk kept the three tasks returned from behind it reachable as long as it
     * ran.
     */
    @Test
    @Timeout(60)
    void shutdownNowLeavesNoLaneLiveAndKeepsNoReturnedTaskWhileATaskStillRuns() throws Exception {
        // One worker: the tasks of a and b wait in the ready queue, behind the lane of held, whose task runs on.
        GatlingExecutor e = cleanup.track(gatling("now-unmaps").coreThreads(1).maxThreads(1).build());
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch gate = cleanup.gate();
        e.execute(new Seq("held", () -> {
            started.countDown();
            TestSupport.blockIgnoringInterrupts(gate); // outlives shutdownNow's interrupt: the owner stays in its task
        }));
        await(started, "the held task to start");
        List<WeakReference<Runnable>> queued = queueBehind(e);
        assertReturned(e.shutdownNow(), queued);
        List<ContextStatistics> live = e.contextStatistics();
        assertEquals(1, live.size(), live::toString);
        assertEquals("held", live.get(0).context());
        assertEquals(1, e.statistics().liveContexts(), live::toString);
        waitUntil("the returned tasks to be collected while the held task runs", () -> {
            System.gc();
            return queued.stream().allMatch(r -> r.get() == null);
        }, () -> queued.stream().filter(r -> r.get() != null).count() + " of " + queued.size() + " still reachable");
        assertFalse(e.isTerminated(), "the held task still runs");
        gate.countDown();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(1, e.statistics().executed());
        assertEquals(queued.size(), e.statistics().returned());
        assertEquals(0, e.statistics().liveContexts());
    }

    /**
     * After {@code shutdown()}, an idle worker's look for quiescence closed every idle lane it walked, and a closed
     * lane can no longer be released: while one unrelated task ran on, {@code liveContexts()} counted every lane used
     * just before the shutdown (50 of 50, none with anything queued or running) until termination. SPEC 4: a lane is
     * released as soon as it has nothing queued and nothing running. The checker is held back, so no sweep releases
     * the lanes before the shutdown; both kinds of lane, since each map is walked on its own.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    @Timeout(30)
    void lanesClosedAfterShutdownAreReleasedWhileAnotherTaskRuns(boolean coalescing) throws Exception {
        CountDownLatch checkerGate = cleanup.gate();
        ThreadFactory factory = r -> TestSupport.isChecker(r) ? TestSupport.heldChecker(r, checkerGate) : new Thread(r);
        GatlingExecutor e = cleanup.track(gatling("closed-lanes").coreThreads(2).maxThreads(2).threadFactory(factory)
                .build());
        // Both core workers first (each holds one task, so the second must start): once the executor is shut down,
        // the one left idle is woken and looks for quiescence. With one worker, busy, nobody would look.
        CountDownLatch first = cleanup.occupy(e);
        cleanup.occupy(e).countDown();
        first.countDown();
        for (int i = 0; i < 50; i++) {
            CountDownLatch ran = new CountDownLatch(1);
            Runnable task = ran::countDown;
            e.execute(coalescing ? new Coal("k" + i, task) : new Seq("k" + i, task));
            await(ran, "task " + i);
        }
        CountDownLatch gate = cleanup.occupy(e); // a plain task: it holds no lane
        e.shutdown();
        waitUntil("the lanes to be released", () -> e.statistics().liveContexts() == 0,
                () -> e.statistics() + ", listed: " + e.contextStatistics(), 2_000);
        assertFalse(e.isTerminated(), "the held task still runs");
        gate.countDown();
        checkerGate.countDown();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
    }

    /**
     * A start of the checker that failed after its thread was published re-checked termination while it still held the
     * checker's start lock, and that check takes the timer's lock; a {@code schedule(task, 0)} dispatches under the
     * timer's lock and starts the checker on the way (through a worker start). After {@code shutdown()}, with no
     * worker alive, the two waited for each other for good, and {@code shutdown()} with them (3 of 3 runs of a probe
     * that raced them, within 21 rounds). Here the factory holds the first checker start until the dispatch waits
     * for it and the executor is shut down; every thread it gives has been started already, so every start fails.
     */
    @Test
    @Timeout(30)
    void aFailedCheckerStartBesideADispatchAtShutdownDoesNotDeadlock() throws Exception {
        CountDownLatch inFactory = new CountDownLatch(1);
        CountDownLatch factoryGate = cleanup.gate();
        AtomicBoolean firstChecker = new AtomicBoolean(true);
        ThreadFactory startedAlready = r -> {
            if (TestSupport.isChecker(r) && firstChecker.getAndSet(false)) {
                inFactory.countDown();
                TestSupport.blockQuietly(factoryGate);
            }
            Thread t = new Thread(() -> { });
            t.start();
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("start-lock").coreThreads(1).threadFactory(startedAlready).build());
        Field startLockField = Checker.class.getDeclaredField("startLock");
        startLockField.setAccessible(true);
        ReentrantLock startLock = (ReentrantLock) startLockField.get(engineOf(e).checker);
        // A delayed task: its worker's start fails, then the checker's start waits in the factory, holding the lock.
        Thread delayed = new Thread(() -> e.schedule(NOOP, 1, TimeUnit.HOURS), "schedules-delayed");
        delayed.start();
        await(inFactory, "the checker's start in the factory");
        // A task due now: dispatched under the timer's lock, its worker's start fails, and it waits for the checker's.
        Thread dueNow = new Thread(() -> e.schedule(NOOP, 0, TimeUnit.MILLISECONDS), "schedules-due-now");
        dueNow.start();
        waitUntil("the dispatch to wait for the checker's start", () -> startLock.hasQueuedThread(dueNow));
        Thread shutdown = new Thread(e::shutdown, "shuts-down");
        shutdown.start();
        waitUntil("the shutdown", e::isShutdown);
        factoryGate.countDown();
        for (Thread t : List.of(delayed, dueNow, shutdown)) {
            t.join(5_000);
            assertFalse(t.isAlive(), t.getName() + " is stuck: " + java.util.Arrays.toString(t.getStackTrace()));
        }
        assertEquals(2, e.shutdownNow().size(), "both tasks are returned, neither ran");
    }

    /**
     * A burst of periodic tasks, all cancelled again, left the timer's set of live periodic tasks at the size of the
     * burst: a million periodic tasks scheduled and cancelled kept 17 MB of empty table for the executor's life (an
     * {@code IdentityHashMap} never shrinks), where the timer's queue, beside it, gives its array back.
     */
    @Test
    @Timeout(60)
    void aBurstOfPeriodicTasksCancelledAgainLeavesNoTableBehind() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("periodic-burst").coreThreads(1).build());
        for (int i = 0; i < 1000; i++) { // warm up the timer's own structures before the baseline
            e.scheduleAtFixedRate(NOOP, 1, 1, TimeUnit.HOURS).cancel(false);
        }
        long before = TestSupport.usedHeapAfterGc();
        scheduleAndCancelPeriodic(e, 400_000);
        assertEquals(0, e.statistics().delayed());
        long grownKb = (TestSupport.usedHeapAfterGc() - before) / 1024;
        // The table of 400,000 entries is 8 MB with compressed references; nothing else stays.
        assertTrue(grownKb < 3 * 1024, "the heap grew by " + grownKb + " KB after every periodic task was cancelled");
        // Still works after the burst.
        CountDownLatch ran = new CountDownLatch(2);
        ScheduledFuture<?> f = e.scheduleAtFixedRate(ran::countDown, 0, 1, TimeUnit.MILLISECONDS);
        await(ran, "two runs of a periodic task scheduled after the burst");
        f.cancel(false);
    }

    /** Apart, so the test's frame holds none of the futures. */
    private static void scheduleAndCancelPeriodic(GatlingExecutor e, int n) {
        List<ScheduledFuture<?>> burst = new java.util.ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            burst.add(i % 2 == 0 ? e.scheduleAtFixedRate(NOOP, 1, 1, TimeUnit.HOURS)
                    : e.scheduleWithFixedDelay(NOOP, 1, 1, TimeUnit.HOURS));
        }
        for (ScheduledFuture<?> f : burst) {
            assertTrue(f.cancel(false));
        }
    }

    /** Three tasks behind the running one in its lane, two for each of a and b, one coalescing for c; weakly held. */
    private static List<WeakReference<Runnable>> queueBehind(GatlingExecutor e) {
        List<WeakReference<Runnable>> queued = new java.util.ArrayList<>();
        for (Object context : List.of("held", "held", "held", "a", "a", "b", "b")) {
            Runnable task = new Seq(context, NOOP);
            queued.add(new WeakReference<>(task));
            e.execute(task);
        }
        Runnable coalescing = new Coal("c", NOOP);
        queued.add(new WeakReference<>(coalescing));
        e.execute(coalescing);
        return queued;
    }

    /** Apart, so the test's frame holds no returned task. */
    private static void assertReturned(List<Runnable> returned, List<WeakReference<Runnable>> queued) {
        assertEquals(queued.size(), returned.size(), returned::toString);
        for (WeakReference<Runnable> task : queued) {
            assertTrue(returned.contains(task.get()), "not returned: " + task.get());
        }
    }

    /**
     * {@code shutdownNow()} returned a periodic task that a {@code shutdown()} called at the same time then cancelled:
     * the caller got a future already done, which {@code ScheduledThreadPoolExecutor} never returns (its two calls
     * exclude each other). The shutdown had advanced the state first, then waited for the timer's lock while
     * {@code shutdownNow} drained the timer; it then took the periodic task, still in its set, and cancelled it. Held
     * here: the test holds the timer's lock until the shutdown waits on it, calls {@code shutdownNow} itself (the lock
     * is reentrant), and lets the shutdown in from inside the drain, through the hashCode of a busy lane's context,
     * until it has returned.
     */
    @Test
    @Timeout(20)
    void aShutdownRacingShutdownNowCancelsNoTaskThatShutdownNowReturns() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("shutdown-race").coreThreads(1).build());
        LockReleasingContext context = new LockReleasingContext();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch gate = cleanup.gate();
        e.execute(new Seq(context, () -> {
            started.countDown();
            TestSupport.blockIgnoringInterrupts(gate); // its lane stays mapped until shutdownNow() drains it
        }));
        await(started, "the task keeping its lane busy");
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(NOOP, 1, 1, TimeUnit.HOURS);
        ReentrantLock lock = timerLock(e);
        Thread shutdown = new Thread(e::shutdown, "shutdown");
        lock.lock();
        try {
            shutdown.start();
            waitUntil("shutdown() waiting for the timer's lock", () -> lock.hasQueuedThread(shutdown));
            context.arm(lock, shutdown);
            List<Runnable> returned = e.shutdownNow();
            assertTrue(context.fired, "the drain never let the shutdown in");
            for (Runnable r : returned) {
                assertFalse(((Future<?>) r).isDone(), "returned, yet done: " + r);
            }
            assertTrue(returned.contains(periodic) != periodic.isCancelled(),
                    "a periodic task is either returned or cancelled: " + periodic + ", " + returned);
        } finally {
            if (lock.isHeldByCurrentThread()) {
                lock.unlock();
            }
            gate.countDown();
            shutdown.join();
        }
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
    }

    /**
     * {@code shutdownNow()} called from code that runs under the timer's lock (a context's hashCode or the thread
     * factory, on the checker's dispatch of a delayed task due after {@code shutdown()}) while a {@code shutdown()}
     * was still cancelling the periodic tasks it took out never returned: it waited for those cancels, and each of
     * them needs that lock, held by the waiting thread itself. The checker spun for good, the executor never
     * terminated. Here the shutdown is held inside its cancel of a periodic task and the holder of the lock stands for
     * that user code.
     */
    @Test
    @Timeout(20)
    void shutdownNowUnderTheTimersLockDoesNotWaitForAShutdownsCancelsThatNeedThatLock() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("cancels-under-lock").coreThreads(1).build());
        CountDownLatch proceed = new CountDownLatch(1);
        HeldShutdown held = shutdownHeldInItsCancel(e, proceed);
        ScheduledTask<Object> periodic = held.periodic;
        Thread shutdown = held.thread;
        ReentrantLock lock = timerLock(e);
        CountDownLatch locked = new CountDownLatch(1);
        CountDownLatch returned = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            lock.lock();
            try {
                locked.countDown();
                e.shutdownNow();
                returned.countDown();
            } finally {
                lock.unlock();
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        await(locked, "the holder of the timer's lock");
        proceed.countDown(); // the cancel now needs the lock the holder keeps until its shutdownNow() returns
        assertTrue(returned.await(5, TimeUnit.SECONDS), "shutdownNow() under the timer's lock never returned");
        shutdown.join(TimeUnit.SECONDS.toMillis(5));
        assertFalse(shutdown.isAlive(), "shutdown() never finished its cancels");
        assertTrue(periodic.isCancelled());
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS));
    }

    /**
     * {@code shutdownNow()} called from code that runs under the timer's lock (a context's hashCode or the thread
     * factory, on a dispatch) while a submit that replaced a coalescing lane's pending periodic run was putting that
     * task back on the timer never returned: it waits for such put-backs, each of which takes that lock, held by the
     * waiting thread itself. Here the put-back waits on the lock a holder keeps, and the holder calls shutdownNow().
     */
    @Test
    @Timeout(20)
    void shutdownNowUnderTheTimersLockDoesNotWaitForAPutBackThatNeedsThatLock() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("put-back-under-lock").coreThreads(2).build());
        CountDownLatch gate = cleanup.occupy(r -> e.execute(new Coal("c", r)));
        AtomicInteger runs = new AtomicInteger();
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Coal("c", runs::incrementAndGet), 0, 1,
                TimeUnit.HOURS);
        waitUntil("the periodic run pending in lane c", () -> e.statistics().submitted() >= 2);
        ReentrantLock lock = timerLock(e);
        CountDownLatch locked = new CountDownLatch(1);
        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch returned = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            lock.lock();
            try {
                locked.countDown();
                TestSupport.blockIgnoringInterrupts(stop);
                e.shutdownNow();
                returned.countDown();
            } finally {
                lock.unlock();
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        await(locked, "the holder of the timer's lock");
        Thread replacer = new Thread(() -> e.execute(new Coal("c", NOOP)), "replacer");
        replacer.setDaemon(true);
        replacer.start();
        waitUntil("the replacing submit waiting for the timer's lock to put the periodic task back",
                () -> lock.hasQueuedThread(replacer));
        stop.countDown();
        assertTrue(returned.await(5, TimeUnit.SECONDS), "shutdownNow() under the timer's lock never returned");
        gate.countDown();
        replacer.join(TimeUnit.SECONDS.toMillis(5));
        assertFalse(replacer.isAlive(), "the replacing submit never returned");
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        assertTrue(periodic.isDone(), "the periodic task, put back after shutdownNow's drains, is cancelled");
        assertEquals(0, runs.get());
    }

    /**
     * A due scheduled task is taken out of the timer's queue, then its lane is looked up, running its context's
     * {@code hashCode} and {@code equals}, under the timer's lock: on the checker's thread, or on a
     * {@code schedule(task, 0)} caller's. A {@code shutdownNow()} called from there drained the timer, the ready
     * queue and the lanes around the task in flight, and returned without it; the dispatch then put it in a lane made
     * after the lanes were walked, where nothing ran it: neither run nor returned, its future never done, and the
     * terminated executor read {@code queued() == 1}. {@code shutdownNow()} now returns it, and the dispatch leaves it.
     */
    @ParameterizedTest(name = "dispatched by the {0}")
    @ValueSource(strings = {"caller", "checker"})
    @Timeout(20)
    void shutdownNowFromAContextsHashCodeAtADispatchReturnsTheTaskInFlight(String by) throws Exception {
        GatlingExecutor e = cleanup.track(gatling("hash-at-dispatch").coreThreads(1).build());
        Engine engine = engineOf(e);
        AtomicReference<List<Runnable>> returned = new AtomicReference<>();
        CountDownLatch calledBack = new CountDownLatch(1);
        Object context = new Object() {
            @Override
            public int hashCode() {
                if (engine.timer.isHeldByCurrentThread() && calledBack.getCount() > 0) {
                    returned.set(e.shutdownNow());
                    calledBack.countDown();
                }
                return 7;
            }
        };
        AtomicInteger ran = new AtomicInteger();
        ScheduledFuture<?> f = e.schedule(new Seq(context, ran::incrementAndGet), by.equals("caller") ? 0 : 10,
                TimeUnit.MILLISECONDS);
        await(calledBack, "the shutdownNow() from the context's hashCode");
        assertTrue(returned.get().contains(f), () -> "shutdownNow() returned " + returned.get());
        assertEquals(1, returned.get().size(), () -> "shutdownNow() returned " + returned.get());
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        assertFalse(f.isDone(), "returned by shutdownNow(): neither done nor cancelled");
        assertEquals(0, ran.get());
        ExecutorStatistics s = e.statistics();
        assertEquals(0, s.queued(), s.toString());
        assertEquals(s.submitted(), s.executed() + s.returned() + s.coalesced(), s.toString());
    }

    /**
     * The same dispatch, and a {@code shutdown()} from the context's {@code hashCode}: with no thread started yet, the
     * shutdown claimed termination itself, its look at the timer (under the lock this thread held) finding nothing due
     * and the task in no lane yet; the task then entered a lane of the terminated executor and never ran (submitted
     * 1, executed 0, queued 1). A dispatch under way now counts as work until it ends.
     */
    @Test
    @Timeout(20)
    void shutdownFromAContextsHashCodeAtADispatchLetsTheTaskRunBeforeTermination() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("hash-shuts-down").coreThreads(1).build());
        Engine engine = engineOf(e);
        AtomicBoolean once = new AtomicBoolean();
        Object context = new Object() {
            @Override
            public int hashCode() {
                if (engine.timer.isHeldByCurrentThread() && once.compareAndSet(false, true)) {
                    e.shutdown();
                }
                return 5;
            }
        };
        AtomicInteger ran = new AtomicInteger();
        ScheduledFuture<?> f = e.schedule(new Seq(context, ran::incrementAndGet), 0, TimeUnit.MILLISECONDS);
        assertTrue(once.get(), "the context's hashCode ran under the timer's lock");
        TestSupport.get(f);
        assertEquals(1, ran.get());
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        ExecutorStatistics s = e.statistics();
        assertEquals(1, s.submitted(), s.toString());
        assertEquals(1, s.executed(), s.toString());
        assertEquals(0, s.queued(), s.toString());
    }

    /**
     * Two locks taken in both orders: a waiter admitted under the admission lock whose coalescing task replaces a
     * pending scheduled task cancels it, and a cancelled scheduled task leaves the timer under the timer's lock; a
     * context's {@code hashCode} run at a dispatch, under the timer's lock, that submits while someone waits for room
     * takes the admission lock to look for them. Each waited for the other for good, and with them the checker, every
     * {@code schedule*} and {@code shutdown()}. The submit from the {@code hashCode} is refused instead (it could not
     * have waited for room there anyway). Not tracked for validation: before the fix its shutdownNow() hung too.
     */
    @Test
    @Timeout(20)
    void aSubmitFromAContextsHashCodeAtADispatchDoesNotDeadlockWithAWaiterReplacingAScheduledTask() throws Exception {
        ThreadFactory daemons = r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
        GatlingExecutor e = gatling("lock-order").coreThreads(1).maxThreads(1).maxQueued(1)
                .overflow(Overflow.block(Duration.ofSeconds(60))).threadFactory(daemons).build();
        ReentrantLock timerLock = timerLock(e);
        CountDownLatch gate = cleanup.gate();
        TestSupport.hold(e, gate);
        e.execute(NOOP); // the executor is full
        // The waiter must make no attempt of its own between its first and the one the hashCode below asks for: one
        // made meanwhile would replace the pending task at once, with nobody holding the timer's lock. While no
        // checker runs yet (it starts with the first worker, and may not have run its first line), a waiter looks for
        // room itself once a clock tick: 2 rounds of 1,200 failed so, each after such a look.
        waitUntil("the checker to run", () -> e.engine().checker.running());
        AtomicReference<Throwable> waiterOutcome = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                e.execute(new Coal("c", NOOP));
            } catch (Throwable t) {
                waiterOutcome.set(t);
            }
        }, "waiter");
        waiter.setDaemon(true);
        waiter.start();
        // Parked for room, its first attempt made (waitingSubmitters() counts it from before that attempt).
        waitUntil("the coalescing submitter to wait for room", () -> e.statistics().waitingSubmitters() == 1
                && LockSupport.getBlocker(waiter) == e.engine().admission);
        ScheduledFuture<?> pending = e.schedule(new Coal("c", NOOP), 0, TimeUnit.MILLISECONDS); // over the limit
        AtomicReference<Throwable> inner = new AtomicReference<>();
        AtomicBoolean once = new AtomicBoolean();
        Object context = new Object() {
            @Override
            public int hashCode() {
                if (timerLock.isHeldByCurrentThread() && once.compareAndSet(false, true)) {
                    // The waiter makes its attempt now (a wake-up it may get at any time), and its replacement of the
                    // pending task waits for the timer's lock, which this thread holds.
                    LockSupport.unpark(waiter);
                    waitUntil("the waiter to wait for the timer's lock", () -> timerLock.hasQueuedThread(waiter));
                    try {
                        e.execute(NOOP);
                    } catch (RuntimeException refused) {
                        inner.set(refused);
                    }
                }
                return 11;
            }
        };
        Thread caller = new Thread(() -> e.schedule(new Seq(context, NOOP), 0, TimeUnit.MILLISECONDS), "caller");
        caller.setDaemon(true);
        caller.start();
        caller.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(caller.isAlive(), "the schedule call whose dispatch submitted never returned");
        waiter.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(waiter.isAlive(), "the waiter never returned");
        assertNull(waiterOutcome.get());
        assertTrue(inner.get() instanceof RejectedExecutionException, String.valueOf(inner.get()));
        assertTrue(pending.isCancelled(), "the scheduled task the waiter's task replaced");
        gate.countDown();
        e.shutdown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        ExecutorStatistics s = e.statistics();
        assertEquals(s.submitted(), s.executed() + s.coalesced() + s.returned(), s.toString());
        assertEquals(1, s.coalesced(), s.toString());
    }

    /**
     * The executor terminated while {@code shutdown()} was still cancelling the periodic tasks it had taken out of the
     * timer (it cancels them after letting the timer's lock go): the timer read empty in between, so the checker's
     * look found the executor quiescent, and {@code awaitTermination} returned true with a periodic future of the
     * executor's neither done nor cancelled. Here the shutdown is held inside its cancel while the last task ends.
     */
    @Test
    @Timeout(20)
    void theExecutorDoesNotTerminateWhileShutdownIsStillCancellingPeriodicTasks() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("terminates-after-cancels").coreThreads(1)
                .checkPeriod(Duration.ofMillis(10)).build());
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        e.execute(() -> {
            running.countDown();
            TestSupport.blockIgnoringInterrupts(finish);
        });
        await(running, "the last task");
        CountDownLatch proceed = new CountDownLatch(1);
        HeldShutdown held = shutdownHeldInItsCancel(e, proceed);
        ScheduledTask<Object> periodic = held.periodic;
        Thread shutdown = held.thread;
        finish.countDown(); // the worker, out of its last task, looks for quiescence; so does the checker, every 10 ms
        assertFalse(e.awaitTermination(500, TimeUnit.MILLISECONDS),
                () -> "terminated with the periodic future neither done nor cancelled: " + periodic);
        assertFalse(periodic.isDone());
        proceed.countDown();
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        assertTrue(periodic.isCancelled());
        shutdown.join(TimeUnit.SECONDS.toMillis(5));
    }

    /**
     * A {@code shutdownNow()} made under the timer's lock (here from a context's {@code hashCode}, as a task due at
     * once is dispatched) does not wait for a replacing submit's put-back of a periodic task, which needs that lock: the
     * put-back comes after shutdownNow's last drain, is refused, and cancels the task. The executor terminated before
     * that cancel, as soon as its last worker ended: {@code isTerminated()} was true with a periodic future that was
     * neither done, nor cancelled, nor among the tasks shutdownNow returned. The factory gives one worker and no
     * checker, so that termination is claimed by the worker's end, which needs no lock; the hashCode looks while its
     * caller still holds the timer's lock, so the put-back cannot have come yet.
     */
    @Test
    @Timeout(30)
    void theExecutorDoesNotTerminateBeforeAPutBackThatShutdownNowUnderTheTimersLockDidNotWaitFor() throws Exception {
        AtomicReference<Thread> worker = new AtomicReference<>();
        ThreadFactory oneWorker = r -> {
            if (!worker.compareAndSet(null, new Thread(r, "the-only-worker"))) {
                throw new IllegalStateException("no thread for the checker");
            }
            return worker.get();
        };
        GatlingExecutor e = cleanup.track(gatling("put-back-vs-termination").coreThreads(1).threadFactory(oneWorker)
                .build());
        ReentrantLock timer = timerLock(e);
        CountDownLatch blocking = new CountDownLatch(1);
        e.execute(new Coal("c", () -> {
            blocking.countDown();
            try {
                new CountDownLatch(1).await(); // until shutdownNow's interrupt
            } catch (InterruptedException expected) {
                // the worker then ends, the executor being stopped
            }
        }));
        await(blocking, "the task that holds lane c");
        AtomicInteger runs = new AtomicInteger();
        ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Coal("c", runs::incrementAndGet), 0, 1,
                TimeUnit.HOURS);
        waitUntil("the periodic run pending in lane c", () -> e.statistics().submitted() >= 2);
        CountDownLatch underLock = new CountDownLatch(1);
        CountDownLatch replacerWaits = new CountDownLatch(1);
        AtomicReference<List<Runnable>> returned = new AtomicReference<>();
        AtomicBoolean terminatedUnderLock = new AtomicBoolean();
        AtomicBoolean doneUnderLock = new AtomicBoolean();
        Object stopping = new Object() {
            @Override
            public int hashCode() {
                if (timer.isHeldByCurrentThread() && returned.get() == null) {
                    underLock.countDown();
                    TestSupport.blockIgnoringInterrupts(replacerWaits);
                    returned.set(e.shutdownNow());
                    try {
                        worker.get().join(TimeUnit.SECONDS.toMillis(10)); // interrupted, it ends: stopped
                    } catch (InterruptedException ex) {
                        Thread.currentThread().interrupt();
                    }
                    terminatedUnderLock.set(e.isTerminated());
                    doneUnderLock.set(periodic.isDone());
                }
                return 7;
            }
        };
        AtomicReference<Throwable> scheduleFailed = new AtomicReference<>();
        Thread dueNow = new Thread(() -> {
            try {
                // Its own dispatch's look-up calls shutdownNow(), which hands the task back (see
                // shutdownNowFromAContextsHashCodeAtADispatchReturnsTheTaskInFlight): accepted, not refused.
                e.schedule(new Seq(stopping, NOOP), 0, TimeUnit.MILLISECONDS);
            } catch (Throwable t) {
                scheduleFailed.set(t);
            }
        }, "dispatches-due-now");
        dueNow.setDaemon(true);
        dueNow.start();
        await(underLock, "the dispatch under the timer's lock");
        Thread replacer = new Thread(() -> e.execute(new Coal("c", NOOP)), "replacer");
        replacer.setDaemon(true);
        replacer.start();
        waitUntil("the replacing submit waiting for the timer's lock to put the periodic task back",
                () -> timer.hasQueuedThread(replacer));
        replacerWaits.countDown();
        dueNow.join(TimeUnit.SECONDS.toMillis(15));
        assertFalse(dueNow.isAlive(), "the dispatch that called shutdownNow never returned");
        assertNull(scheduleFailed.get(), "the schedule call whose dispatch called shutdownNow");
        assertFalse(worker.get().isAlive(), "the worker did not end after shutdownNow");
        assertFalse(returned.get().contains(periodic), "its run was replaced before shutdownNow: not returned");
        assertFalse(terminatedUnderLock.get() && !doneUnderLock.get(),
                "terminated with a periodic future neither done, nor cancelled, nor returned");
        replacer.join(TimeUnit.SECONDS.toMillis(5));
        assertFalse(replacer.isAlive(), "the replacing submit never returned");
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        assertTrue(periodic.isCancelled(), "the periodic task, put back after shutdownNow's drains, is cancelled");
        assertEquals(0, runs.get());
    }

    /**
     * The same for a {@code shutdown()}'s cancels: a {@code shutdownNow()} made under the timer's lock does not wait
     * for the cancels of the periodic tasks a {@code shutdown()} took out of the timer just before (they need that
     * lock), and the executor, with no thread left, terminated at the end of that shutdownNow: {@code isTerminated()}
     * was true while a periodic future of its own, taken out of the timer (so not returned), was not cancelled yet.
     * Here the shutdown is held inside its cancel, and the holder of the lock stands for the user code run under it.
     */
    @Test
    @Timeout(20)
    void theExecutorDoesNotTerminateBeforeAShutdownsCancelsThatShutdownNowUnderTheTimersLockDidNotWaitFor()
            throws Exception {
        GatlingExecutor e = cleanup.track(gatling("cancels-vs-termination").coreThreads(1).build());
        CountDownLatch proceed = new CountDownLatch(1);
        HeldShutdown held = shutdownHeldInItsCancel(e, proceed);
        ScheduledTask<Object> periodic = held.periodic;
        Thread shutdown = held.thread;
        ReentrantLock lock = timerLock(e);
        AtomicReference<List<Runnable>> returned = new AtomicReference<>();
        Thread holder = new Thread(() -> {
            lock.lock();
            try {
                returned.set(e.shutdownNow());
            } finally {
                lock.unlock();
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        holder.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(holder.isAlive(), "shutdownNow() under the timer's lock never returned");
        assertFalse(returned.get().contains(periodic), "taken out of the timer by shutdown(): not returned");
        assertFalse(e.isTerminated() && !periodic.isDone(),
                "terminated with a periodic future neither done, nor cancelled, nor returned");
        proceed.countDown();
        shutdown.join(TimeUnit.SECONDS.toMillis(5));
        assertFalse(shutdown.isAlive(), "shutdown() never finished its cancels");
        assertTrue(periodic.isCancelled());
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
    }

    /**
     * A coalescing task that replaces a pending one whose future is to be cancelled (SPEC point 3) cancels it on the
     * replacing submitter's thread, after the CAS that replaces it. The replacement can run, and the executor shut down
     * meanwhile reach quiescence and terminate, before that cancel: {@code awaitTermination} returned true with the
     * replaced future neither done, nor cancelled, nor run (seen first with a pause of the submitter after its CAS).
     * Here the pending task is the caller's own future, whose cancel is held on the replacing thread.
     */
    @Test
    @Timeout(20)
    void theExecutorDoesNotTerminateBeforeAReplacedFutureIsCancelled() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("replaced-vs-termination").coreThreads(1).build());
        CountDownLatch gate = cleanup.occupy(r -> e.execute(new Coal("c", r)));
        CountDownLatch cancelling = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        final class HeldFuture extends FutureTask<Object> implements CoalescingRunnable {
            HeldFuture() {
                super(NOOP, null);
            }

            @Override
            public Object context() {
                return "c";
            }

            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                if (Thread.currentThread().getName().equals("replacer")) {
                    cancelling.countDown();
                    TestSupport.blockIgnoringInterrupts(proceed);
                }
                return super.cancel(mayInterruptIfRunning);
            }
        }
        HeldFuture pending = new HeldFuture();
        e.execute(pending);
        AtomicInteger runs = new AtomicInteger();
        Thread replacer = new Thread(() -> e.execute(new Coal("c", runs::incrementAndGet)), "replacer");
        replacer.setDaemon(true);
        replacer.start();
        await(cancelling, "the replacing submit cancelling the future it replaced");
        e.shutdown();
        gate.countDown(); // the replacement runs next, and the executor is quiescent once it has
        waitUntil("the replacement to run", () -> runs.get() == 1);
        assertFalse(e.awaitTermination(500, TimeUnit.MILLISECONDS) && !pending.isDone(),
                "terminated with a replaced future neither done, nor cancelled, nor run");
        proceed.countDown();
        replacer.join(TimeUnit.SECONDS.toMillis(5));
        assertFalse(replacer.isAlive(), "the replacing submit never returned");
        assertTrue(e.awaitTermination(5, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        assertTrue(pending.isCancelled());
        ExecutorStatistics s = e.statistics();
        assertEquals(s.submitted(), s.executed() + s.coalesced() + s.returned(), s::toString);
    }

    /**
     * A context whose hashCode, once armed, called by the thread that armed it (from shutdownNow's lane drain, as it
     * unmaps the lane), releases that thread's hold of the timer's lock and waits for the other thread to end.
     */
    private static final class LockReleasingContext {
        private volatile Thread armedBy;
        private ReentrantLock lock;
        private Thread other;
        volatile boolean fired;

        void arm(ReentrantLock lock, Thread other) {
            this.lock = lock;
            this.other = other;
            armedBy = Thread.currentThread();
        }

        @Override
        public int hashCode() {
            if (Thread.currentThread() == armedBy && !fired) {
                fired = true;
                lock.unlock();
                try {
                    other.join(TimeUnit.SECONDS.toMillis(10));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return 1;
        }

        @Override
        public boolean equals(Object o) {
            return o == this;
        }
    }

    /**
     * A thread factory that submits to the executor it serves while it makes the checker's thread (a factory that
     * reports to the application through it, say): that submit started the second core worker, whose start made and
     * started a checker thread of its own on the same thread, inside the first start of the checker, whose lock it
     * re-entered; the first start, back from the factory, then published and started a second checker. Two checkers
     * ran their rounds at once, and the one no longer published was not waited for: awaitTermination() returned true
     * with it alive (found by randomized rounds from outside: a checker alive after termination in 5 of 1,522 rounds
     * with such a factory). Here the factory submits from its second call on, which is the checker's (the first
     * worker's comes first): one checker thread must run beside the workers, and none may be alive once termination
     * has been reported.
     */
    @Test
    @Timeout(30)
    void aFactoryThatSubmitsWhileMakingTheCheckerGetsOneChecker() throws Exception {
        List<Thread> made = new CopyOnWriteArrayList<>();
        AtomicReference<GatlingExecutor> executor = new AtomicReference<>();
        AtomicInteger calls = new AtomicInteger();
        ThreadLocal<Boolean> inFactory = ThreadLocal.withInitial(() -> false);
        // The first worker waits for the factory's submit: running already, it was idle or searching when that submit
        // came, which then started no second worker (and no checker with it), and the case was not made.
        CountDownLatch factorySubmitted = new CountDownLatch(1);
        ThreadFactory submitting = r -> {
            int call = calls.incrementAndGet();
            if (call > 1 && !inFactory.get()) {
                inFactory.set(true);
                try {
                    executor.get().execute(() -> { });
                } finally {
                    inFactory.set(false);
                    factorySubmitted.countDown();
                }
            }
            Runnable body = call > 1 ? r : () -> {
                TestSupport.await(factorySubmitted, "the factory's submit");
                r.run();
            };
            Thread t = new Thread(body, "submitting-factory-" + made.size());
            made.add(t);
            return t;
        };
        GatlingExecutor e = gatling("submitting-factory").coreThreads(2).threadFactory(submitting).build();
        executor.set(e);
        CountDownLatch ran = new CountDownLatch(1);
        e.execute(ran::countDown); // every start, the ones the factory's own submit asked for included, is made in here
        // A thread that has been started is alive until it ends, and neither a worker nor the checker ends before
        // termination; a thread the factory made that the executor then did not need is never started.
        long started = made.stream().filter(Thread::isAlive).count();
        assertEquals(3, started, () -> "two workers and one checker expected, made: " + made);
        await(ran, "the first task");
        e.shutdown();
        assertTrue(e.awaitTermination(10, TimeUnit.SECONDS), () -> "not terminated: " + e.statistics());
        for (Thread t : made) {
            assertFalse(t.isAlive(), () -> t.getName() + " alive after termination was reported");
        }
    }

    /**
     * A submit under {@link Overflow#block} made from a context's {@code hashCode} that the executor runs under its
     * admission lock (a new submitter's look for waiters of its context) cannot wait for room there, and is refused at
     * once. That refusal was counted in {@code rejected()} without a look at the state after the submit's own, and
     * without termination waiting for it, as it waits for the reject policy's refusals: the look for waiters takes
     * the lock once someone waits, and the last waiter may leave just before it gets it, after which the executor can
     * end without that lock (no waiter to wake, no worker or checker needing it). Here the debugger holds the new
     * submitter before the lock while the waiter leaves, then the submit its context's {@code hashCode} makes, past its
     * look at the state, while the executor shuts down and terminates. Before the fix the terminated executor read
     * {@code rejected()} 1 (the waiter, interrupted), then 2 once the held submit went on, refused for
     * {@code maxQueued} although the executor had shut down.
     */
    @Test
    void aSubmitCalledBackUnderTheAdmissionLockIsNotCountedAfterTermination() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting looking = new DebuggedChild.Meeting();
        DebuggedChild.Meeting calledBack = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(CalledBackRefusalChild.class, List.of(
                DebuggedChild.Spot.entry("looking", Admission.class, "lockUnlessTimerHeld"),
                DebuggedChild.Spot.line("called back", Admission.class,
                        "if (lock.isHeldByCurrentThread() || engine.timer.isHeldByCurrentThread()"),
                DebuggedChild.Spot.entry("looker held", CalledBackRefusalChild.class, "lookerHeld"),
                DebuggedChild.Spot.entry("waiter gone", CalledBackRefusalChild.class, "waiterGone"),
                DebuggedChild.Spot.entry("held", CalledBackRefusalChild.class, "held"),
                DebuggedChild.Spot.entry("read", CalledBackRefusalChild.class, "read")),
                (spot, thread, held) -> {
                    boolean looker = CalledBackRefusalChild.LOOKER.equals(thread.name());
                    switch (spot) {
                        case "looking":
                            if (!looker || looking.reached()) {
                                return true;
                            }
                            hits.add(spot);
                            return looking.windowReached(thread, held);
                        case "called back":
                            if (!looker) {
                                return true; // the waiter, on its way in
                            }
                            hits.add(spot);
                            return calledBack.windowReached(thread, held);
                        case "looker held":
                            return looking.mainReady(thread);
                        case "waiter gone":
                            hits.add(spot);
                            looking.releaseWindow(held);
                            return true;
                        case "held":
                            return calledBack.mainReady(thread);
                        default:
                            hits.add(spot);
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertEquals(List.of("looking", "waiter gone", "called back", "read"), hits, out);
        assertTrue(out.contains(CalledBackRefusalChild.HELD + "terminated true, rejected 1"), out);
        assertTrue(out.contains(CalledBackRefusalChild.AFTER
                + "terminated true, rejected 1, refused for shutdown true"), out);
    }

    /** The child JVM of {@link #aSubmitCalledBackUnderTheAdmissionLockIsNotCountedAfterTermination}. */
    static final class CalledBackRefusalChild {
        static final String LOOKER = "looker";
        static final String HELD = "child: while the called-back submit is held: ";
        static final String AFTER = "child: at the end: ";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("called-back-refusal").coreThreads(1).maxThreads(1)
                    .maxQueued(1).overflow(Overflow.block(Duration.ofSeconds(30))).build();
            CountDownLatch gate = new CountDownLatch(1);
            TestSupport.fillOneWorker(e, () -> TestSupport.blockQuietly(gate));
            Thread waiter = TestSupport.startSubmitter(e, "waiter", new AtomicReference<>()); // interrupted below
            TestSupport.waitUntil("the waiter to park", () -> e.statistics().waitingSubmitters() == 1);
            AtomicReference<Throwable> calledBackRefusal = new AtomicReference<>();
            AtomicBoolean armed = new AtomicBoolean(true);
            Object context = new Object() {
                @Override
                public int hashCode() {
                    if (Thread.currentThread().getName().equals(LOOKER) && armed.getAndSet(false)) {
                        try {
                            e.execute(() -> { }); // the executor is full: refused at once, under the lock
                        } catch (RejectedExecutionException refused) {
                            calledBackRefusal.set(refused);
                        }
                    }
                    return 1;
                }

                @Override
                public boolean equals(Object o) {
                    return o == this;
                }
            };
            Thread looker = new Thread(() -> {
                try {
                    e.sequential(context).execute(() -> { });
                } catch (RejectedExecutionException shutDown) {
                    // expected: refused for the shutdown
                }
            }, LOOKER);
            looker.setDaemon(true);
            looker.start();
            lookerHeld(); // until the looker, having seen a waiter, is held before it takes the admission lock
            waiter.interrupt();
            waiter.join(10_000);
            waiterGone(); // the looker goes on: it takes the lock with nobody waiting, and its context calls back
            held(); // until the called-back submit is held past its look at the state
            e.shutdown();
            gate.countDown();
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(HELD + "terminated " + terminated + ", rejected " + e.statistics().rejected());
            read();
            looker.join(10_000);
            terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(AFTER + "terminated " + terminated + ", rejected " + e.statistics().rejected()
                    + ", refused for shutdown " + String.valueOf(calledBackRefusal.get()).contains("shut down")
                    + " (" + calledBackRefusal.get() + ")");
            System.exit(0);
        }

        static void lookerHeld() {
        }

        static void waiterGone() {
        }

        static void held() {
        }

        static void read() {
        }

        private CalledBackRefusalChild() {
        }
    }

    /**
     * The waiters' tables are dropped at termination even when a new submitter's look for waiters holds the admission
     * lock then. Termination takes that lock only if it is free (its holder may run a context's {@code hashCode},
     * which may wait for anything), and leaves the drop to the holder; a holder that had seen the executor running, or
     * a look for waiters, which never looked at the state, let the lock go with the tables kept for good. The look
     * takes the lock once someone waits, and the last waiter may leave while the executor still runs, just before
     * the look gets it. Here the debugger holds the new submitter before the lock while the waiter leaves; then its
     * context's {@code hashCode}, run under the lock, holds it while the executor shuts down and terminates. Before
     * the fix the tables were never dropped.
     */
    @Test
    void theWaitersTablesAreDroppedWhenALookForWaitersHoldsTheLockAsTheExecutorTerminates() throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting looking = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(LookAtTerminationChild.class, List.of(
                DebuggedChild.Spot.entry("looking", Admission.class, "lockUnlessTimerHeld"),
                DebuggedChild.Spot.entry("looker held", LookAtTerminationChild.class, "lookerHeld"),
                DebuggedChild.Spot.entry("waiter gone", LookAtTerminationChild.class, "waiterGone")),
                (spot, thread, held) -> {
                    switch (spot) {
                        case "looking":
                            if (!LookAtTerminationChild.LOOKER.equals(thread.name()) || looking.reached()) {
                                return true;
                            }
                            hits.add(spot);
                            return looking.windowReached(thread, held);
                        case "looker held":
                            return looking.mainReady(thread);
                        default:
                            hits.add(spot);
                            looking.releaseWindow(held);
                            return true;
                    }
                });
        assertEquals(List.of("looking", "waiter gone"), hits, out);
        assertTrue(out.contains(LookAtTerminationChild.HELD + "terminated true, waiting 0"), out);
        assertTrue(out.contains(LookAtTerminationChild.AFTER + "looker refused for shutdown true, tables dropped true"),
                out);
    }

    /** The child JVM of {@link #theWaitersTablesAreDroppedWhenALookForWaitersHoldsTheLockAsTheExecutorTerminates}. */
    static final class LookAtTerminationChild {
        static final String LOOKER = "looker";
        static final String HELD = "child: while the look holds the admission lock: ";
        static final String AFTER = "child: at the end: ";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("look-at-termination").coreThreads(1).maxThreads(1)
                    .maxQueued(1).overflow(Overflow.block(Duration.ofSeconds(30))).build();
            CountDownLatch gate = new CountDownLatch(1);
            TestSupport.fillOneWorker(e, () -> TestSupport.blockQuietly(gate));
            Thread waiter = TestSupport.startSubmitter(e, "waiter", new AtomicReference<>()); // interrupted below
            TestSupport.waitUntil("the waiter to park", () -> e.statistics().waitingSubmitters() == 1);
            Admission admission = e.engine().admission;
            CountDownLatch lookHolds = new CountDownLatch(1);
            CountDownLatch lookGoesOn = new CountDownLatch(1);
            AtomicBoolean armed = new AtomicBoolean(true);
            Object context = new Object() {
                @Override
                public int hashCode() {
                    if (admission.lock.isHeldByCurrentThread() && armed.getAndSet(false)) {
                        lookHolds.countDown();
                        TestSupport.blockQuietly(lookGoesOn);
                    }
                    return 1;
                }

                @Override
                public boolean equals(Object o) {
                    return o == this;
                }
            };
            AtomicReference<Throwable> lookerRefusal = new AtomicReference<>();
            Thread looker = new Thread(() -> {
                try {
                    e.sequential(context).execute(() -> { });
                } catch (RejectedExecutionException shutDown) {
                    lookerRefusal.set(shutDown); // expected: the executor has terminated by the time it attempts
                }
            }, LOOKER);
            looker.setDaemon(true);
            looker.start();
            lookerHeld(); // until the looker, having seen a waiter, is held before it takes the admission lock
            waiter.interrupt(); // it leaves while the executor runs: no drop by the last waiter out
            waiter.join(10_000);
            waiterGone(); // the looker goes on: it takes the lock with nobody waiting; its context's hashCode holds it
            lookHolds.await();
            e.shutdown();
            gate.countDown();
            boolean terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(HELD + "terminated " + terminated + ", waiting " + e.statistics().waitingSubmitters());
            lookGoesOn.countDown();
            looker.join(10_000);
            System.out.println(AFTER + "looker refused for shutdown "
                    + String.valueOf(lookerRefusal.get()).contains("shut down") + ", tables dropped "
                    + admission.tablesDropped() + " (" + lookerRefusal.get() + ")");
            System.exit(0);
        }

        static void lookerHeld() {
        }

        static void waiterGone() {
        }

        private LookAtTerminationChild() {
        }
    }
}
