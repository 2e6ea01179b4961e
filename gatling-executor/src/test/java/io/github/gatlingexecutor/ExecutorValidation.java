package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Per-test executors and gates, checked after every test ({@code @RegisterExtension}). After the test body:
 * <ol>
 *   <li>every gate is opened, so tasks the test left waiting can finish;</li>
 *   <li>every {@link GatlingExecutor} the test left running that becomes quiescent (every accepted task ran, was
 *       coalesced away or was returned) must release all its lanes ({@code liveContexts() == 0}) within a second:
 *       memory follows live contexts;</li>
 *   <li>every executor is shut down (gracefully; {@code shutdownNow} only if that does not end it) and must
 *       terminate;</li>
 *   <li>after termination, a GatlingExecutor's counters must add up exactly: {@code submitted == executed +
 *       coalesced + returned}, with no worker thread left ({@code threads() == 0}), no thread of its name alive
 *       (the checker's included) and no lane.</li>
 * </ol>
 * A test that breaks one of these fails, even if its own assertions passed.
 */
final class ExecutorValidation implements AfterEachCallback {
    private static final long QUIESCE_MILLIS = 2_000;
    private static final long RELEASE_MILLIS = 1_000;

    private final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();
    private final List<ExecutorService> executors = new CopyOnWriteArrayList<>();

    /** A latch opened after the test, whatever happened in it. */
    CountDownLatch gate() {
        CountDownLatch gate = new CountDownLatch(1);
        gates.add(gate);
        return gate;
    }

    /**
     * Submits a task that blocks until the returned gate opens (after the test at the latest), and waits until it
     * runs: the lane, or the worker, it runs on is held. To hold a context through a task of its own kind, pass a
     * lambda that wraps the blocking task: {@code occupy(blocker -> e.execute(new Seq("a", blocker)))}.
     */
    CountDownLatch occupy(Executor executor) {
        CountDownLatch gate = gate();
        CountDownLatch holding = new CountDownLatch(1);
        executor.execute(() -> {
            holding.countDown();
            TestSupport.blockQuietly(gate);
        });
        TestSupport.await(holding, "the blocking task to start");
        return gate;
    }

    /** Stops {@code executor} after the test and, if it is a GatlingExecutor, validates it. */
    <E extends ExecutorService> E track(E executor) {
        executors.add(Objects.requireNonNull(executor));
        return executor;
    }

    @Override
    public void afterEach(ExtensionContext context) throws InterruptedException {
        for (CountDownLatch gate : gates) {
            while (gate.getCount() > 0) {
                gate.countDown();
            }
        }
        List<String> problems = new ArrayList<>();
        for (ExecutorService executor : executors) {
            if (executor instanceof GatlingExecutor && !executor.isShutdown()) {
                checkLanesReleasedOnceQuiescent((GatlingExecutor) executor, problems);
            }
        }
        for (ExecutorService executor : executors) {
            executor.shutdown();
        }
        for (ExecutorService executor : executors) {
            if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                executor.shutdownNow(); // the test left something blocked that no gate opens
                if (!executor.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    problems.add("did not terminate after shutdownNow: " + executor);
                    continue;
                }
            }
            if (executor instanceof GatlingExecutor) {
                checkTerminated((GatlingExecutor) executor, problems);
            }
        }
        assertTrue(problems.isEmpty(), () -> "executor validation after the test: " + problems);
    }

    private static void checkLanesReleasedOnceQuiescent(GatlingExecutor e, List<String> problems) {
        if (!waitFor(QUIESCE_MILLIS, () -> quiescent(e.statistics()))) {
            return; // still working (a task the test left blocked, a periodic task): nothing to expect yet
        }
        if (!waitFor(RELEASE_MILLIS, () -> e.statistics().liveContexts() == 0 || !quiescent(e.statistics()))) {
            problems.add(e.name() + ": quiescent but lanes still live after " + RELEASE_MILLIS + " ms: "
                    + e.statistics() + " " + e.contextStatistics());
        }
    }

    private static void checkTerminated(GatlingExecutor e, List<String> problems) {
        ExecutorStatistics s = e.statistics();
        if (!quiescent(s)) {
            problems.add(e.name() + ": counters do not add up after termination (submitted != executed + coalesced"
                    + " + returned): " + s);
        }
        if (s.threads() != 0) {
            problems.add(e.name() + ": worker threads left after termination: " + s);
        }
        if (s.liveContexts() != 0) {
            problems.add(e.name() + ": lanes left after termination: " + s);
        }
        // threads() counts the pool's worker slots; the threads themselves, the checker's included, are seen here
        // (by name: the test's own names are unique, and a ThreadFactory's threads go by other names).
        List<Thread> left = TestSupport.liveThreads(e.name() + "-");
        if (!left.isEmpty()) {
            problems.add(e.name() + ": threads alive after termination: " + left);
        }
    }

    private static boolean quiescent(ExecutorStatistics s) {
        return s.submitted() == s.executed() + s.coalesced() + s.returned();
    }

    private static boolean waitFor(long millis, java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            TestSupport.sleep(2);
        }
        return true;
    }
}
