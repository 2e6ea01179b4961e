package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.block;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.Seq;
import io.github.gatlingexecutor.TestSupport.SeqCallable;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a caller on JDK 19 and later reaches through this executor's types, beyond the JDK 17 contract: a future's
 * {@code state()}, {@code resultNow()} and {@code exceptionNow()} on every kind of future the executor hands out,
 * {@code ExecutorService.close()}, {@code CompletableFuture}'s async methods and {@code delayedExecutor} over it, a
 * virtual-thread factory (JDK 21), and {@code ScheduledFuture} ordering against the JDK's own. Each scenario runs on a
 * {@link GatlingExecutor} and on a {@link ScheduledThreadPoolExecutor} side by side, and what a caller sees must be the
 * same, down to {@code IllegalStateException}'s message. The tests compile for JDK 17: the newer methods are called
 * by reflection, and the tests are skipped on a JDK that lacks them.
 *
 * <p>The JDK executor has one thread, and every task a scenario needs held back is a {@link SequentialRunnable} of
 * one context: the pool's one thread and the context's lane then hold tasks back alike.
 */
class ContractFutureJdk19Test {

    private static final Object LANE = "jdk19-lane";

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();

    // ---- the JDK 19 methods, by reflection ------------------------------------------------------------------

    private static void requireJdk19() {
        assumeTrue(Runtime.version().feature() >= 19, "Future.state() and ExecutorService.close() need JDK 19");
    }

