package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Shared helpers for the contract and semantics tests: task types with a context, bounded waits, thread inspection
 * and per-test cleanup of executors and gates.
 */
final class TestSupport {

    /** Upper bound for any wait on something that must happen; only reached when a test fails. */
    static final long TIMEOUT_SECONDS = 20;

    private static final AtomicInteger NAMES = new AtomicInteger();

    private TestSupport() {
    }

    /** A fresh executor name, so that thread-name checks of one test never see another test's threads. */
    static String uniqueName(String base) {
        return base + "x" + NAMES.incrementAndGet();
    }

    // ---- task types ------------------------------------------------------------------------------------------

    /** A plain runnable that carries a context; the subclasses give it its kind. */
    abstract static class ContextRunnable implements Runnable {
        final Object context;
        final Runnable body;

        ContextRunnable(Object context, Runnable body) {
            this.context = context;
            this.body = body;
        }

        public Object context() {
            return context;
        }

        @Override
        public void run() {
            body.run();
        }

        @Override
        public String toString() {
            return getClass().getSimpleName() + "(" + context + ")";
        }
    }

    /** A plain runnable that carries a sequential context. */
    static class Seq extends ContextRunnable implements SequentialRunnable {
        Seq(Object context, Runnable body) {
            super(context, body);
        }
    }

    /** A plain runnable that carries a coalescing context. */
    static class Coal extends ContextRunnable implements CoalescingRunnable {
        Coal(Object context, Runnable body) {
            super(context, body);
        }
    }

    /** A task that is both sequential and coalescing: it must be treated as sequential. */
    static final class Both implements SequentialRunnable, CoalescingRunnable {
        final Object context;
        final Runnable body;

        Both(Object context, Runnable body) {
            this.context = context;
            this.body = body;
        }

        @Override
        public Object context() {
            return context;
        }

        @Override
        public void run() {
            body.run();
        }
    }

    /** A callable with a context; its {@code run()} must never be used by an executor. */
    abstract static class ContextCallable<T> implements Callable<T>, Runnable {
        final Object context;
        final Callable<T> body;

        ContextCallable(Object context, Callable<T> body) {
            this.context = context;
            this.body = body;
        }

        public Object context() {
            return context;
        }

        @Override
        public T call() throws Exception {
            return body.call();
        }

        @Override
        public void run() {
            throw new AssertionError("run() of a Callable task was called instead of call()");
        }
    }

    /** A callable with a sequential context. */
    static final class SeqCallable<T> extends ContextCallable<T> implements SequentialRunnable {
        SeqCallable(Object context, Callable<T> body) {
            super(context, body);
        }
    }

    /** A callable with a coalescing context. */
    static final class CoalCallable<T> extends ContextCallable<T> implements CoalescingRunnable {
        CoalCallable(Object context, Callable<T> body) {
            super(context, body);
        }
    }

    /** {@code submit} of a task that is both a {@code Callable} and a {@code Runnable}, as a {@code Callable}. */
    static <T> Future<T> submitCallable(ExecutorService executor, Callable<T> task) {
        return executor.submit(task);
    }

    // ---- waiting ---------------------------------------------------------------------------------------------

