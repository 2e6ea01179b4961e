package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.block;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.millisSince;
import static io.github.gatlingexecutor.TestSupport.sleep;
import static io.github.gatlingexecutor.TestSupport.uniqueName;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.gatlingexecutor.TestSupport.Seq;
import io.github.gatlingexecutor.TestSupport.SeqCallable;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The {@link java.util.concurrent.ExecutorService} / {@link ScheduledExecutorService} contract, run against several
 * configurations of {@link GatlingExecutor} and, as a check of the suite itself, against the JDK's
 * {@link ScheduledThreadPoolExecutor}. Tests that differ by design skip the JDK configuration.
 *
 * <p>"Before start" scenarios need tasks that are accepted but cannot start yet. On a fixed pool that means occupying
 * every thread; on a context-aware executor it means occupying the sequential lane the task belongs to, so all such
 * tasks here are {@link SequentialRunnable}s of one context (a context the JDK executor simply ignores).
 */
class ContractExecutorServiceTest {

    /** One executor configuration under test. */
    static final class Config {
        final String label;
        final boolean gatling;
        /** Threads of a fixed pool (every one must be occupied to hold a task back); 0 for a context-aware one. */
        final int fixedPoolSize;
        private final Function<String, ScheduledExecutorService> factory;

        Config(String label, boolean gatling, int fixedPoolSize, Function<String, ScheduledExecutorService> factory) {
            this.label = label;
            this.gatling = gatling;
            this.fixedPoolSize = fixedPoolSize;
            this.factory = factory;
        }

        ScheduledExecutorService create() {
            return factory.apply(uniqueName("contract"));
        }

        @Override
        public String toString() {
            return label;
        }
    }

    /**
     * Every configuration, or only those whose label contains the system property
     * {@code contract.configurations} (e.g. {@code -Dcontract.configurations=jdk}).
     */
    static Stream<Config> configurations() {
        String only = System.getProperty("contract.configurations", "");
        return allConfigurations().filter(c -> c.label.contains(only));
    }

    private static Stream<Config> allConfigurations() {
        return Stream.of(
                new Config("jdk ScheduledThreadPoolExecutor(4)", false, 4, name -> new ScheduledThreadPoolExecutor(4)),
                new Config("gatling core=1 check=100ms", true, 0, name -> GatlingExecutor.builder().name(name)
                        .coreThreads(1).checkPeriod(Duration.ofMillis(100)).blockedThreshold(Duration.ofMillis(100))
                        .build()),
                new Config("gatling core=4 defaults", true, 0, name -> new GatlingExecutor(name, 4)),
                new Config("gatling core=2 batch=1", true, 0, name -> GatlingExecutor.builder().name(name)
                        .coreThreads(2).batchSize(1).minTurn(Duration.ZERO).build()),
                new Config("gatling core=2 max=6 threadFactory", true, 0, name -> {
                    AtomicInteger n = new AtomicInteger();
                    ThreadFactory factory = r -> {
                        Thread t = new Thread(r, name + "-custom-" + n.incrementAndGet());
                        t.setDaemon(true);
                        return t;
                    };
                    return GatlingExecutor.builder().name(name).coreThreads(2).maxThreads(6).threadFactory(factory)
                            .build();
                }));
    }

    @Target(ElementType.METHOD)
    @Retention(RetentionPolicy.RUNTIME)
    @ParameterizedTest(name = "{0}")
    @MethodSource("configurations")
    @interface ForEachConfiguration {
    }

    private static final Object LANE = "contract-lane";

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    private ScheduledExecutorService create(Config config) {
        return cleanup.track(config.create());
    }

    /**
     * Makes sure that sequential tasks of {@link #LANE} cannot start until {@code release} opens: occupies the lane
     * (context-aware) or every pool thread (fixed pool). Returns once the blockers run; each blocker that is
     * interrupted counts down {@code interrupted}.
     */
    private List<Future<?>> occupy(Config config, ScheduledExecutorService e, CountDownLatch release,
                                   CountDownLatch interrupted) {
        int blockers = config.gatling ? 1 : config.fixedPoolSize;
        CountDownLatch started = new CountDownLatch(blockers);
        List<Future<?>> futures = new ArrayList<>();
        for (int i = 0; i < blockers; i++) {
            futures.add(e.submit(new Seq(LANE, () -> {
                started.countDown();
                try {
                    block(release);
                } catch (InterruptedException ie) {
                    if (interrupted != null) {
                        interrupted.countDown();
                    }
                }
            })));
        }
        await(started, "blockers to start");
        return futures;
    }

    // ---- execute / submit ------------------------------------------------------------------------------------

    @ForEachConfiguration
    void executeRunsTheTask(Config config) {
        ScheduledExecutorService e = create(config);
        CountDownLatch done = new CountDownLatch(3);
        for (int i = 0; i < 3; i++) {
            e.execute(done::countDown);
        }
        await(done, "executed tasks");
    }

    @ForEachConfiguration
    void submitRunnableCompletesWithNull(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        AtomicBoolean ran = new AtomicBoolean();
        Future<?> f = e.submit(() -> ran.set(true));
        assertNull(get(f));
        assertTrue(ran.get());
        assertTrue(f.isDone());
        assertFalse(f.isCancelled());
    }

    @ForEachConfiguration
    void submitRunnableWithResultCompletesWithThatResult(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        Object result = new Object();
        Future<Object> f = e.submit(() -> { }, result);
        assertSame(result, get(f));
        assertTrue(f.isDone());
    }

    @ForEachConfiguration
    void submitCallableCompletesWithItsValue(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        Future<Integer> f = e.submit(() -> 42);
        assertEquals(42, get(f));
    }