    /** {@code future.name()}, rethrowing what the method threw. */
    private static Object call(Future<?> future, String name) throws Throwable {
        try {
            return Future.class.getMethod(name).invoke(future);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** {@code Future.state()}'s name: RUNNING, SUCCESS, FAILED or CANCELLED. */
    private static String state(Future<?> future) {
        try {
            return String.valueOf(call(future, "state"));
        } catch (Throwable t) {
            throw new AssertionError("state() threw", t);
        }
    }

    /**
     * What a caller learns of {@code future} without waiting: its state, what {@code resultNow()} and
     * {@code exceptionNow()} return or throw, {@code isDone()} and {@code isCancelled()}.
     */
    static String outcome(Future<?> future) {
        String result;
        try {
            result = "=" + call(future, "resultNow");
        } catch (Throwable t) {
            result = " threw " + describe(t);
        }
        String exception;
        try {
            exception = "=" + describe((Throwable) call(future, "exceptionNow"));
        } catch (Throwable t) {
            exception = " threw " + describe(t);
        }
        return state(future) + ", resultNow" + result + ", exceptionNow" + exception + ", done=" + future.isDone()
                + ", cancelled=" + future.isCancelled();
    }

    private static String describe(Throwable t) {
        return t.getClass().getName() + "(" + t.getMessage() + ")";
    }

    /** The same calls on the JDK's executor and on ours, futures named in order, and what a caller sees of each. */
    interface Scenario {
        Map<String, Future<?>> run(ScheduledExecutorService e) throws Exception;
    }

    /**
     * Runs {@code scenario} on a one-thread {@link ScheduledThreadPoolExecutor} and on a GatlingExecutor, made by
     * {@code factory} (null: each one's own), and checks that every future it names ends up the same on both.
     */
    private void assertSameAsJdk(ThreadFactory factory, Scenario scenario) throws Exception {
        requireJdk19();
        ScheduledThreadPoolExecutor jdk = cleanup.track(factory == null ? new ScheduledThreadPoolExecutor(1)
                : new ScheduledThreadPoolExecutor(1, factory));
        GatlingExecutor.Builder b = gatling("jdk19").coreThreads(2);
        GatlingExecutor ours = cleanup.track((factory == null ? b : b.threadFactory(factory)).build());
        Map<String, String> expected = outcomes(scenario.run(jdk));
        jdk.shutdownNow(); // tasks a scenario left delayed or held would keep the executor for the cleanup's wait
        Map<String, String> actual = outcomes(scenario.run(ours));
        ours.shutdownNow();
        assertEquals(expected.toString().replace("), ", "),\n"), actual.toString().replace("), ", "),\n"),
                "futures of a GatlingExecutor against a ScheduledThreadPoolExecutor's");
    }

    private static Map<String, String> outcomes(Map<String, Future<?>> futures) {
        Map<String, String> out = new LinkedHashMap<>();
        futures.forEach((name, f) -> out.put(name, outcome(f)));
        return out;
    }

    /** A task of {@link #LANE} that returns once {@code gate} opens, or throws its interrupt. */
    private static SeqCallable<String> blocker(CountDownLatch started, CountDownLatch gate) {
        return new SeqCallable<>(LANE, () -> {
            started.countDown();
            block(gate);
            return "released";
        });
    }

    /** Waits until {@code future} is done, whatever its outcome. */
    private static void settle(Future<?> future) throws Exception {
        try {
            get(future);
        } catch (ExecutionException | CancellationException expected) {
            // the outcome is what the scenario compares
        }
    }

    // ---- Future.state(), resultNow(), exceptionNow() ------------------------------------------------------------

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void completedFuturesOfEveryKindAnswerAsTheJdksDo(String threads) throws Exception {
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            f.put("submit(Callable)", e.submit(() -> 42));
            f.put("submit(Runnable)", e.submit(() -> { }));
            f.put("submit(Runnable, result)", e.submit(() -> { }, "given"));
            f.put("submit(sequential Runnable)", e.submit(new Seq(LANE, () -> { })));
            f.put("submit(sequential Callable)", e.submit((Callable<String>) new SeqCallable<>(LANE, () -> "s")));
            f.put("submit(coalescing Runnable)", e.submit(new Coal("c", () -> { })));
            f.put("schedule(Runnable)", e.schedule(() -> { }, 1, TimeUnit.MILLISECONDS));
            f.put("schedule(Callable)", e.schedule(() -> "late", 1, TimeUnit.MILLISECONDS));
            f.put("schedule(sequential Runnable, 0)", e.schedule(new Seq(LANE, () -> { }), 0, TimeUnit.SECONDS));
            f.put("schedule(sequential Callable)",
                    e.schedule((Callable<String>) new SeqCallable<>(LANE, () -> "seq"), 2, TimeUnit.MILLISECONDS));
            f.put("schedule(coalescing Callable)", e.schedule(
                    (Callable<String>) new TestSupport.CoalCallable<>("c2", () -> "late"), 1, TimeUnit.MILLISECONDS));
            List<Future<Integer>> all = e.invokeAll(Arrays.<Callable<Integer>>asList(() -> 1,
                    new SeqCallable<>(LANE, () -> 2), new TestSupport.CoalCallable<>("c3", () -> 3)));
            f.put("invokeAll[0]", all.get(0));
            f.put("invokeAll[1], sequential", all.get(1));
            f.put("invokeAll[2], coalescing", all.get(2));
            for (Future<?> each : f.values()) {
                get(each);
            }
            return f;
        });
    }

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void futuresOfTasksThatThrewAnswerAsTheJdksDo(String threads) throws Exception {
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            f.put("submit(Callable) threw", e.submit(() -> {
                throw new IOException("checked");
            }));
            f.put("submit(Runnable) threw an Error", e.submit((Runnable) () -> {
                throw new AssertionError("an error");
            }));
            f.put("submit(sequential Callable) threw", e.submit((Callable<String>) new SeqCallable<String>(LANE, () -> {
                throw new IllegalStateException("in a lane");
            })));
            f.put("submit(coalescing Runnable) threw", e.submit(new Coal("c", () -> {
                throw new UnsupportedOperationException("coalescing");
            })));
            f.put("schedule(Callable) threw", e.schedule(() -> {
                throw new IOException("delayed");
            }, 1, TimeUnit.MILLISECONDS));
            AtomicInteger rateRuns = new AtomicInteger();
            f.put("scheduleAtFixedRate threw on its third run", e.scheduleAtFixedRate(() -> {
                if (rateRuns.incrementAndGet() == 3) {
                    throw new IllegalArgumentException("third run");
                }
            }, 0, 1, TimeUnit.MILLISECONDS));
            AtomicInteger delayRuns = new AtomicInteger();
            f.put("scheduleWithFixedDelay of a sequential task threw on its second run",
                    e.scheduleWithFixedDelay(new Seq(LANE, () -> {
                        if (delayRuns.incrementAndGet() == 2) {
                            throw new IllegalStateException("second run");
                        }
                    }), 0, 1, TimeUnit.MILLISECONDS));
            AtomicInteger coalescingRuns = new AtomicInteger();
            f.put("scheduleAtFixedRate of a coalescing task threw on its second run",
                    e.scheduleAtFixedRate(new Coal("c2", () -> {
                        if (coalescingRuns.incrementAndGet() == 2) {
                            throw new IllegalStateException("coalescing, second run");
                        }
                    }), 0, 1, TimeUnit.MILLISECONDS));
            List<Future<Object>> all = e.invokeAll(Arrays.asList(() -> "fine", () -> {
                throw new IOException("invoked");
            }));
            f.put("invokeAll[0]", all.get(0));
            f.put("invokeAll[1] threw", all.get(1));
            for (Future<?> each : f.values()) {
                settle(each);
            }
            return f;
        });
    }

    /**
     * A running task's future answers {@code state()} at once, RUNNING, as a queued one's and a delayed one's do; and
     * neither {@code resultNow()} nor {@code exceptionNow()} waits. The tasks are held until every answer is in, so a
     * call that waited for the task would wait for good (the preemptive timeout ends it).
     */
    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void pendingFuturesAnswerRunningAtOnceAsTheJdksDo(String threads) throws Exception {
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch firstRun = new CountDownLatch(1);
            f.put("periodic, between runs", e.scheduleAtFixedRate(new Seq(LANE, firstRun::countDown), 0, 1,
                    TimeUnit.HOURS));
            await(firstRun, "the periodic task's first run");
            CountDownLatch started = new CountDownLatch(1);
            f.put("running", e.submit((Callable<String>) blocker(started, cleanup.gate())));
            await(started, "the task to run");
            f.put("queued", e.submit(new Seq(LANE, () -> { })));
            f.put("queued callable", e.submit((Callable<String>) new SeqCallable<>(LANE, () -> "q")));
            f.put("delayed", e.schedule(() -> { }, 1, TimeUnit.HOURS));
            f.put("delayed, in a context", e.schedule(new Seq(LANE, () -> { }), 1, TimeUnit.HOURS));
            f.put("periodic, not yet run", e.scheduleWithFixedDelay(() -> { }, 1, 1, TimeUnit.HOURS));
            Map<String, String> seen = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> outcomes(f),
                    "state(), resultNow() or exceptionNow() waited for a task");
            for (Map.Entry<String, String> each : seen.entrySet()) {
                assertTrue(each.getValue().startsWith("RUNNING,"), each.getKey() + ": " + each.getValue());
            }
            return f;
        });
    }

    @Test
    void cancelledFuturesOfEveryKindAnswerAsTheJdksDo() throws Exception {
        assertSameAsJdk(null, e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch periodicRuns = new CountDownLatch(2);
            ScheduledFuture<?> periodic = e.scheduleAtFixedRate(new Seq(LANE, periodicRuns::countDown), 0, 1,
                    TimeUnit.MILLISECONDS);
            await(periodicRuns, "two runs of the periodic task");
            periodic.cancel(false);
            f.put("periodic, cancelled after two runs", periodic);
            CountDownLatch coalescingRuns = new CountDownLatch(2);
            ScheduledFuture<?> coalescing = e.scheduleWithFixedDelay(new Coal("c2", coalescingRuns::countDown), 0, 1,
                    TimeUnit.MILLISECONDS);
            await(coalescingRuns, "two runs of the periodic coalescing task");
            coalescing.cancel(true);
            f.put("periodic coalescing, cancelled after two runs", coalescing);
            CountDownLatch started = new CountDownLatch(1);
            Future<String> running = e.submit((Callable<String>) blocker(started, cleanup.gate()));
            f.put("running, cancelled with an interrupt", running);
            await(started, "the task to run");
            Future<?> queued = e.submit(new Seq(LANE, () -> { }));
            f.put("queued, cancelled", queued);
            ScheduledFuture<?> delayed = e.schedule(new Seq(LANE, () -> { }), 1, TimeUnit.HOURS);
            f.put("delayed, cancelled", delayed);
            List<Future<String>> timedOut = e.invokeAll(Arrays.<Callable<String>>asList(
                    new SeqCallable<>(LANE, () -> "late"), () -> "unordered"), 20, TimeUnit.MILLISECONDS);
            f.put("timed invokeAll, queued behind the lane at its timeout", timedOut.get(0));
            queued.cancel(false);
            delayed.cancel(true);
            running.cancel(true);
            return f;
        });
    }

    /**
     * {@code shutdownNow()} returns the futures of tasks that never started, neither done nor cancelled, and
     * interrupts the running one, whose future then holds the interrupt; {@code shutdown()} cancels a periodic task
     * that waits for its next run, lets one that runs finish that run (then cancels it), and runs a delayed one-shot
     * task when due.
     */
    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void futuresOfAnExecutorShutDownAnswerAsTheJdksDo(String threads) throws Exception {
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch firstRun = new CountDownLatch(1);
            ScheduledFuture<?> ranOnce = e.scheduleAtFixedRate(new Seq(LANE, firstRun::countDown), 0, 1,
                    TimeUnit.HOURS);
            await(firstRun, "the periodic task's first run");
            CountDownLatch started = new CountDownLatch(1);
            Future<String> running = e.submit((Callable<String>) blocker(started, cleanup.gate()));
            await(started, "the task to run");
            f.put("queued", e.submit(new Seq(LANE, () -> { })));
            f.put("queued callable", e.submit((Callable<String>) new SeqCallable<>(LANE, () -> "q")));
            f.put("delayed", e.schedule(() -> "d", 1, TimeUnit.HOURS));
            f.put("delayed, in a context", e.schedule(new Seq(LANE, () -> { }), 1, TimeUnit.HOURS));
            f.put("periodic, not yet run", e.scheduleAtFixedRate(() -> { }, 1, 1, TimeUnit.HOURS));
            f.put("periodic, between runs", ranOnce);
            List<Runnable> returned = e.shutdownNow();
            Map<Runnable, Boolean> set = new IdentityHashMap<>();
            returned.forEach(r -> set.put(r, true));
            for (Map.Entry<String, Future<?>> each : f.entrySet()) {
                assertTrue(set.containsKey(each.getValue()), each.getKey() + " not returned by shutdownNow");
            }
            assertEquals(f.size(), returned.size(), "shutdownNow returned " + returned);
            assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
            f.put("running, interrupted by shutdownNow", running);
            return f;
        });
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch gate = cleanup.gate();
            f.put("periodic, running at shutdown", e.scheduleAtFixedRate(new Seq(LANE, () -> {
                started.countDown();
                TestSupport.blockQuietly(gate);
            }), 0, 1, TimeUnit.HOURS));
            await(started, "the periodic task to run");
            f.put("delayed one-shot, in a context", e.schedule(new Seq(LANE, () -> { }), 5, TimeUnit.MILLISECONDS));
            f.put("delayed one-shot", e.schedule(() -> "due", 5, TimeUnit.MILLISECONDS));
            ScheduledFuture<?> waiting = e.scheduleWithFixedDelay(() -> { }, 1, 1, TimeUnit.HOURS);
            f.put("periodic, waiting at shutdown", waiting);
            e.shutdown();
            assertEquals("CANCELLED", state(waiting), "a periodic task waiting for its run, just after shutdown()");
            gate.countDown();
            assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
            return f;
        });
    }

    /** A coalescing future replaced before it started is cancelled (SPEC 3): it answers as a cancelled FutureTask. */
    @Test
    void aReplacedCoalescingFutureAnswersAsACancelledFutureTask() throws Exception {
        requireJdk19();
        GatlingExecutor e = cleanup.track(gatling("jdk19").coreThreads(1).build());
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Coal("c", blocker)));
        Future<?> replaced = e.submit(new Coal("c", () -> { }));
        Future<String> replacing = e.submit((Callable<String>) new TestSupport.CoalCallable<>("c", () -> "last"));
        FutureTask<Object> cancelled = new FutureTask<>(() -> null);
        cancelled.cancel(false);
        assertEquals(outcome(cancelled), outcome(replaced));
        gate.countDown();
        assertEquals("last", get(replacing));
        assertEquals("SUCCESS", state(replacing));
    }

    private static ThreadFactory threads(String kind) throws Exception {
        return kind.equals("virtual") ? TestSupport.virtualThreadFactory() : null;
    }

    // ---- ExecutorService.close() --------------------------------------------------------------------------------

    /**
     * Runs {@code scenario} with {@code close()} on both executors, and compares what the closing thread saw (its
     * interrupt status on return, termination) besides the futures.
     */
    private void assertCloseSameAsJdk(String threads, Scenario scenario) throws Exception {
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = scenario.run(e);
            assertTrue(e.isTerminated(), "terminated when close() returned");
            return f;
        });
    }

    private static void close(ScheduledExecutorService e) throws Exception {
        ((AutoCloseable) e).close();
    }

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void closeWaitsForRunningQueuedAndDelayedTasksAndStopsPeriodicOnesAsTheJdksDoes(String threads) throws Exception {
        assertCloseSameAsJdk(threads, e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch gate = cleanup.gate();
            f.put("running", e.submit((Callable<String>) blocker(started, gate)));
            await(started, "the task to run");
            f.put("queued", e.submit(new Seq(LANE, () -> { })));
            f.put("delayed", e.schedule(() -> "due", 50, TimeUnit.MILLISECONDS));
            f.put("periodic", e.scheduleAtFixedRate(() -> { }, 1, 1, TimeUnit.HOURS));
            Thread opener = new Thread(() -> {
                waitUntil("close() to shut down", e::isShutdown);
                gate.countDown();
            });
            opener.start();
            close(e);
            opener.join();
            assertFalse(Thread.currentThread().isInterrupted());
            return f;
        });
    }

    /**
     * A caller already interrupted: close() shuts down, its wait throws at once, so it calls shutdownNow (the
     * running task is interrupted, the queued one is dropped, never run nor completed), waits for termination, and
     * returns with the interrupt status set again.
     */
    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void closeByAnInterruptedCallerStopsTheTasksAndKeepsTheInterruptAsTheJdksDoes(String threads) throws Exception {
        assertCloseSameAsJdk(threads, e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch started = new CountDownLatch(1);
            f.put("running", e.submit((Callable<String>) blocker(started, cleanup.gate())));
            await(started, "the task to run");
            f.put("queued", e.submit(new Seq(LANE, () -> { })));
            f.put("delayed", e.schedule(() -> "due", 1, TimeUnit.HOURS));
            // On a thread of the timeout's, which it interrupts and abandons if close() waits for good.
            boolean interruptedOnReturn = assertTimeoutPreemptively(Duration.ofSeconds(TestSupport.TIMEOUT_SECONDS),
                    () -> {
                        Thread.currentThread().interrupt();
                        close(e);
                        return Thread.interrupted();
                    }, "close() by an interrupted caller did not stop the tasks");
            assertTrue(interruptedOnReturn, "close() cleared the caller's interrupt");
            return f;
        });
    }

    /** As above, with the interrupt coming while close() waits, on a thread of its own. */
    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void closeInterruptedWhileItWaitsStopsTheTasksAndKeepsTheInterruptAsTheJdksDoes(String threads) throws Exception {
        assertCloseSameAsJdk(threads, e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch started = new CountDownLatch(1);
            f.put("running", e.submit((Callable<String>) blocker(started, cleanup.gate())));
            await(started, "the task to run");
            f.put("delayed, in a context", e.schedule(new Seq(LANE, () -> { }), 1, TimeUnit.HOURS));
            AtomicReference<Object> closed = new AtomicReference<>();
            Thread closer = new Thread(() -> {
                try {
                    close(e);
                    closed.set(Thread.currentThread().isInterrupted() ? "interrupted" : "not interrupted");
                } catch (Throwable t) {
                    closed.set(t);
                }
            });
            closer.start();
            waitUntil("close() to wait", () -> e.isShutdown() && (closer.getState() == Thread.State.WAITING
                    || closer.getState() == Thread.State.TIMED_WAITING));
            closer.interrupt();
            closer.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
            assertFalse(closer.isAlive(), "close() did not return after an interrupt");
            assertEquals("interrupted", closed.get(), "close() returned with the interrupt status cleared");
            return f;
        });
    }

    /**
     * Once terminated, close() does nothing, whatever the caller's interrupt status (which it leaves set), as often
     * as it is called; and two threads closing at once both return only once the executor has terminated.
     */
    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void closeIsIdempotentAfterTerminationAndConcurrentClosesBothWaitAsTheJdksDo(String threads) throws Exception {
        assertCloseSameAsJdk(threads, e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch gate = cleanup.gate();
            f.put("running", e.submit((Callable<String>) blocker(started, gate)));
            await(started, "the task to run");
            List<Thread> closers = new ArrayList<>();
            List<Object> seen = Collections.synchronizedList(new ArrayList<>());
            for (int i = 0; i < 2; i++) {
                Thread t = new Thread(() -> {
                    try {
                        close(e);
                        seen.add(e.isTerminated());
                    } catch (Throwable failure) {
                        seen.add(failure);
                    }
                });
                closers.add(t);
                t.start();
            }
            for (Thread t : closers) {
                waitUntil("both closers to wait", () -> t.getState() == Thread.State.WAITING
                        || t.getState() == Thread.State.TIMED_WAITING);
            }
            assertTrue(seen.isEmpty(), "close() returned while a task ran: " + seen);
            gate.countDown();
            for (Thread t : closers) {
                t.join(TimeUnit.SECONDS.toMillis(TestSupport.TIMEOUT_SECONDS));
            }
            assertEquals(List.of(true, true), seen);
            Thread.currentThread().interrupt();
            try {
                long start = System.nanoTime();
                close(e);
                close(e);
                assertTrue(TestSupport.millisSince(start) < 1_000, "close() after termination waited");
                assertTrue(Thread.currentThread().isInterrupted(), "close() after termination cleared the interrupt");
            } finally {
                Thread.interrupted();
            }
            return f;
        });
    }

    // ---- CompletableFuture over the executor ---------------------------------------------------------------------

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(strings = {"platform", "virtual"})
    void completableFuturesRunOnTheExecutorAndItsLanesAsOnTheJdks(String threads) throws Exception {
        assertSameAsJdk(threads(threads), e -> {
            Map<String, Future<?>> f = new LinkedHashMap<>();
            f.put("supplyAsync", CompletableFuture.supplyAsync(() -> "supplied", e));
            f.put("runAsync", CompletableFuture.runAsync(() -> { }, e));
            Executor lane = e instanceof ContextExecutor ? ((ContextExecutor) e).sequential(LANE) : e;
            f.put("supplyAsync on a lane, then thenApplyAsync on it",
                    CompletableFuture.supplyAsync(() -> 1, lane).thenApplyAsync(i -> i + 1, lane));
            long start = System.nanoTime();
            CompletableFuture<Long> delayed = CompletableFuture.supplyAsync(() -> TestSupport.millisSince(start),
                    CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS, e));
            assertTrue(get(delayed) >= 50, "delayedExecutor ran its task before its delay");
            f.put("delayedExecutor", delayed.thenApply(ms -> "ran after its delay"));
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch gate = cleanup.gate();
            CompletableFuture<String> held = CompletableFuture.supplyAsync(() -> {
                started.countDown();
                TestSupport.blockQuietly(gate);
                return "too late";
            }, lane);
            await(started, "the held task to run");
            CompletableFuture<String> timedOut = held.thenApply(s -> s).orTimeout(10, TimeUnit.MILLISECONDS);
            CompletableFuture<String> defaulted = held.thenApply(s -> s).completeOnTimeout("default", 10,
                    TimeUnit.MILLISECONDS);
            settle(timedOut);
            settle(defaulted);
            f.put("orTimeout", timedOut);
            f.put("completeOnTimeout", defaulted);
            gate.countDown();
            for (Future<?> each : f.values()) {
                settle(each);
            }
            e.shutdown();
            assertThrows(RejectedExecutionException.class, () -> CompletableFuture.runAsync(() -> { }, e));
            return f;
        });
    }

    // ---- ScheduledFuture ordering --------------------------------------------------------------------------------

    /**
     * {@code compareTo} orders scheduled futures by their delay, ours against the JDK's and against any other
     * {@link Delayed}, both ways and without a {@code ClassCastException}, as the JDK's futures do; {@code getDelay}
     * converts units as theirs do.
     */
    @Test
    void scheduledFuturesCompareByDelayWithTheJdksAndForeignDelayedOnes() throws Exception {
        ScheduledThreadPoolExecutor jdk = cleanup.track(new ScheduledThreadPoolExecutor(1));
        GatlingExecutor ours = cleanup.track(gatling("jdk19").coreThreads(1).build());
        Delayed foreign = new Delayed() {
            @Override
            public long getDelay(TimeUnit unit) {
                return unit.convert(50, TimeUnit.MINUTES);
            }

            @Override
            public int compareTo(Delayed o) {
                return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
            }

            @Override
            public String toString() {
                return "a foreign Delayed in 50 min";
            }
        };
        ScheduledFuture<?> ours10 = ours.schedule(() -> { }, 10, TimeUnit.MINUTES);
        ScheduledFuture<?> jdk20 = jdk.schedule(() -> { }, 20, TimeUnit.MINUTES);
        ScheduledFuture<?> ours30 = ours.schedule(new Seq(LANE, () -> { }), 30, TimeUnit.MINUTES);
        ScheduledFuture<?> jdk40 = jdk.scheduleAtFixedRate(() -> { }, 40, 1, TimeUnit.MINUTES);
        ScheduledFuture<?> ours60 = ours.scheduleWithFixedDelay(() -> { }, 60, 1, TimeUnit.MINUTES);
        ScheduledFuture<?> jdk70 = jdk.schedule(() -> { }, 70, TimeUnit.MINUTES);
        List<Delayed> inOrder = List.of(ours10, jdk20, ours30, jdk40, foreign, ours60, jdk70);
        for (int i = 0; i < inOrder.size(); i++) {
            for (int j = 0; j < inOrder.size(); j++) {
                Delayed a = inOrder.get(i);
                Delayed b = inOrder.get(j);
                assertEquals(Integer.signum(Integer.compare(i, j)), Integer.signum(a.compareTo(b)),
                        a + " compared to " + b);
            }
        }
        List<Delayed> shuffled = new ArrayList<>(inOrder);
        Collections.shuffle(shuffled, new Random(19));
        Collections.sort(shuffled);
        assertEquals(inOrder, shuffled);
        for (ScheduledFuture<?> mine : List.of(ours10, ours30, ours60)) {
            long minutes = mine.getDelay(TimeUnit.MINUTES);
            long nanos = mine.getDelay(TimeUnit.NANOSECONDS);
            assertTrue(Math.abs(TimeUnit.NANOSECONDS.toMinutes(nanos) - minutes) <= 1, mine + ": " + nanos + " ns, "
                    + minutes + " min");
        }
        assertEquals(9, ours10.getDelay(TimeUnit.MINUTES), "a delay of 10 min, read at once");
        ours10.cancel(false);
        jdk20.cancel(false);
        assertEquals(9, ours10.getDelay(TimeUnit.MINUTES), "a cancelled future keeps its delay, as the JDK's does");
        assertEquals(19, jdk20.getDelay(TimeUnit.MINUTES));
        assertEquals(-1, ours10.compareTo(jdk20), "cancelled futures still compare by delay");
        assertEquals(0, ours10.compareTo(ours10));
        jdk.shutdownNow();
        ours.shutdownNow();
    }
}
