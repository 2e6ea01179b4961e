package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Fault injection: a failing thread factory, tasks that throw {@link Error}s, a handler that throws, interrupts
 * delivered to workers between and inside tasks, and tasks that never return. In every case the executor must keep
 * every other context moving, keep per-context order, and lose nothing.
 */
class FaultInjectionTest {

    /** Records every thread it makes; optionally fails according to {@code failure}. */
    static final class RecordingFactory implements ThreadFactory {
        /** Worker threads made (the checker's thread, also made here, is not one). */
        final Queue<Thread> made = new ConcurrentLinkedQueue<>();
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        final java.util.function.IntUnaryOperator failure; // call number -> 0 ok, 1 throw, 2 return null

        RecordingFactory(java.util.function.IntUnaryOperator failure) {
            this.failure = failure;
        }

        @Override
        public Thread newThread(Runnable r) {
            int call = calls.incrementAndGet();
            switch (failure.applyAsInt(call)) {
                case 1:
                    failures.incrementAndGet();
                    throw new IllegalStateException("injected: thread factory call " + call + " throws");
                case 2:
                    failures.incrementAndGet();
                    return null;
                default:
                    Thread t = new Thread(r, "fault-worker-" + call);
                    if (!TestSupport.isChecker(r)) {
                        made.add(t);
                    }
                    return t;
            }
        }
    }

    @RegisterExtension
    final ExecutorValidation validation = new ExecutorValidation();

    private GatlingExecutor track(GatlingExecutor e) {
        return validation.track(e);
    }

    // ---- thread factory failures ------------------------------------------------------------------------------

    @Test
    @Timeout(30)
    void threadFactoryThatFailsNowAndThenLosesNothing() throws Exception {
        // The very first call throws and the second returns null, then two of every three calls fail.
        RecordingFactory factory = new RecordingFactory(n -> n == 1 ? 1 : n == 2 ? 2 : n % 3 == 0 ? 0 : n % 3);
        GatlingExecutor executor = track(GatlingExecutor.builder().name("flaky-factory").coreThreads(2)
                .maxThreads(6).threadFactory(factory).checkPeriod(Duration.ofMillis(5))
                .blockedThreshold(Duration.ofMillis(10)).auxiliaryKeepAlive(Duration.ofMillis(20)).build());
        runOrderedLoad(executor, 24, 400, 0.01, 2_000_000L);
        executor.shutdown();   // no thread start is attempted after termination: the counts below are final
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
        ExecutorStatistics s = executor.statistics();
        assertTrue(factory.failures.get() >= 2, "the factory failed " + factory.failures + " times");
        assertEquals(factory.failures.get(), s.threadStartFailures(), s.toString());
        assertTrue(s.peakThreads() <= 6, s.toString());
    }

    @Test
    @Timeout(30)
    void threadFactoryThatFailsAfterTheCoreKeepsWorkingOnTheCore() throws Exception {
        // Core threads and the checker start (the first three calls, in some order); every later (auxiliary) start
        // fails. Blocking tasks ask for auxiliary threads often.
        RecordingFactory factory = new RecordingFactory(n -> n <= 3 ? 0 : n % 2 + 1);
        GatlingExecutor executor = track(GatlingExecutor.builder().name("no-aux").coreThreads(2).maxThreads(8)
                .threadFactory(factory).checkPeriod(Duration.ofMillis(2)).blockedThreshold(Duration.ofMillis(3))
                .build());
        runOrderedLoad(executor, 16, 200, 0.05, 5_000_000L);
        executor.shutdown();
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
        ExecutorStatistics s = executor.statistics();
        assertEquals(factory.failures.get(), s.threadStartFailures(), s.toString());
        assertEquals(2, factory.made.size(), "only the two core threads could be made");
    }