    @ForEachConfiguration
    void submitCallableThatThrowsCompletesExceptionally(Config config) {
        ScheduledExecutorService e = create(config);
        Exception boom = new Exception("boom");
        Future<Object> f = e.submit(() -> {
            throw boom;
        });
        ExecutionException ee = assertThrows(ExecutionException.class, () -> get(f));
        assertSame(boom, ee.getCause());
        assertTrue(f.isDone());
        assertFalse(f.isCancelled());
    }

    @ForEachConfiguration
    void submitRunnableThatThrowsErrorCompletesExceptionally(Config config) {
        ScheduledExecutorService e = create(config);
        Error boom = new Error("boom");
        Future<?> f = e.submit((Runnable) () -> {
            throw boom;
        });
        ExecutionException ee = assertThrows(ExecutionException.class, () -> get(f));
        assertSame(boom, ee.getCause());
    }

    @ForEachConfiguration
    @SuppressWarnings("ConstantConditions")
    void nullArgumentsAreRejectedWithNullPointerException(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        Runnable r = () -> { };
        Callable<String> c = () -> "x";
        assertThrows(NullPointerException.class, () -> e.execute(null));
        assertThrows(NullPointerException.class, () -> e.submit((Runnable) null));
        assertThrows(NullPointerException.class, () -> e.submit((Runnable) null, "v"));
        assertThrows(NullPointerException.class, () -> e.submit((Callable<String>) null));
        assertThrows(NullPointerException.class, () -> e.schedule((Runnable) null, 1, SECONDS));
        assertThrows(NullPointerException.class, () -> e.schedule((Callable<String>) null, 1, SECONDS));
        assertThrows(NullPointerException.class, () -> e.schedule(r, 1, null));
        assertThrows(NullPointerException.class, () -> e.schedule(c, 1, null));
        assertThrows(NullPointerException.class, () -> e.scheduleAtFixedRate(null, 1, 1, SECONDS));
        assertThrows(NullPointerException.class, () -> e.scheduleAtFixedRate(r, 1, 1, null));
        assertThrows(NullPointerException.class, () -> e.scheduleWithFixedDelay(null, 1, 1, SECONDS));
        assertThrows(NullPointerException.class, () -> e.scheduleWithFixedDelay(r, 1, 1, null));
        assertThrows(NullPointerException.class, () -> e.invokeAll(null));
        assertThrows(NullPointerException.class, () -> e.invokeAll(null, 1, SECONDS));
        assertThrows(NullPointerException.class, () -> e.invokeAll(List.of(c), 1, null));
        assertThrows(NullPointerException.class, () -> e.invokeAny(null));
        assertThrows(NullPointerException.class, () -> e.invokeAny(null, 1, SECONDS));
        assertThrows(NullPointerException.class, () -> e.awaitTermination(1, null));
        // the executor is still usable afterwards
        assertEquals("x", get(e.submit(c)));
    }

    // ---- invokeAll / invokeAny -------------------------------------------------------------------------------

