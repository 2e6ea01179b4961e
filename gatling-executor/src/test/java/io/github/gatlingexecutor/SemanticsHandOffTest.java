package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.millisSince;
import static io.github.gatlingexecutor.TestSupport.submitCallable;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.gatlingexecutor.TestSupport.Seq;
import io.github.gatlingexecutor.TestSupport.SeqCallable;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SPEC semantics 8 (no CPU while idle), and how {@code submit} futures behave on the pool: in parallel, nested
 * waits across contexts, cancellation reaching the queued task, and a task waiting for its own context.
 */
class SemanticsHandOffTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    @Test
    void anIdleExecutorUsesNoCpu() {
        assumeTrue(ManagementFactory.getThreadMXBean().isThreadCpuTimeSupported(), "no thread CPU time here");
        GatlingExecutor e = cleanup.track(gatling("idle").coreThreads(2).checkPeriod(Duration.ofMillis(50)).build());
        CountDownLatch done = new CountDownLatch(20_000);
        for (int i = 0; i < 20_000; i++) {
            if (i % 2 == 0) {
                e.execute(new Seq(i % 50, done::countDown));
            } else {
                e.execute(done::countDown);
            }
        }
        await(done, "work before going idle");
        e.schedule(() -> { }, 1, TimeUnit.HOURS); // a pending timer must not keep anything spinning either
        String prefix = e.name() + "-";
        // Any spin-then-park phase over: every thread of the executor parked. A fixed pause here measured a phase that
        // ran long on a loaded machine; waiting for the state cannot hide a thread that keeps spinning (it never parks).
        waitUntil("every thread of the executor parked", () -> TestSupport.liveThreads(prefix).stream()
                .allMatch(t -> t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING),
                () -> TestSupport.liveThreads(prefix).toString(), 5_000);
        long before = TestSupport.cpuNanosOfThreads(prefix);
        TestSupport.sleep(1000);
        long usedMillis = TimeUnit.NANOSECONDS.toMillis(TestSupport.cpuNanosOfThreads(prefix) - before);
        assertTrue(usedMillis < 60, "an idle executor's threads used " + usedMillis + " ms of CPU in 1 s: "
                + TestSupport.liveThreads(prefix));
    }

    /**
     * A worker in a long wait with nothing queued: nothing is stamped, so the checker has no clock to keep fresh. It
     * ticked every 4 ms all the same (about 23 ms of CPU a second, found by an outside audit); it now sleeps until
     * its next look, or until a submit needs the clock.
     */
    @Test
    void aTaskThatWaitsLongCostsTheCheckerAlmostNoCpu() {
        assumeTrue(ManagementFactory.getThreadMXBean().isThreadCpuTimeSupported(), "no thread CPU time here");
        GatlingExecutor e = cleanup.track(gatling("long-wait").coreThreads(1).build());
        CountDownLatch gate = cleanup.gate();
        CountDownLatch waiting = new CountDownLatch(1);
        e.execute(() -> {
            waiting.countDown();
            TestSupport.blockQuietly(gate);
        });
        await(waiting, "the waiting task");
        TestSupport.awaitTwoCheckerLooks(e, "the checker's first look at the waiting task");
        String checker = e.name() + "-checker";
        long before = TestSupport.cpuNanosOfThreads(checker);
        TestSupport.sleep(1000);
        long usedMicros = TimeUnit.NANOSECONDS.toMicros(TestSupport.cpuNanosOfThreads(checker) - before);
        gate.countDown();
        assertTrue(usedMicros < 8_000, "the checker used " + usedMicros + " us of CPU in 1 s");
        // The flow resumes: a task submitted now is stamped from a fresh clock, and ages stay true.
        CountDownLatch ran = new CountDownLatch(1);
        e.execute(ran::countDown);
        await(ran, "a task after the wait");
    }

    @Test
    void submittedTasksRunInParallelOnThePool() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(4).build());
        // Each task waits for the other three: they all end only if four run at once, on four threads.
        CyclicBarrier allFour = new CyclicBarrier(4);
        List<Future<Integer>> futures = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            futures.add(e.submit(() -> allFour.await(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS)));
        }
        for (Future<Integer> f : futures) {
            get(f);
        }
    }

    @Test
    void nestedSubmitAndGetToAnotherContextDoesNotDeadlock() throws Exception {
        for (int core : new int[] {2, 1}) {
            GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(core)
                    .checkPeriod(Duration.ofMillis(50)).blockedThreshold(Duration.ofMillis(50)).build());
            Future<String> outer = submitCallable(e, new SeqCallable<>("outer", () -> {
                Future<String> inner = submitCallable(e, new SeqCallable<>("inner", () -> "inner"));
                Future<String> plain = e.submit(() -> "plain");
                return inner.get(10, TimeUnit.SECONDS) + "+" + plain.get(10, TimeUnit.SECONDS);
            }));
            assertEquals("inner+plain", get(outer), "core=" + core);
            List<java.util.concurrent.Callable<Integer>> calls = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                int v = i;
                calls.add(new SeqCallable<>("nested-" + i, () -> v));
            }
            Future<Integer> viaInvokeAll = e.submit(() -> {
                int sum = 0;
                for (Future<Integer> f : e.invokeAll(calls)) {
                    sum += f.get();
                }
                return sum;
            });
            assertEquals(6, get(viaInvokeAll), "core=" + core);
        }
    }

    @Test
    void cancellingAQueuedSubmitReachesTheTask() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(1).maxThreads(1).build());
        CountDownLatch gate = cleanup.occupy(e);
        AtomicBoolean plainRan = new AtomicBoolean();
        AtomicBoolean sequentialRan = new AtomicBoolean();
        Future<?> plain = e.submit(() -> plainRan.set(true));
        Future<?> sequential = e.submit(new Seq("cq", () -> sequentialRan.set(true)));
        CountDownLatch after = new CountDownLatch(2);
        e.execute(new Seq("cq", after::countDown));
        e.execute(after::countDown);
        assertTrue(plain.cancel(false));
        assertTrue(sequential.cancel(true));
        gate.countDown();
        await(after, "tasks after the cancelled ones");
        TestSupport.awaitQuiescent(e);
        assertFalse(plainRan.get(), "a cancelled queued plain task ran");
        assertFalse(sequentialRan.get(), "a cancelled queued sequential task ran");
    }

    /**
     * A task that submits to its own sequential context and waits for the result would wait for itself. The engine
     * makes that visible: {@code get()} throws {@link IllegalStateException} at once instead of hanging; a timed
     * {@code get} keeps the JDK contract and times out. The submitted task still runs after the waiting one returns.
     */
    @Test
    void waitingForATaskOfTheOwnSequentialContextFailsFastInsteadOfHanging() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(2).build());
        List<String> order = new ArrayList<>(); // plain list: guarded by the lane's order
        AtomicReference<Throwable> untimed = new AtomicReference<>();
        AtomicReference<Throwable> timed = new AtomicReference<>();
        AtomicReference<Future<?>> innerRef = new AtomicReference<>();
        long[] waited = new long[1];
        Future<?> outer = e.submit(new Seq("self", () -> {
            order.add("outer");
            Future<?> inner = e.submit(new Seq("self", () -> order.add("inner")));
            innerRef.set(inner);
            long start = System.nanoTime();
            try {
                inner.get();
            } catch (Throwable t) {
                untimed.set(t);
            }
            waited[0] = millisSince(start);
            try {
                inner.get(200, TimeUnit.MILLISECONDS); // a bounded wait cannot hang: it times out, per the contract
            } catch (Throwable t) {
                timed.set(t);
            }
        }));
        get(outer);
        assertTrue(untimed.get() instanceof IllegalStateException,
                "get() on a task queued behind the caller in its own context: " + untimed.get());
        assertTrue(timed.get() instanceof TimeoutException,
                "get(timeout) on a task queued behind the caller in its own context: " + timed.get());
        assertTrue(waited[0] < 1000, "the self-wait was not detected at once: " + waited[0] + " ms");
        get(innerRef.get());
        assertEquals(List.of("outer", "inner"), order);
    }

    /**
     * The same for an untimed {@code invokeAny} whose every task is of the caller's own sequential context: none can
     * start before the caller returns, so it fails fast, before submitting anything (it used to wait for good, while
     * {@code invokeAll}, through {@code get()}, already failed). With one task elsewhere it waits for that one.
     */
    @Test
    void invokeAnyOfTasksQueuedBehindTheCallerFailsFastAndSubmitsNothing() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(2).build());
        AtomicReference<Throwable> own = new AtomicReference<>();
        AtomicReference<String> mixed = new AtomicReference<>();
        Future<?> outer = e.submit(new Seq("self", () -> {
            try {
                e.invokeAny(List.of(new SeqCallable<>("self", () -> "a"), new SeqCallable<>("self", () -> "b")));
            } catch (Throwable t) {
                own.set(t);
            }
            try {
                mixed.set(e.invokeAny(List.of(new SeqCallable<>("self", () -> "mine"),
                        new SeqCallable<>("other", () -> "other"))));
            } catch (Throwable t) {
                mixed.set(t.toString());
            }
        }));
        get(outer);
        assertTrue(own.get() instanceof IllegalStateException, "invokeAny of own-context tasks: " + own.get());
        assertEquals("other", mixed.get());
        ExecutorStatistics s = TestSupport.awaitQuiescent(e);
        assertEquals(3, s.submitted(), "the refused invokeAny submitted nothing: " + s);
    }

    /**
     * An untimed {@code invokeAny} of a task of the caller's own context and one elsewhere that fails: once that one
     * has failed, only the own-context task is left, and it starts only after the caller returns. It waited for good;
     * it fails as the all-own-context call does, and the task left behind is cancelled, never run.
     */
    @Test
    @Timeout(30)
    void invokeAnyWhoseOtherTasksFailedFailsInsteadOfWaitingForItself() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(2).build());
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean ownRan = new AtomicBoolean();
        Future<?> outer = e.submit(new Seq("self", () -> {
            try {
                e.invokeAny(List.of(new SeqCallable<>("self", () -> {
                    ownRan.set(true);
                    return "mine";
                }), new SeqCallable<String>("other", () -> {
                    throw new IllegalArgumentException("fails");
                })));
            } catch (Throwable t) {
                thrown.set(t);
            }
        }));
        get(outer);
        assertTrue(thrown.get() instanceof IllegalStateException, "left with its own context: " + thrown.get());
        ExecutorStatistics s = TestSupport.awaitQuiescent(e);
        assertFalse(ownRan.get(), "the cancelled own-context task ran");
        assertEquals(3, s.submitted(), s.toString());
    }

    /** A context whose {@code equals} is slow, so that a look over an invokeAny's futures takes milliseconds. */
    private static final class SlowEquals {
        @Override
        public boolean equals(Object o) {
            TestSupport.sleep(5);
            return o == this;
        }

        @Override
        public int hashCode() {
            return 1;
        }
    }

    /**
     * The look for an invokeAny left with only tasks of the caller's own context passed over a future it found done
     * (it took it for one already taken), and threw while that future, the other context's task that had just
     * succeeded, was the answer: every time with this context, whose slow {@code equals} leaves the other task the
     * time to end during the look (about one call in 50,000 with a plain one).
     */
    @Test
    @Timeout(30)
    void invokeAnyReturnsATaskThatEndsWhileItLooksForTasksOfItsOwnContext() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(2).build());
        Object self = new SlowEquals();
        AtomicReference<Object> answer = new AtomicReference<>();
        Future<?> outer = e.submit(new Seq(self, () -> {
            try {
                answer.set(e.invokeAny(List.of(new SeqCallable<>(self, () -> "mine"),
                        new SeqCallable<>("other", () -> "other"))));
            } catch (Throwable t) {
                answer.set(t);
            }
        }));
        get(outer);
        assertEquals("other", answer.get());
    }

    @Test
    void waitingForAnotherContextFromASequentialTaskIsAllowed() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("handoff").coreThreads(2).build());
        Future<String> outer = submitCallable(e, new SeqCallable<>("me", () -> {
            // the sequential lane of another context, the coalescing lane of this one, a plain task: all fine
            Future<String> a = submitCallable(e, new SeqCallable<>("someone-else", () -> "a"));
            Future<String> b = submitCallable(e, new TestSupport.CoalCallable<>("me", () -> "b"));
            Future<String> c = e.submit(() -> "c");
            return a.get() + b.get() + c.get();
        }));
        assertEquals("abc", get(outer));
    }
}