    /**
     * The first worker and the checker both fail to start (the factory's first two calls), so no thread is left to
     * retry. Before the fix, the lane had been activated by the submit whose start failed, and every later submit to
     * it woke nobody: a sequential append (100 of 100 tasks never ran, in 3 of 3 runs of an outside audit), or, once
     * that was mended, a coalescing replacement through the bounded path's one CAS. The factory works from its third
     * call on, so the next submit, of any kind, must get a worker, and every task must run or be replaced.
     */
    @ParameterizedTest(name = "coalescing={0}, bounded={1}")
    @CsvSource({"false, false", "false, true", "true, false", "true, true"})
    @Timeout(30)
    void aLaneWhoseWorkerCouldNotStartRunsWhenItsNextTaskComes(boolean coalescing, boolean bounded)
            throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> n <= 2 ? 1 : 0);
        GatlingExecutor.Builder builder = GatlingExecutor.builder().name("starved-lane").coreThreads(1)
                .threadFactory(factory);
        GatlingExecutor executor = track((bounded ? builder.maxQueued(1000) : builder).build());
        AtomicInteger firstRan = new AtomicInteger();
        AtomicInteger secondRan = new AtomicInteger();
        Executor lane = coalescing ? executor.coalescing("a") : executor.sequential("a");
        lane.execute(firstRan::incrementAndGet);
        assertEquals(2, factory.failures.get(), "the worker and the checker should both have failed");
        assertEquals(0, executor.statistics().threads());
        // This submit gets a worker first; a coalescing one then replaces the first task, unless the new worker has
        // started it already (either is right: the last task submitted always runs).
        lane.execute(secondRan::incrementAndGet);
        TestSupport.waitUntil("the tasks to run", () -> secondRan.get() == 1 && (coalescing || firstRan.get() == 1),
                executor::toString, 10_000);
        ExecutorStatistics s = TestSupport.awaitQuiescent(executor);
        assertEquals(2, s.executed() + s.coalesced(), s.toString());
    }

    /**
     * One core thread, a short check period, and a factory that fails for the first worker and the checker (the first
     * two calls): nothing of the executor's own is left to ask for a thread again.
     */
    private GatlingExecutor starved(String name, RecordingFactory factory) {
        return track(GatlingExecutor.builder().name(name).coreThreads(1).threadFactory(factory)
                .checkPeriod(Duration.ofMillis(20)).build());
    }

    /**
     * The same two failures, and then only a caller waiting on the task's future: nothing else asked for a worker
     * again, so the timed wait timed out and the untimed one waited for good (5 of 5 runs, found outside).
     */
    @ParameterizedTest
    @CsvSource({"true", "false"})
    @Timeout(30)
    void aCallerWaitingOnAFutureAfterEveryStartFailedGetsItsResultOnceTheFactoryWorks(boolean timed)
            throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> n <= 2 ? 1 : 0);
        GatlingExecutor executor = starved("starved-get", factory);
        Future<String> f = executor.submit(() -> "ran");
        assertEquals(2, factory.failures.get(), "the worker and the checker should both have failed");
        assertEquals("ran", timed ? f.get(10, TimeUnit.SECONDS) : f.get(), executor::toString);
    }

    /** The same for {@code invokeAny}, which waits for its first completed task, not on a future. */
    @Test
    @Timeout(30)
    void anInvokeAnyAfterEveryStartFailedGetsItsResultOnceTheFactoryWorks() throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> n <= 2 ? 1 : 0);
        GatlingExecutor executor = starved("starved-any", factory);
        assertEquals("ran", executor.invokeAny(List.of(() -> "ran")), executor::toString);
        assertEquals(2, factory.failures.get(), "the worker and the checker should both have failed first");
    }

    /**
     * The checker's start fails once, then the factory works again, and the only worker is stuck in a task: only a
     * worker start or a {@code schedule} call tried the checker again, so nothing noticed the stuck worker and the
     * other context's task waited for good (7 of 7 runs, found outside). The submit that finds every worker busy asks
     * for the checker now.
     */
    @Test
    @Timeout(30)
    void aCheckerStartThatFailedOnceIsTriedAgainWhenEveryWorkerIsStuck() throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> n == 2 ? 1 : 0); // call 1: the worker; 2: the checker
        GatlingExecutor executor = track(GatlingExecutor.builder().name("checker-retry-stuck").coreThreads(1)
                .threadFactory(factory).checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(20))
                .build());
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch gate = new CountDownLatch(1);
        try {
            executor.sequential("stuck").execute(() -> {
                started.countDown();
                TestSupport.blockIgnoringInterrupts(gate);
            });
            await(started, "the task that holds the only worker");
            assertEquals(1, factory.failures.get(), "the checker's start should have failed");
            CountDownLatch other = new CountDownLatch(1);
            executor.sequential("other").execute(other::countDown);
            assertTrue(other.await(10, TimeUnit.SECONDS),
                    () -> "the other context waited behind the stuck worker: " + executor.statistics());
            assertTrue(executor.statistics().auxiliaryThreadsStarted() >= 1, executor::toString);
        } finally {
            gate.countDown();
        }
    }

    /**
     * The same two failures, and then only {@code close()}: it waited for a termination that needed the stranded task
     * to run, and nothing asked for a worker again (close hung, 4 of 4 runs).
     */
    @Test
    @Timeout(30)
    void closeAfterEveryStartFailedRunsTheAcceptedTaskOnceTheFactoryWorks() throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> n <= 2 ? 1 : 0);
        GatlingExecutor executor = starved("starved-close", factory);
        AtomicInteger ran = new AtomicInteger();
        executor.sequential("a").execute(ran::incrementAndGet);
        assertEquals(0, ran.get());
        executor.close();
        assertEquals(1, ran.get(), () -> "the accepted task did not run: " + executor.statistics());
        assertTrue(executor.isTerminated());
    }

    /**
     * The checker's thread is started by {@code close()} itself (right after the worker that runs the stranded task),
     * and here its {@code start()} returns only once that worker has run the task and ended. The worker used to find
     * no checker published (it was published after {@code start()} returned), claim termination itself, and
     * {@code close()} returned with the checker's thread still alive, so {@code isTerminated()} answered false just
     * after (CI, once; every run here with the start held back). The checker's body waits up to a second for
     * {@code close()} to return, so that a checker left running is seen alive. The factory refuses the checker to the
     * worker, which asks for it between items while it is missing: its {@code start()} would join the worker itself
     * (the test then took 10 s, the join's limit, in about one run of four), and the start would not be
     * {@code close()}'s. The task waits until the checker is made: a worker that ran it and ended the executor before
     * {@code close()} came to the checker left {@code close()} nothing to start (once in a CI run on JDK 25).
     */
    @Test
    @Timeout(30)
    void closeReturnsOnlyOnceACheckerStartedDuringItHasEnded() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        Queue<Thread> workers = new ConcurrentLinkedQueue<>();
        Queue<Thread> checkers = new ConcurrentLinkedQueue<>();
        CountDownLatch closeReturned = new CountDownLatch(1);
        CountDownLatch checkerMade = new CountDownLatch(1);
        ThreadFactory factory = r -> {
            int call = calls.incrementAndGet();
            if (call <= 2) {
                throw new IllegalStateException("injected: thread factory call " + call + " throws");
            }
            if (!TestSupport.isChecker(r)) {
                Thread t = new Thread(r, "held-worker-" + call);
                workers.add(t);
                return t;
            }
            if (workers.contains(Thread.currentThread())) {
                // A worker asks for the missing checker between items; its start() would wait for itself.
                throw new IllegalStateException("injected: the checker is started by close() only");
            }
            Thread checker = new Thread(() -> {
                try {
                    closeReturned.await(1, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                r.run();
            }, "held-checker-" + call) {
                @Override
                public synchronized void start() {
                    super.start();
                    for (Thread w : workers) {
                        try {
                            w.join(10_000);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            return;
                        }
                    }
                }
            };
            checkers.add(checker);
            checkerMade.countDown();
            return checker;
        };
        GatlingExecutor executor = track(GatlingExecutor.builder().name("held-checker").coreThreads(1)
                .threadFactory(factory).build());
        AtomicInteger ran = new AtomicInteger();
        executor.sequential("a").execute(() -> {
            try {
                if (checkerMade.await(10, TimeUnit.SECONDS)) {
                    ran.incrementAndGet();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        executor.close();
        boolean checkerAlive = checkers.size() == 1 && checkers.peek().isAlive();
        boolean terminated = executor.isTerminated();
        closeReturned.countDown();
        assertEquals(1, ran.get(), () -> "the accepted task did not run: " + executor.statistics());
        assertEquals(1, checkers.size(), "close() should have started the checker");
        assertFalse(checkerAlive, "close() returned with the checker's thread alive");
        assertTrue(terminated);
    }

    /**
     * The first worker failed to start; the checker's next look refilled the core and, in the same look, started an
     * auxiliary worker for the same single task (5 of 5 runs).
     */
    @Test
    @Timeout(30)
    void aRefilledCoreWorkerComesAloneForOneTask() throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> n == 1 ? 1 : 0);
        GatlingExecutor executor = track(GatlingExecutor.builder().name("refill-alone").coreThreads(1)
                .threadFactory(factory).checkPeriod(Duration.ofMillis(20)).build());
        CountDownLatch ran = new CountDownLatch(1);
        executor.execute(ran::countDown);
        await(ran, "the task");
        Checker checker = executor.engine().checker;
        long looked = checker.inspections();
        // the checker's later looks, or its doze, after which it looks no more until woken
        TestSupport.waitUntil("three more looks of the checker, or its doze",
                () -> checker.inspections() >= looked + 3 || checker.isDozing());
        ExecutorStatistics s = executor.statistics();
        assertEquals(0, s.auxiliaryThreadsStarted(), s.toString());
        assertEquals(1, s.peakThreads(), s.toString());
    }

    /**
     * {@code contexts} x {@code perContext} sequential tasks from two producers, a fraction of them blocking up to
     * {@code maxBlockNanos}; checks order, no overlap, and that all of them ran.
     */
    private static void runOrderedLoad(GatlingExecutor executor, int contexts, int perContext, double pBlock,
                                       long maxBlockNanos) throws InterruptedException {
        OrderChecker ordered = new OrderChecker(contexts);
        CountDownLatch done = new CountDownLatch(contexts * perContext);
        Thread[] producers = new Thread[2];
        for (int p = 0; p < 2; p++) {
            int first = p;
            producers[p] = new Thread(() -> {
                SplittableRandom r = new SplittableRandom(first);
                for (int k = 0; k < perContext; k++) {
                    for (int ctx = first; ctx < contexts; ctx += 2) {
                        int c = ctx;
                        long seq = k;
                        long block = r.nextDouble() < pBlock ? r.nextLong(maxBlockNanos) : 0;
                        executor.sequential("ctx-" + ctx).execute(() -> {
                            ordered.enter(c, seq + 1);
                            if (block > 0) {
                                LockSupport.parkNanos(block);
                            }
                            ordered.exit(c);
                            done.countDown();
                        });
                    }
                }
            });
            producers[p].start();
        }
        for (Thread t : producers) {
            t.join();
        }
        if (!done.await(20, TimeUnit.SECONDS)) {
            fail(done.getCount() + " tasks never ran: " + executor.statistics());
        }
        ordered.assertClean("sequential tasks");
    }

    // ---- errors -----------------------------------------------------------------------------------------------

    @Test
    @Timeout(30)
    void errorsDoNotKillWorkersNorStallContexts() throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> 0);
        AtomicLong handled = new AtomicLong();
        Queue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
        AtomicInteger handlerCalls = new AtomicInteger();
        GatlingExecutor executor = track(GatlingExecutor.builder().name("errors").coreThreads(2).maxThreads(2)
                .threadFactory(factory).uncaughtExceptionHandler((t, e) -> {
                    if (e instanceof Error || e instanceof RuntimeException) {
                        handled.incrementAndGet();
                    } else {
                        unexpected.add(e);
                    }
                    if (handlerCalls.incrementAndGet() % 3 == 0) {
                        throw new IllegalStateException("injected: the handler itself throws");
                    }
                }).build());
        int contexts = 8, perContext = 500;
        OrderChecker ordered = new OrderChecker(contexts);
        CountDownLatch done = new CountDownLatch(contexts * perContext);
        long thrown = 0;
        for (int k = 0; k < perContext; k++) {
            for (int ctx = 0; ctx < contexts; ctx++) {
                int c = ctx;
                long seq = k;
                int what = (k * 7 + ctx) % 10;  // 0 AssertionError, 1 StackOverflowError, 2 OOME, 3 custom, 4 RTE
                if (what <= 4) {
                    thrown++;
                }
                Runnable task = () -> {
                    ordered.enter(c, seq + 1);
                    ordered.exit(c);
                    done.countDown();
                    switch (what) {
                        case 0: throw new AssertionError("injected");
                        case 1: throw new StackOverflowError("injected");
                        case 2: throw new OutOfMemoryError("injected");
                        case 3: throw new Error("injected") { };
                        case 4: throw new IllegalArgumentException("injected");
                        default:
                    }
                };
                if (ctx % 2 == 0) {
                    executor.sequential(c).execute(task);
                } else {
                    executor.execute(new SequentialRunnable() {
                        @Override public Object context() { return c; }
                        @Override public void run() { task.run(); }
                    });
                }
            }
        }
        assertTrue(done.await(20, TimeUnit.SECONDS), () -> done.getCount() + " never ran: " + executor.statistics());
        ordered.assertClean("sequential tasks");
        for (Thread t : factory.made) {
            assertTrue(t.isAlive(), () -> "a worker died from a task's throwable: " + t);
        }
        // A submitted task that throws an Error reports it through its future.
        Future<?> f = executor.submit(() -> { throw new StackOverflowError("via future"); });
        ExecutionException ee = null;
        try {
            f.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            ee = e;
        }
        assertNotNull(ee, "the future must fail");
        assertInstanceOf(StackOverflowError.class, ee.getCause());
        // After termination every task has been counted: compare exactly.
        long expectedFailed = thrown + 1;
        executor.shutdown();
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
        ExecutorStatistics s = executor.statistics();
        assertEquals(thrown, handled.get(), "every execute-path throwable reaches the handler once");
        assertTrue(unexpected.isEmpty(), unexpected::toString);
        assertEquals(expectedFailed, s.failed(), "every task that threw, the submitted one included");
        assertTrue(factory.made.size() <= 2, () -> "a worker was replaced: errors killed it (" + factory.made + ")");
    }

    // ---- interrupts -------------------------------------------------------------------------------------------

    @Test
    @Timeout(30)
    void interruptStatusNeverLeaksIntoTheNextTask() throws Exception {
        GatlingExecutor executor = track(GatlingExecutor.builder().name("self-interrupt").coreThreads(2).build());
        int contexts = 4, perContext = 5_000;
        OrderChecker ordered = new OrderChecker(contexts);
        Queue<String> leaks = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(contexts * perContext);
        for (int k = 0; k < perContext; k++) {
            for (int ctx = 0; ctx < contexts; ctx++) {
                int c = ctx;
                long seq = k;
                Runnable task = () -> {
                    if (Thread.currentThread().isInterrupted()) {
                        leaks.add("task " + seq + " of context " + c + " started interrupted");
                    }
                    ordered.enter(c, seq + 1);
                    ordered.exit(c);
                    done.countDown();
                    if (seq % 2 == 0) {
                        Thread.currentThread().interrupt(); // left set on purpose
                    }
                };
                if (ctx % 2 == 0) {
                    executor.sequential(c).execute(task);
                } else {
                    executor.execute(asSequential(c, task));
                }
            }
        }
        assertTrue(done.await(20, TimeUnit.SECONDS), () -> done.getCount() + " never ran: " + executor.statistics());
        ordered.assertClean("sequential tasks");
        assertTrue(leaks.isEmpty(), () -> leaks.size() + " leaks, e.g. " + leaks.peek());
    }

    /** A sequential task of context {@code ctx}, to give to {@code execute}. */
    private static Runnable asSequential(int ctx, Runnable task) {
        return new SequentialRunnable() {
            @Override public Object context() { return ctx; }
            @Override public void run() { task.run(); }
        };
    }

    @Test
    @Timeout(30)
    void interruptsDeliveredToWorkersAtRandomLoseNothing() throws Exception {
        RecordingFactory factory = new RecordingFactory(n -> 0);
        GatlingExecutor executor = track(GatlingExecutor.builder().name("interrupted").coreThreads(2).maxThreads(4)
                .threadFactory(factory).checkPeriod(Duration.ofMillis(5)).blockedThreshold(Duration.ofMillis(10))
                .build());
        int contexts = 12, perContext = 1_500;
        OrderChecker ordered = new OrderChecker(contexts);
        CountDownLatch done = new CountDownLatch(contexts * perContext);
        AtomicLong interruptedInside = new AtomicLong();
        volatileStop = false;
        Thread interrupter = new Thread(() -> {
            SplittableRandom r = new SplittableRandom(7);
            while (!volatileStop) {
                for (Thread t : factory.made) {
                    if (r.nextInt(4) == 0) {
                        t.interrupt();
                    }
                }
                LockSupport.parkNanos(r.nextLong(200_000));
            }
        }, "interrupter");
        interrupter.start();
        try {
            for (int k = 0; k < perContext; k++) {
                for (int ctx = 0; ctx < contexts; ctx++) {
                    int c = ctx;
                    long seq = k;
                    executor.sequential(c).execute(() -> {
                        ordered.enter(c, seq + 1);
                        try {
                            if (seq % 50 == 0) {
                                Thread.sleep(1);   // interruptible blocking inside a task
                            }
                        } catch (InterruptedException e) {
                            interruptedInside.incrementAndGet();
                        } finally {
                            ordered.exit(c);
                            done.countDown();
                        }
                    });
                }
            }
            assertTrue(done.await(20, TimeUnit.SECONDS),
                    () -> done.getCount() + " never ran: " + executor.statistics());
        } finally {
            volatileStop = true;
            interrupter.join();
        }
        ordered.assertClean("sequential tasks");
        // 360 tasks sleep 1 ms while interrupts come every 100 us or so: some must have landed inside a task.
        assertTrue(interruptedInside.get() > 0, "no interrupt reached a task: the test tested nothing");
        // Interrupt the now idle workers once more: they must neither die nor spin, and still take new work.
        for (Thread t : factory.made) {
            t.interrupt();
        }
        assertIdleWorkersUseNoCpu(factory);
        CountDownLatch after = new CountDownLatch(contexts);
        for (int ctx = 0; ctx < contexts; ctx++) {
            executor.sequential(ctx).execute(after::countDown);
        }
        assertTrue(after.await(10, TimeUnit.SECONDS), "work submitted after interrupting idle workers never ran");
        System.out.println("[fault] interrupted inside tasks: " + interruptedInside + ", " + executor.statistics());
    }

    private volatile boolean volatileStop;

    /**
     * An interrupted idle worker whose interrupt status is not cleared returns from {@code park} at once, forever:
     * measure the CPU time its threads use over a quiet half second.
     */
    private static void assertIdleWorkersUseNoCpu(RecordingFactory factory) throws InterruptedException {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        assumeTrue(mx.isThreadCpuTimeSupported(), "no thread CPU time here");
        List<Thread> threads = new ArrayList<>(factory.made);
        long[] before = new long[threads.size()];
        for (int i = 0; i < before.length; i++) {
            before[i] = mx.getThreadCpuTime(threads.get(i).getId());
        }
        long window = TimeUnit.MILLISECONDS.toNanos(500);
        Thread.sleep(500); // a measurement window, not a wait for a result
        int measured = 0;
        for (int i = 0; i < before.length; i++) {
            long after = mx.getThreadCpuTime(threads.get(i).getId());
            if (before[i] >= 0 && after >= 0) {
                measured++;
                long used = after - before[i];
                assertTrue(used < window / 4, threads.get(i) + " used " + used / 1_000_000
                        + " ms of CPU in a 500 ms idle window after an interrupt: it spins");
            }
        }
        assertTrue(measured > 0, "no thread of the executor alive through the window: nothing measured " + threads);
    }

    // ---- a task that never returns ----------------------------------------------------------------------------

    @Test
    @Timeout(30)
    void taskThatNeverReturnsStallsOnlyItsOwnContext() throws Exception {
        GatlingExecutor executor = track(GatlingExecutor.builder().name("stuck").coreThreads(1).maxThreads(4)
                .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(30)).build());
        CountDownLatch forever = validation.gate();
        CountDownLatch stuckStarted = new CountDownLatch(1);
        AtomicInteger behindStuck = new AtomicInteger();
        executor.sequential("stuck").execute(() -> {
            stuckStarted.countDown();
            TestSupport.blockIgnoringInterrupts(forever);   // blocks until the test ends, whatever happens
        });
        assertTrue(stuckStarted.await(10, TimeUnit.SECONDS));
        for (int i = 0; i < 100; i++) {
            executor.sequential("stuck").execute(behindStuck::incrementAndGet);
        }
        // Everything else keeps moving, including tasks queued on the stuck worker's thread before it got stuck.
        int contexts = 50, perContext = 100;
        OrderChecker ordered = new OrderChecker(contexts);
        CountDownLatch done = new CountDownLatch(contexts * perContext + 20);
        for (int k = 0; k < perContext; k++) {
            for (int ctx = 0; ctx < contexts; ctx++) {
                int c = ctx;
                long seq = k;
                executor.sequential(c).execute(() -> {
                    ordered.enter(c, seq + 1);
                    ordered.exit(c);
                    done.countDown();
                });
            }
        }
        for (int i = 0; i < 10; i++) {
            executor.execute(done::countDown);
            executor.coalescing("c" + i).execute(done::countDown);
        }
        assertTrue(done.await(15, TimeUnit.SECONDS), () -> done.getCount() + " tasks stalled behind a stuck task: "
                + executor.statistics());
        ordered.assertClean("sequential tasks");
        assertEquals(0, behindStuck.get(), "a task ran while the previous task of its context was still running");
        // The stuck task is still running: the checker must report it once it has run past the blocked threshold
        // (the other work may well have finished sooner, on an auxiliary thread started because the stuck worker
        // was off-CPU).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (executor.statistics().blockedDetections() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertTrue(executor.statistics().blockedDetections() >= 1, executor.statistics()::toString);
        // Release the stuck task: the 100 tasks behind it run, in order, exactly once.
        forever.countDown();
        executor.shutdown();
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(100, behindStuck.get());
    }

    @Test
    @Timeout(30)
    void shutdownNowWithATaskThatIgnoresInterruptsReturnsWhatIsQueuedBehindIt() throws Exception {
        GatlingExecutor executor = track(GatlingExecutor.builder().name("stubborn").coreThreads(1).maxThreads(2)
                .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(30)).build());
        CountDownLatch release = validation.gate();
        CountDownLatch started = new CountDownLatch(1);
        executor.sequential("x").execute(() -> {
            started.countDown();
            TestSupport.blockIgnoringInterrupts(release);
        });
        assertTrue(started.await(10, TimeUnit.SECONDS));
        List<Runnable> queued = new ArrayList<>();
        AtomicInteger ranBehind = new AtomicInteger();
        for (int i = 0; i < 10; i++) {
            Runnable r = ranBehind::incrementAndGet;
            queued.add(r);
            executor.sequential("x").execute(r);
        }
        List<Runnable> returned = executor.shutdownNow();
        assertEquals(queued.size(), returned.size(), "shutdownNow must return the tasks queued behind the stuck one");
        for (Runnable r : queued) {
            assertTrue(returned.stream().anyMatch(x -> x == r), "the caller's own runnables are returned");
        }
        assertFalse(executor.awaitTermination(100, TimeUnit.MILLISECONDS), "terminated while a task still runs");
        assertFalse(executor.isTerminated());
        release.countDown();
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(0, ranBehind.get(), "a returned task ran");
    }
}