    static void await(CountDownLatch latch, String what) {
        try {
            if (!latch.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                fail("timed out after " + TIMEOUT_SECONDS + " s waiting for " + what + " (count " + latch.getCount()
                        + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting for " + what, e);
        }
    }

    /** For blocking tasks: waits for a gate with the global timeout, lets an interrupt propagate. */
    static void block(CountDownLatch gate) throws InterruptedException {
        if (!gate.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException("a blocking task's gate was never opened");
        }
    }

    /**
     * For a thread factory: the checker's thread, held at its start until {@code gate} opens (an executor's checker
     * then makes no look, no start and no clock tick until the test lets it). A daemon, as the executor's own checker.
     */
    static Thread heldChecker(Runnable checker, CountDownLatch gate) {
        Thread t = new Thread(() -> {
            blockQuietly(gate);
            checker.run();
        }, "held-checker");
        t.setDaemon(true);
        return t;
    }

    /**
     * For a task that must outlive {@code shutdownNow}: waits for a gate through any number of interrupts, then
     * re-asserts the status. Bounded at twice the global timeout, so a test that fails while it waits says so itself,
     * not through this task ending first.
     */
    static void blockIgnoringInterrupts(CountDownLatch gate) {
        boolean interrupted = false;
        for (;;) {
            try {
                if (!gate.await(2 * TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("a blocking task's gate was never opened");
                }
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** For blocking tasks in a {@code Runnable}: waits for a gate, swallowing (and re-asserting) an interrupt. */
    static void blockQuietly(CountDownLatch gate) {
        try {
            block(gate);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Runs on {@code target} (an executor or a lane) a task that waits for {@code gate}, and returns once it runs: its
     * worker, and for a lane its context, stay held until the gate opens.
     */
    static void hold(Executor target, CountDownLatch gate) {
        runHeld(target, () -> blockQuietly(gate));
    }

    /** Runs {@code holding} on {@code target} and returns once it has started. */
    private static void runHeld(Executor target, Runnable holding) {
        CountDownLatch running = new CountDownLatch(1);
        target.execute(() -> {
            running.countDown();
            holding.run();
        });
        await(running, "the holding task to start");
    }

    /**
     * Fills an executor of one worker and {@code maxQueued(1)}: {@code holding} runs on the worker (it blocks until the
     * test lets it go) and one more task waits behind it. Returns once the holding task has started.
     */
    static void fillOneWorker(GatlingExecutor e, Runnable holding) {
        runHeld(e, holding);
        e.execute(() -> { }); // waits: the executor is full
    }

    /** Starts a daemon thread named {@code name} that submits one task to {@code e}, keeping what refused it. */
    static Thread startSubmitter(GatlingExecutor e, String name, AtomicReference<Throwable> refusal) {
        Thread t = new Thread(() -> {
            try {
                e.execute(() -> { });
            } catch (Throwable x) {
                refusal.set(x);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    static <T> T get(Future<T> future) throws Exception {
        return future.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }

    /**
     * Waits until a task submitted to {@code e} next gets a later stamp than every task submitted before this call:
     * until the coarse clock reads later than it does now, or has gone stale (the next submit then reads the clock
     * itself). Sleeping a few clock ticks instead relied on the checker ticking during the sleep; a checker
     * descheduled as long left two submits with one stamp, and two lanes with one age have no order.
     */
    static void nextStampLater(GatlingExecutor e) {
        Engine engine = e.engine();
        long before = engine.coarseNowOpaque();
        if (before != Engine.STALE) {
            waitUntil("the coarse clock moves on", () -> {
                long now = engine.coarseNowOpaque();
                return now == Engine.STALE || now - before > 0;
            });
        }
    }

    /**
     * Waits until the checker of {@code e} has finished two more looks than when called: the second began after this
     * call, so whatever the caller did before it (a task queued, a timer entry put back) has been seen by a whole look.
     */
    static void awaitTwoCheckerLooks(GatlingExecutor e, String what) {
        Checker checker = e.engine().checker;
        long seen = checker.inspections();
        waitUntil(what, () -> checker.inspections() >= seen + 2);
    }

    static void waitUntil(String what, BooleanSupplier condition) {
        waitUntil(what, condition, () -> "", TIMEOUT_SECONDS * 1000);
    }

    static void waitUntil(String what, BooleanSupplier condition, Supplier<String> detail) {
        waitUntil(what, condition, detail, TIMEOUT_SECONDS * 1000);
    }

    static void waitUntil(String what, BooleanSupplier condition, Supplier<String> detail, long timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out after " + timeoutMillis + " ms waiting for " + what + ". " + detail.get());
            }
            sleep(1);
        }
    }

    /**
     * Starts {@code main} in a JVM of its own, on this JVM's class path, with its output and errors on one stream:
     * for a contract that only another JVM can show (what it loads, whether it exits).
     */
    static Process childJvm(List<String> jvmOptions, Class<?> main, String... args) throws java.io.IOException {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + java.io.File.separator + "bin" + java.io.File.separator + "java");
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(main.getName());
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    /**
     * Runs {@code main} in a JVM of its own ({@link #childJvm}) to its end; returns its output once it has exited with
     * status 0 within 30 s, and fails the test otherwise, showing the output.
     */
    static String childJvmOutput(List<String> jvmOptions, Class<?> main, String... args) throws Exception {
        Process p = childJvm(jvmOptions, main, args);
        String out = childOutputUntil(p, text -> false, 30);
        if (p.isAlive()) {
            p.destroyForcibly();
            fail("the child JVM did not end within 30 s:\n" + out);
        }
        if (p.exitValue() != 0) {
            fail("the child JVM exited with " + p.exitValue() + ":\n" + out);
        }
        return out;
    }

    /**
     * The output of {@code p} (from {@link #childJvm}) once it has ended, or once the output so far satisfies
     * {@code enough}, or once {@code seconds} have passed, whichever comes first; the process is left as it is. The
     * output is read on a thread of its own: a read on the test's thread blocks until the child closes its output,
     * whatever the test's timeout, so a hung child would hang the build.
     */
    static String childOutputUntil(Process p, java.util.function.Predicate<String> enough, long seconds)
            throws InterruptedException {
        StringBuffer out = new StringBuffer();
        Thread reader = new Thread(() -> {
            byte[] buf = new byte[4096];
            try (var in = p.getInputStream()) {
                for (int n; (n = in.read(buf)) > 0; ) {
                    out.append(new String(buf, 0, n, java.nio.charset.StandardCharsets.UTF_8));
                }
            } catch (java.io.IOException closed) {
                // the child was destroyed: what was read stays
            }
        }, "child-output");
        reader.setDaemon(true);
        reader.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (p.isAlive() && !enough.test(out.toString()) && System.nanoTime() - deadline < 0) {
            p.waitFor(10, TimeUnit.MILLISECONDS);
        }
        if (!p.isAlive()) {
            reader.join(TimeUnit.SECONDS.toMillis(5)); // the rest of the output, up to the end of the stream
        }
        return out.toString();
    }

    /** Sleeps for scenarios that are about time (a blocked task, a delay that must pass). */
    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    static long millisSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    // ---- threads ---------------------------------------------------------------------------------------------

    static List<Thread> liveThreads(String prefix) {
        List<Thread> result = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith(prefix)) {
                result.add(t);
            }
        }
        return result;
    }

    /**
     * Fails if a thread whose name starts with {@code prefix} is alive. Call it once termination has been reported:
     * by then every thread of the executor has ended (SPEC point 12), so no grace is given.
     */
    static void assertNoThreadOutlives(String prefix) {
        for (Thread t : liveThreads(prefix)) {
            fail("thread " + t.getName() + " outlived termination: state " + t.getState());
        }
    }

    /** CPU time used so far by every live thread whose name starts with {@code prefix}. */
    static long cpuNanosOfThreads(String prefix) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : liveThreads(prefix)) {
            long cpu = mx.getThreadCpuTime(t.getId());
            if (cpu > 0) {
                sum += cpu;
            }
        }
        return sum;
    }

    /** Whether a thread factory is asked for the checker's thread (rather than a worker's). */
    static boolean isChecker(Runnable r) {
        return (r instanceof StartGate ? ((StartGate) r).body() : r) instanceof Checker;
    }

    /** A builder with a fresh name. */
    static GatlingExecutor.Builder gatling(String base) {
        return GatlingExecutor.builder().name(uniqueName(base));
    }

    /** The live lane of {@code context} of the given kind, or null if there is none. */
    static ContextStatistics lane(ContextExecutor executor, Object context, boolean coalescing) {
        for (ContextStatistics cs : executor.contextStatistics()) {
            if (cs.coalescing() == coalescing && cs.context().equals(context)) {
                return cs;
            }
        }
        return null;
    }

    /** Waits until every accepted task has run, been coalesced away or been returned. */
    static ExecutorStatistics awaitQuiescent(ContextExecutor executor) {
        waitUntil("the executor to become quiescent", () -> {
            ExecutorStatistics s = executor.statistics();
            return s.executed() + s.coalesced() + s.returned() == s.submitted();
        }, () -> describe(executor));
        return executor.statistics();
    }

    /** Busy-waits for about {@code micros} microseconds (CPU-bound work of a known length). */
    static void spin(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    }

    /**
     * A factory that gives one daemon thread and throws for every thread after it: the first start (a worker's) gets
     * it, the checker and every later worker fail, so nothing but that worker runs the executor's work.
     */
    static ThreadFactory oneDaemonThread() {
        AtomicInteger calls = new AtomicInteger();
        return r -> {
            if (calls.incrementAndGet() > 1) {
                throw new IllegalStateException("no more threads");
            }
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        };
    }

    /** {@code Thread.ofVirtual().factory()}, through reflection (the tests compile for JDK 17); skips before JDK 21. */
    static ThreadFactory virtualThreadFactory() throws Exception {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            return (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
        } catch (NoSuchMethodException beforeJdk21) {
            assumeTrue(false, "no virtual threads on this JDK");
            throw new AssertionError(beforeJdk21);
        }
    }

    static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            sleep(50);
            used = Math.min(used, rt.totalMemory() - rt.freeMemory());
        }
        return used;
    }

    static String describe(ContextExecutor executor) {
        try {
            return String.valueOf(executor.statistics());
        } catch (RuntimeException e) {
            return "(statistics failed: " + e + ")";
        }
    }
}