    @ForEachConfiguration
    void invokeAllReturnsCompletedFuturesInTaskOrder(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            int value = i;
            tasks.add(() -> {
                Thread.sleep((8 - value) * 3L); // the first ones finish last
                return value;
            });
        }
        List<Future<Integer>> futures = e.invokeAll(tasks);
        assertEquals(tasks.size(), futures.size());
        for (int i = 0; i < futures.size(); i++) {
            Future<Integer> f = futures.get(i);
            assertTrue(f.isDone(), "future " + i + " not done when invokeAll returned");
            assertEquals(i, f.get(0, MILLISECONDS));
        }
    }

    @ForEachConfiguration
    void invokeAllReportsFailuresPerFuture(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        IllegalStateException boom = new IllegalStateException("boom");
        List<Future<String>> futures = e.invokeAll(List.of(() -> "a", () -> {
            throw boom;
        }, () -> "c"));
        assertEquals("a", futures.get(0).get(0, MILLISECONDS));
        ExecutionException ee = assertThrows(ExecutionException.class, () -> futures.get(1).get(0, MILLISECONDS));
        assertSame(boom, ee.getCause());
        assertEquals("c", futures.get(2).get(0, MILLISECONDS));
    }

    @ForEachConfiguration
    void invokeAllOfNothingReturnsAnEmptyList(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        assertTrue(e.invokeAll(List.<Callable<String>>of()).isEmpty());
        assertTrue(e.invokeAll(List.<Callable<String>>of(), 1, SECONDS).isEmpty());
    }

    @ForEachConfiguration
    void invokeAllWithANullTaskThrowsNullPointerException(Config config) {
        ScheduledExecutorService e = create(config);
        List<Callable<String>> tasks = Arrays.asList(() -> "a", null);
        assertThrows(NullPointerException.class, () -> e.invokeAll(tasks));
        assertThrows(NullPointerException.class, () -> e.invokeAll(tasks, 1, SECONDS));
    }

    /**
     * The unfinished tasks are cancelled as {@code AbstractExecutorService} cancels them, with {@code cancel(true)}: one
     * that runs at the timeout is interrupted, not left running for a caller that has given up on it.
     */
    @ForEachConfiguration
    void timedInvokeAllCancelsWhatDidNotFinish(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch never = cleanup.gate();
        CountDownLatch lateStarted = new CountDownLatch(1);
        CountDownLatch lateInterrupted = new CountDownLatch(1);
        long start = System.nanoTime();
        List<Future<String>> futures = e.invokeAll(List.of(() -> "quick", () -> {
            lateStarted.countDown();
            try {
                block(never);
            } catch (InterruptedException cancelled) {
                lateInterrupted.countDown();
                throw cancelled;
            }
            return "late";
        }), 1000, MILLISECONDS);
        long took = millisSince(start);
        assertTrue(took >= 900, "timed invokeAll returned after " + took + " ms, before its timeout");
        assertEquals(2, futures.size());
        assertTrue(futures.get(0).isDone());
        assertEquals("quick", futures.get(0).get(0, MILLISECONDS));
        assertTrue(futures.get(1).isDone());
        assertTrue(futures.get(1).isCancelled(), "the unfinished task's future was not cancelled");
        // Started within the second the call waited (a task that had not started is simply never run).
        if (lateStarted.getCount() == 0) {
            await(lateInterrupted, "the task running at the timeout to be interrupted by its cancel");
        }
    }

    @ForEachConfiguration
    void timedInvokeAllWithATimeoutAlreadyPastSubmitsNothing(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        AtomicInteger ran = new AtomicInteger();
        for (PastTimeout t : PastTimeout.values()) {
            long before = tasksSubmitted(e);
            List<Future<Integer>> futures = e.invokeAll(
                    List.of(ran::incrementAndGet, ran::incrementAndGet, ran::incrementAndGet), t.timeout, t.unit);
            assertEquals(3, futures.size());
            for (Future<Integer> f : futures) {
                assertTrue(f.isCancelled(), t + ": a future came back not cancelled: " + f);
            }
            assertEquals(before, tasksSubmitted(e), t + ": tasks were submitted");
        }
        assertEquals(0, ran.get());
    }

    /**
     * Timeouts that have passed before the call: zero, a little below, and the ones near {@code Long.MIN_VALUE}
     * nanoseconds, where now plus the timeout wraps round (a large negative timeout in a coarse unit saturates there).
     */
    enum PastTimeout {
        ZERO(0, MILLISECONDS),
        MINUS_ONE(-1, MILLISECONDS),
        LONG_MIN_NANOS(Long.MIN_VALUE, TimeUnit.NANOSECONDS),
        JUST_ABOVE_LONG_MIN_NANOS(Long.MIN_VALUE + 1_000, TimeUnit.NANOSECONDS),
        MINUS_LONG_MAX_DAYS(-Long.MAX_VALUE, TimeUnit.DAYS);

        final long timeout;
        final TimeUnit unit;

        PastTimeout(long timeout, TimeUnit unit) {
            this.timeout = timeout;
            this.unit = unit;
        }

        @Override
        public String toString() {
            return "timeout " + timeout + " " + unit;
        }
    }

    /** Tasks the executor has accepted so far. */
    private static long tasksSubmitted(ScheduledExecutorService e) {
        return e instanceof GatlingExecutor ? ((GatlingExecutor) e).statistics().submitted()
                : ((ScheduledThreadPoolExecutor) e).getTaskCount();
    }

    @ForEachConfiguration
    void invokeAnyReturnsASuccessfulResult(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        String result = e.invokeAny(List.of(() -> {
            throw new IllegalStateException("no");
        }, () -> "ok", () -> {
            throw new IllegalStateException("no");
        }));
        assertEquals("ok", result);
        assertEquals("ok", e.invokeAny(List.of(() -> "ok"), 10, SECONDS));
    }

    @ForEachConfiguration
    void invokeAnyWhenAllFailThrowsExecutionException(Config config) {
        ScheduledExecutorService e = create(config);
        List<Callable<String>> tasks = List.of(() -> {
            throw new IllegalStateException("one");
        }, () -> {
            throw new IllegalStateException("two");
        });
        ExecutionException ee = assertThrows(ExecutionException.class, () -> e.invokeAny(tasks));
        assertTrue(ee.getCause() instanceof IllegalStateException, "cause: " + ee.getCause());
        assertThrows(ExecutionException.class, () -> e.invokeAny(tasks, 10, SECONDS));
    }

    @ForEachConfiguration
    void invokeAnyOfNothingThrowsIllegalArgumentException(Config config) {
        ScheduledExecutorService e = create(config);
        assertThrows(IllegalArgumentException.class, () -> e.invokeAny(List.<Callable<String>>of()));
        assertThrows(IllegalArgumentException.class, () -> e.invokeAny(List.<Callable<String>>of(), 1, SECONDS));
    }

    @ForEachConfiguration
    void invokeAnyWithANullTaskThrowsNullPointerException(Config config) {
        ScheduledExecutorService e = create(config);
        List<Callable<String>> tasks = Arrays.asList(null, () -> "a");
        assertThrows(NullPointerException.class, () -> e.invokeAny(tasks));
        assertThrows(NullPointerException.class, () -> e.invokeAny(tasks, 1, SECONDS));
    }

    @ForEachConfiguration
    void timedInvokeAnyTimesOut(Config config) {
        ScheduledExecutorService e = create(config);
        CountDownLatch never = cleanup.gate();
        long start = System.nanoTime();
        assertThrows(TimeoutException.class, () -> e.invokeAny(List.of(() -> {
            block(never);
            return "late";
        }), 200, MILLISECONDS));
        long took = millisSince(start);
        assertTrue(took >= 180, "timed out after only " + took + " ms");
    }

    @ForEachConfiguration
    void timedInvokeAnyWithATimeoutAlreadyPastTimesOutAtOnce(Config config) {
        ScheduledExecutorService e = create(config);
        CountDownLatch never = cleanup.gate();
        for (PastTimeout t : PastTimeout.values()) {
            // A call that waits does so for good (its task never ends): the preemptive timeout makes that a failure.
            assertTimeoutPreemptively(Duration.ofSeconds(TestSupport.TIMEOUT_SECONDS),
                    () -> assertThrows(TimeoutException.class, () -> e.invokeAny(List.of(() -> {
                        block(never);
                        return "late";
                    }), t.timeout, t.unit)), t.toString());
        }
    }

    /**
     * Once {@code invokeAny} has its answer, the tasks that have not completed are cancelled: a running one is
     * interrupted, and (on a context-aware executor) one still waiting in its lane never runs. Untimed and timed.
     */
    @ForEachConfiguration
    void invokeAnyCancelsTheTasksLeftWhenItReturns(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        for (boolean timed : new boolean[] {false, true}) {
            CountDownLatch release = cleanup.gate();
            if (config.gatling) {
                occupy(config, e, release, null); // so the lane task below waits (a fixed pool would run nothing)
            }
            CountDownLatch slowStarted = new CountDownLatch(1);
            CountDownLatch slowInterrupted = new CountDownLatch(1);
            CountDownLatch never = cleanup.gate();
            AtomicBoolean laneTaskRan = new AtomicBoolean();
            List<Callable<String>> tasks = new ArrayList<>();
            tasks.add(() -> {
                slowStarted.countDown();
                try {
                    block(never);
                } catch (InterruptedException expected) {
                    slowInterrupted.countDown();
                }
                return "slow";
            });
            if (config.gatling) {
                tasks.add(new SeqCallable<>(LANE, () -> {
                    laneTaskRan.set(true);
                    return "lane";
                }));
            }
            tasks.add(() -> {
                await(slowStarted, "the slow task to start");
                return "quick";
            });
            assertEquals("quick", timed ? e.invokeAny(tasks, TestSupport.TIMEOUT_SECONDS, SECONDS)
                    : e.invokeAny(tasks));
            await(slowInterrupted, "the running task to be interrupted once invokeAny returned (timed: " + timed + ")");
            release.countDown();
            // The lane's next task runs after the one invokeAny left behind would have.
            assertEquals("after", get(TestSupport.submitCallable(e, new SeqCallable<>(LANE, () -> "after"))));
            assertFalse(laneTaskRan.get(), "a task invokeAny left waiting in its lane ran (timed: " + timed + ")");
        }
    }

    // ---- Future ----------------------------------------------------------------------------------------------

    @ForEachConfiguration
    void cancelBeforeStartMeansTheTaskNeverRuns(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        occupy(config, e, release, null);
        AtomicBoolean ran = new AtomicBoolean();
        Future<?> f = e.submit(new Seq(LANE, () -> ran.set(true)));
        assertFalse(f.isDone());
        assertTrue(f.cancel(false));
        assertTrue(f.isCancelled());
        assertTrue(f.isDone());
        assertFalse(f.cancel(true), "a second cancel must report false");
        assertThrows(CancellationException.class, () -> f.get(0, MILLISECONDS));
        release.countDown();
        Future<String> after = TestSupport.submitCallable(e, new SeqCallable<>(LANE, () -> "after"));
        assertEquals("after", get(after));
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        assertFalse(ran.get(), "a task cancelled before it started ran anyway");
    }

    @ForEachConfiguration
    void cancelWithInterruptInterruptsTheRunningTask(Config config) {
        ScheduledExecutorService e = create(config);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        CountDownLatch never = cleanup.gate();
        Future<?> f = e.submit(() -> {
            started.countDown();
            try {
                block(never);
            } catch (InterruptedException ie) {
                interrupted.countDown();
            }
        });
        await(started, "task start");
        assertTrue(f.cancel(true));
        await(interrupted, "the running task to be interrupted");
        assertTrue(f.isCancelled());
        assertTrue(f.isDone());
        assertThrows(CancellationException.class, () -> f.get(0, MILLISECONDS));
    }

    @ForEachConfiguration
    void cancelWithoutInterruptLetsTheRunningTaskFinish(Config config) {
        ScheduledExecutorService e = create(config);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = cleanup.gate();
        CountDownLatch finishedUninterrupted = new CountDownLatch(1);
        Future<?> f = e.submit(() -> {
            started.countDown();
            try {
                block(release);
                finishedUninterrupted.countDown();
            } catch (InterruptedException ie) {
                // must not happen
            }
        });
        await(started, "task start");
        assertTrue(f.cancel(false));
        assertTrue(f.isCancelled());
        release.countDown();
        await(finishedUninterrupted, "the running task to finish without an interrupt");
    }

    @ForEachConfiguration
    void timedGetThrowsTimeoutExceptionWhileTheTaskRuns(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        Future<String> f = e.submit(() -> {
            block(release);
            return "done";
        });
        long start = System.nanoTime();
        assertThrows(TimeoutException.class, () -> f.get(100, MILLISECONDS));
        assertTrue(millisSince(start) >= 90, "get returned before its timeout");
        assertFalse(f.isDone());
        release.countDown();
        assertEquals("done", get(f));
    }

    // ---- schedule --------------------------------------------------------------------------------------------

    @ForEachConfiguration
    void scheduledCallableRunsNotBeforeItsDelay(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        long start = System.nanoTime();
        ScheduledFuture<Long> f = e.schedule(System::nanoTime, 200, MILLISECONDS);
        long delay = f.getDelay(MILLISECONDS);
        long elapsed = millisSince(start); // a stall of the test's thread shortens the delay left by as much
        assertTrue(delay <= 200 && delay >= 200 - elapsed - 2,
                "getDelay right after schedule: " + delay + " (" + elapsed + " ms since)");
        long ranAt = get(f);
        assertTrue(ranAt - start >= MILLISECONDS.toNanos(200),
                "ran " + TimeUnit.NANOSECONDS.toMillis(ranAt - start) + " ms after schedule, delay was 200 ms");
        assertTrue(f.getDelay(MILLISECONDS) <= 0);
    }

    @ForEachConfiguration
    void scheduledRunnableRunsNotBeforeItsDelay(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        long[] ranAt = new long[1];
        long start = System.nanoTime();
        Runnable task = () -> {
            ranAt[0] = System.nanoTime();
        };
        ScheduledFuture<?> f = e.schedule(task, 150, MILLISECONDS);
        assertNull(get(f));
        assertTrue(ranAt[0] - start >= MILLISECONDS.toNanos(150), "ran early");
    }

    @ForEachConfiguration
    void scheduleWithZeroOrNegativeDelayRunsPromptly(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        assertEquals("zero", get(e.schedule(() -> "zero", 0, MILLISECONDS)));
        assertEquals("negative", get(e.schedule(() -> "negative", -5, SECONDS)));
    }

    @ForEachConfiguration
    void aTaskScheduledWithNoDelayKeepsItsPlaceAmongTheCallersSubmissions(Config config) throws Exception {
        assumeTrue(config.gatling, "a pool of several threads does not keep a context's order");
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        occupy(config, e, release, null); // so every task below waits in the lane, in the order it entered it
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Integer> expected = new ArrayList<>();
        List<Future<?>> periodic = new ArrayList<>();
        Future<?> last = null;
        for (int i = 0; i < 60; i++) {
            int n = i;
            Seq task = new Seq(LANE, () -> order.add(n));
            expected.add(n);
            switch (i % 6) {
                case 0:
                    e.schedule(task, 0, MILLISECONDS);
                    break;
                case 1:
                    e.execute(task);
                    break;
                case 2:
                    e.schedule(task, -1, SECONDS);
                    break;
                case 3:
                    periodic.add(e.scheduleAtFixedRate(task, 0, 1, TimeUnit.HOURS)); // one run within the test
                    break;
                case 4:
                    periodic.add(e.scheduleWithFixedDelay(task, -1, 1, TimeUnit.HOURS));
                    break;
                default:
                    last = e.submit(task);
            }
        }
        release.countDown();
        get(last);
        for (Future<?> f : periodic) {
            f.cancel(false);
        }
        assertEquals(expected, order, "scheduled with no delay, then executed or submitted, in one context");
    }

    @ForEachConfiguration
    void cancelledDelayedTaskNeverRuns(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        AtomicBoolean ran = new AtomicBoolean();
        ScheduledFuture<?> f = e.schedule(() -> ran.set(true), 100, MILLISECONDS);
        assertTrue(f.cancel(false));
        assertTrue(f.isCancelled());
        assertThrows(CancellationException.class, () -> f.get(0, MILLISECONDS));
        // a later task due after the cancelled one ran proves its due time passed
        get(e.schedule(() -> { }, 250, MILLISECONDS));
        assertFalse(ran.get());
    }

    @ForEachConfiguration
    void fixedRateRepeatsUntilCancelled(Config config) {
        ScheduledExecutorService e = create(config);
        assertRepeatsUntilCancelled(e, runs -> e.scheduleAtFixedRate(runs, 50, 20, MILLISECONDS));
    }

    @ForEachConfiguration
    void fixedDelayRepeatsUntilCancelled(Config config) {
        ScheduledExecutorService e = create(config);
        assertRepeatsUntilCancelled(e, runs -> e.scheduleWithFixedDelay(runs, 50, 20, MILLISECONDS));
    }

    /**
     * Fixed rate times each run from the schedule's start, fixed delay from the end of the run before (the
     * {@code ScheduledExecutorService} contract): after a first run that lasts past the second run's time, the second
     * follows at once at a fixed rate (a late run makes the next start late, never later than its own time), and a
     * whole delay after that end at a fixed delay. The first run lasts until its own future, whose delay reads that
     * run's time until the run ends, says the second run's time has passed.
     */
    @ForEachConfiguration
    void aLongRunIsFollowedAtOnceAtAFixedRateAndAfterTheWholeDelayAtAFixedDelay(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        long period = MILLISECONDS.toNanos(250);
        for (boolean fixedRate : new boolean[] {true, false}) {
            AtomicReference<ScheduledFuture<?>> self = new AtomicReference<>();
            AtomicInteger runs = new AtomicInteger();
            AtomicLong firstEnd = new AtomicLong();
            AtomicLong secondStart = new AtomicLong();
            CountDownLatch second = new CountDownLatch(1);
            Runnable task = () -> {
                int run = runs.incrementAndGet();
                if (run == 1) {
                    ScheduledFuture<?> f;
                    while ((f = self.get()) == null || f.getDelay(TimeUnit.NANOSECONDS) > -period) {
                        LockSupport.parkNanos(period / 20);
                    }
                    firstEnd.set(System.nanoTime());
                } else if (run == 2) {
                    secondStart.set(System.nanoTime());
                    second.countDown();
                }
            };
            self.set(fixedRate ? e.scheduleAtFixedRate(task, 0, period, TimeUnit.NANOSECONDS)
                    : e.scheduleWithFixedDelay(task, 0, period, TimeUnit.NANOSECONDS));
            await(second, "the second run");
            self.get().cancel(false);
            long gap = secondStart.get() - firstEnd.get();
            if (fixedRate) {
                assertTrue(gap < period, "at a fixed rate, the overdue second run started "
                        + TimeUnit.NANOSECONDS.toMillis(gap) + " ms after the first ended, a period or more");
            } else {
                assertTrue(gap >= period, "at a fixed delay, the second run started "
                        + TimeUnit.NANOSECONDS.toMillis(gap) + " ms after the first ended, before the delay");
            }
        }
    }

    /**
     * Waits until another periodic task of {@code periodMillis} on {@code e} has run {@code n} times: the timer has
     * gone round that often, so a periodic task that should have stopped would have run meanwhile. A fixed sleep
     * proves nothing on a loaded machine, where the timer may not have run at all.
     */
    private static void awaitPeriods(ScheduledExecutorService e, int n, long periodMillis) {
        CountDownLatch witnessed = new CountDownLatch(n);
        ScheduledFuture<?> witness = e.scheduleAtFixedRate(witnessed::countDown, periodMillis, periodMillis,
                MILLISECONDS);
        try {
            await(witnessed, n + " runs of a witness every " + periodMillis + " ms");
        } finally {
            witness.cancel(false);
        }
    }

    private static void assertRepeatsUntilCancelled(ScheduledExecutorService e,
                                                    Function<Runnable, ScheduledFuture<?>> schedule) {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch five = new CountDownLatch(5);
        long start = System.nanoTime();
        long[] firstRun = new long[1];
        ScheduledFuture<?> f = schedule.apply(() -> {
            if (runs.incrementAndGet() == 1) {
                firstRun[0] = System.nanoTime();
            }
            five.countDown();
        });
        await(five, "five periodic runs");
        assertTrue(firstRun[0] - start >= MILLISECONDS.toNanos(50), "first run before the initial delay");
        assertFalse(f.isDone());
        assertTrue(f.cancel(false));
        assertTrue(f.isCancelled());
        assertTrue(f.isDone());
        int atCancel = runs.get();
        awaitPeriods(e, 10, 20); // a periodic task that was not stopped would run several times meanwhile
        assertTrue(runs.get() <= atCancel + 1, "runs went on after cancel: " + atCancel + " -> " + runs.get());
        assertThrows(CancellationException.class, () -> f.get(0, MILLISECONDS));
    }

    @ForEachConfiguration
    void nonPositivePeriodIsRejected(Config config) {
        ScheduledExecutorService e = create(config);
        Runnable r = () -> { };
        assertThrows(IllegalArgumentException.class, () -> e.scheduleAtFixedRate(r, 1, 0, SECONDS));
        assertThrows(IllegalArgumentException.class, () -> e.scheduleAtFixedRate(r, 1, -1, SECONDS));
        assertThrows(IllegalArgumentException.class, () -> e.scheduleWithFixedDelay(r, 1, 0, SECONDS));
        assertThrows(IllegalArgumentException.class, () -> e.scheduleWithFixedDelay(r, 1, -1, SECONDS));
    }

    @ForEachConfiguration
    void exceptionInAPeriodicTaskStopsIt(Config config) {
        ScheduledExecutorService e = create(config);
        for (boolean rate : new boolean[] {true, false}) {
            AtomicInteger runs = new AtomicInteger();
            RuntimeException boom = new RuntimeException("boom on run 3");
            Runnable task = () -> {
                if (runs.incrementAndGet() == 3) {
                    throw boom;
                }
            };
            ScheduledFuture<?> f = rate ? e.scheduleAtFixedRate(task, 0, 5, MILLISECONDS)
                    : e.scheduleWithFixedDelay(task, 0, 5, MILLISECONDS);
            ExecutionException ee = assertThrows(ExecutionException.class, () -> get(f));
            assertSame(boom, ee.getCause());
            assertTrue(f.isDone());
            assertFalse(f.isCancelled());
            awaitPeriods(e, 20, 5);
            assertEquals(3, runs.get(), "a periodic task ran again after it threw");
        }
    }

    // ---- shutdown --------------------------------------------------------------------------------------------

    @ForEachConfiguration
    void shutdownRejectsNewTasks(Config config) {
        ScheduledExecutorService e = create(config);
        assertFalse(e.isShutdown());
        e.shutdown();
        assertTrue(e.isShutdown());
        Runnable r = () -> { };
        Callable<String> c = () -> "x";
        assertThrows(RejectedExecutionException.class, () -> e.execute(r));
        assertThrows(RejectedExecutionException.class, () -> e.submit(r));
        assertThrows(RejectedExecutionException.class, () -> e.submit(r, "v"));
        assertThrows(RejectedExecutionException.class, () -> e.submit(c));
        assertThrows(RejectedExecutionException.class, () -> e.schedule(r, 1, MILLISECONDS));
        assertThrows(RejectedExecutionException.class, () -> e.schedule(c, 1, MILLISECONDS));
        assertThrows(RejectedExecutionException.class, () -> e.scheduleAtFixedRate(r, 1, 1, MILLISECONDS));
        assertThrows(RejectedExecutionException.class, () -> e.scheduleWithFixedDelay(r, 1, 1, MILLISECONDS));
        assertThrows(RejectedExecutionException.class, () -> e.invokeAll(List.of(c)));
        assertThrows(RejectedExecutionException.class, () -> e.invokeAny(List.of(c)));
        assertThrows(RejectedExecutionException.class, () -> e.execute(new Seq(LANE, r)));
        e.shutdown(); // idempotent
        assertTrue(e.isShutdown());
    }

    /**
     * A zero or negative delay asks for the task at once, and a GatlingExecutor takes such a call down a path of its
     * own (dispatched on the caller's thread, not through the timer): it must be refused after shutdown like any
     * other, both while accepted work still runs and once the executor has terminated, and the task never run.
     */
    @ForEachConfiguration
    void schedulingWithNoDelayIsRejectedAfterShutdown(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        occupy(config, e, release, null);
        e.shutdown();
        AtomicInteger ran = new AtomicInteger();
        Runnable r = ran::incrementAndGet;
        Callable<Integer> c = ran::incrementAndGet;
        for (int phase = 0; phase < 2; phase++) {
            String when = phase == 0 ? "while shutting down" : "after termination";
            assertThrows(RejectedExecutionException.class, () -> e.schedule(r, 0, MILLISECONDS), when);
            assertThrows(RejectedExecutionException.class, () -> e.schedule(c, -1, SECONDS), when);
            assertThrows(RejectedExecutionException.class, () -> e.schedule(new Seq(LANE, r), 0, SECONDS), when);
            assertThrows(RejectedExecutionException.class, () -> e.scheduleAtFixedRate(r, 0, 1, MILLISECONDS), when);
            assertThrows(RejectedExecutionException.class, () -> e.scheduleWithFixedDelay(r, -1, 1, MILLISECONDS),
                    when);
            if (phase == 0) {
                release.countDown();
                assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
            }
        }
        assertEquals(0, ran.get(), "a task scheduled after shutdown ran");
    }

    @ForEachConfiguration
    void shutdownLetsAcceptedTasksComplete(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        occupy(config, e, release, null);
        List<Future<Integer>> queued = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            int value = i;
            queued.add(TestSupport.submitCallable(e, new SeqCallable<>(LANE, () -> value)));
        }
        CountDownLatch plain = new CountDownLatch(5);
        for (int i = 0; i < 5; i++) {
            e.execute(plain::countDown);
        }
        e.shutdown();
        assertFalse(e.isTerminated());
        release.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        assertTrue(e.isTerminated());
        for (int i = 0; i < queued.size(); i++) {
            assertEquals(i, queued.get(i).get(0, MILLISECONDS));
        }
        assertEquals(0, plain.getCount());
    }

    @ForEachConfiguration
    void delayedOneShotTasksStillRunAfterShutdown(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        long start = System.nanoTime();
        ScheduledFuture<Long> f = e.schedule(System::nanoTime, 300, MILLISECONDS);
        e.shutdown();
        assertFalse(e.isTerminated());
        long ranAt = get(f);
        assertTrue(ranAt - start >= MILLISECONDS.toNanos(300), "ran before its delay");
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
    }

    @ForEachConfiguration
    void periodicTasksStopAtShutdown(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch three = new CountDownLatch(3);
        ScheduledFuture<?> rate = e.scheduleAtFixedRate(() -> {
            runs.incrementAndGet();
            three.countDown();
        }, 0, 10, MILLISECONDS);
        ScheduledFuture<?> delay = e.scheduleWithFixedDelay(() -> { }, 0, 10, MILLISECONDS);
        await(three, "three periodic runs");
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS),
                "periodic tasks kept the executor from terminating");
        assertTrue(rate.isDone());
        assertTrue(delay.isDone());
        int after = runs.get();
        sleep(50);
        assertEquals(after, runs.get());
    }

    /**
     * ScheduledThreadPoolExecutor's default policy, to the letter: shutdown() does not complete the future of a
     * periodic run still in progress (a caller in get() would be released while the task still runs); the run ends,
     * then the task stops and its future is cancelled.
     */
    @ForEachConfiguration
    void shutdownLetsAPeriodicRunInProgressEndBeforeItsFutureIsCancelled(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = cleanup.gate();
        AtomicInteger runs = new AtomicInteger();
        ScheduledFuture<?> rate = e.scheduleAtFixedRate(() -> {
            runs.incrementAndGet();
            started.countDown();
            TestSupport.blockQuietly(release);
        }, 0, 1, MILLISECONDS);
        await(started, "the first periodic run");
        e.shutdown();
        assertFalse(rate.isDone(), "shutdown() completed the future of a periodic run still in progress");
        assertThrows(TimeoutException.class, () -> rate.get(20, MILLISECONDS));
        assertFalse(e.isTerminated());
        release.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        assertTrue(rate.isCancelled(), "a periodic task must stop at shutdown once its run has ended");
        assertEquals(1, runs.get(), "a periodic task ran again after shutdown()");
    }

    @ForEachConfiguration
    void shutdownNowReturnsTasksThatNeverStartedAndInterruptsRunningOnes(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        int blockers = config.gatling ? 1 : config.fixedPoolSize;
        CountDownLatch interrupted = new CountDownLatch(blockers);
        List<Future<?>> running = occupy(config, e, release, interrupted);
        AtomicInteger ran = new AtomicInteger();
        List<Future<?>> queued = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            queued.add(e.submit(new Seq(LANE, ran::incrementAndGet)));
        }
        ScheduledFuture<?> delayed = e.schedule(ran::incrementAndGet, 1, TimeUnit.HOURS);

        List<Runnable> returned = e.shutdownNow();
        assertTrue(e.isShutdown());
        Set<Object> returnedSet = Collections.newSetFromMap(new IdentityHashMap<>());
        returnedSet.addAll(returned);
        assertEquals(returned.size(), returnedSet.size(), "a task was returned twice: " + returned);
        for (Future<?> f : queued) {
            assertTrue(returnedSet.contains(f), "a queued future was not returned by shutdownNow: " + returned);
        }
        assertTrue(returnedSet.contains(delayed), "the delayed task was not returned by shutdownNow");
        for (Future<?> f : running) {
            assertFalse(returnedSet.contains(f), "a running task was returned by shutdownNow");
        }
        assertEquals(queued.size() + 1, returned.size(), "returned: " + returned);
        await(interrupted, "running tasks to be interrupted by shutdownNow");
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        assertEquals(0, ran.get(), "a task returned by shutdownNow ran anyway");
    }

    @ForEachConfiguration
    void shutdownNowReturnsTheCallersOwnRunnablesForExecute(Config config) throws Exception {
        assumeTrue(config.gatling, "the JDK pool returns its own wrappers for execute; GatlingExecutor returns the "
                + "caller's Runnables by design");
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        occupy(config, e, release, null);
        AtomicInteger ran = new AtomicInteger();
        List<Runnable> mine = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Runnable r = new Seq(LANE, ran::incrementAndGet);
            mine.add(r);
            e.execute(r);
        }
        List<Runnable> returned = e.shutdownNow();
        assertEquals(mine.size(), returned.size(), "returned: " + returned);
        Set<Object> returnedSet = Collections.newSetFromMap(new IdentityHashMap<>());
        returnedSet.addAll(returned);
        for (Runnable r : mine) {
            assertTrue(returnedSet.contains(r), "not the caller's own Runnables: " + returned);
        }
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        assertEquals(0, ran.get());
    }

    @ForEachConfiguration
    void awaitTerminationReportsFalseThenTrue(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        assertFalse(e.awaitTermination(10, MILLISECONDS), "not shut down, cannot be terminated");
        CountDownLatch release = cleanup.occupy(e);
        e.shutdown();
        long start = System.nanoTime();
        assertFalse(e.awaitTermination(100, MILLISECONDS));
        assertTrue(millisSince(start) >= 90, "awaitTermination returned false before its timeout");
        release.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        assertTrue(e.awaitTermination(0, MILLISECONDS));
        assertTrue(e.isTerminated());
    }

    @ForEachConfiguration
    void awaitTerminationWithATimeoutAlreadyPastAnswersAtOnce(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        for (PastTimeout t : PastTimeout.values()) {
            assertFalse(assertTimeoutPreemptively(Duration.ofSeconds(TestSupport.TIMEOUT_SECONDS),
                    () -> e.awaitTermination(t.timeout, t.unit), t.toString()), t + ": not shut down, not terminated");
        }
        // Nothing is waited for, so nothing is interrupted: false, and the caller's interrupt status stays set.
        Thread.currentThread().interrupt();
        try {
            assertFalse(e.awaitTermination(0, SECONDS));
            assertTrue(Thread.currentThread().isInterrupted(), "the interrupt status was cleared");
        } finally {
            Thread.interrupted();
        }
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        for (PastTimeout t : PastTimeout.values()) {
            assertTrue(e.awaitTermination(t.timeout, t.unit), t + ": terminated");
        }
    }

    @ForEachConfiguration
    void isTerminatedIsFalseWhileATaskRuns(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.gate();
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean finished = new AtomicBoolean();
        e.execute(() -> {
            started.countDown();
            TestSupport.blockQuietly(release);
            sleep(20);
            finished.set(true);
        });
        await(started, "task start");
        e.shutdown();
        for (int i = 0; i < 20; i++) {
            assertFalse(e.isTerminated(), "terminated while a task runs");
            Thread.sleep(1);
        }
        release.countDown();
        while (!e.isTerminated()) {
            assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
        }
        assertTrue(finished.get(), "isTerminated() became true before the running task finished");
    }

    @ForEachConfiguration
    void awaitTerminationBlocksWithoutSpinning(Config config) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        assumeTrue(mx.isCurrentThreadCpuTimeSupported(), "thread CPU time not measurable here");
        ScheduledExecutorService e = create(config);
        CountDownLatch release = cleanup.occupy(e);
        e.shutdown();
        long cpuBefore = mx.getCurrentThreadCpuTime();
        long start = System.nanoTime();
        assertFalse(e.awaitTermination(500, MILLISECONDS));
        long wall = millisSince(start);
        long cpuMillis = TimeUnit.NANOSECONDS.toMillis(mx.getCurrentThreadCpuTime() - cpuBefore);
        assertTrue(wall >= 450, "awaitTermination returned after " + wall + " ms");
        assertTrue(cpuMillis < 100, "awaitTermination used " + cpuMillis + " ms of CPU in " + wall + " ms");
        release.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, SECONDS));
    }

    @ForEachConfiguration
    void closeWaitsForRunningAndQueuedTasks(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        assumeTrue(e instanceof AutoCloseable, "ExecutorService.close() needs JDK 19 or later");
        AtomicInteger done = new AtomicInteger();
        AtomicBoolean firstFinished = new AtomicBoolean();
        CountDownLatch started = new CountDownLatch(1);
        e.execute(new Seq(LANE, () -> {
            started.countDown();
            sleep(300);
            done.incrementAndGet();
            firstFinished.set(true);
        }));
        for (int i = 0; i < 5; i++) {
            e.execute(new Seq(LANE, done::incrementAndGet));
        }
        await(started, "task start");
        ((AutoCloseable) e).close();
        assertTrue(firstFinished.get(), "close() returned while a task was still running");
        assertEquals(6, done.get(), "close() returned before every accepted task ran");
        assertTrue(e.isShutdown());
        assertTrue(e.isTerminated());
        ((AutoCloseable) e).close(); // idempotent
    }

    @ForEachConfiguration
    void closeAfterShutdownNowReturns(Config config) throws Exception {
        ScheduledExecutorService e = create(config);
        assumeTrue(e instanceof AutoCloseable, "ExecutorService.close() needs JDK 19 or later");
        cleanup.occupy(e);
        e.shutdownNow();
        ((AutoCloseable) e).close();
        assertTrue(e.isTerminated());
    }
}
