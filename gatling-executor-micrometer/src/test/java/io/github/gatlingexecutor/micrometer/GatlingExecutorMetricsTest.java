package io.github.gatlingexecutor.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.Overflow;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every meter reads the same value as {@code statistics()}, with the executor's name and the given tags. */
class GatlingExecutorMetricsTest {

    private static final Map<String, ToDoubleFunction<ExecutorStatistics>> METERS = Map.ofEntries(
            Map.entry("executor.completed", ExecutorStatistics::executed),
            Map.entry("executor.queued", ExecutorStatistics::queued),
            Map.entry("executor.active", ExecutorStatistics::active),
            Map.entry("executor.pool.size", ExecutorStatistics::threads),
            Map.entry("executor.pool.core", ExecutorStatistics::coreThreads),
            Map.entry("executor.pool.max", ExecutorStatistics::maxThreads),
            Map.entry("executor.coalesced", ExecutorStatistics::coalesced),
            Map.entry("executor.failed", ExecutorStatistics::failed),
            Map.entry("executor.contexts.live", ExecutorStatistics::liveContexts),
            Map.entry("executor.threads.auxiliary.started", ExecutorStatistics::auxiliaryThreadsStarted),
            Map.entry("executor.blocked", ExecutorStatistics::blockedDetections),
            Map.entry("executor.transfers", ExecutorStatistics::transfers),
            Map.entry("executor.rejected", ExecutorStatistics::rejected),
            Map.entry("executor.submitters.waiting", ExecutorStatistics::waitingSubmitters),
            Map.entry("executor.accepted.over.limit", ExecutorStatistics::acceptedOverLimit),
            Map.entry("executor.delayed", ExecutorStatistics::delayed));

    @Test
    @Timeout(30)
    void everyMeterReadsWhatStatisticsSays() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("metered").coreThreads(1).maxThreads(5)
                .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(20))
                .uncaughtExceptionHandler((t, e) -> { }).build()) {
            new GatlingExecutorMetrics(executor, Tags.of("service", "test")).bindTo(registry);
            // Work that moves every counter: coalesced and failed tasks, a stuck worker, an auxiliary thread.
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(1);
            executor.execute(() -> {
                holding.countDown();
                await(release);
            });
            assertTrue(holding.await(10, TimeUnit.SECONDS));
            for (int i = 0; i < 10; i++) {
                executor.coalescing("c").execute(() -> { });
            }
            executor.sequential("s").execute(() -> {
                throw new IllegalStateException("counted in failed()");
            });
            CountDownLatch queuedRan = new CountDownLatch(1);
            executor.sequential("s").execute(queuedRan::countDown);
            // Two delayed tasks, cancelled below (close() would wait for them: delayed one-shots run after shutdown).
            java.util.List<java.util.concurrent.ScheduledFuture<?>> delayed = java.util.List.of(
                    executor.schedule(() -> { }, 1, TimeUnit.HOURS), executor.schedule(() -> { }, 1, TimeUnit.HOURS));
            try {
                assertTrue(queuedRan.await(10, TimeUnit.SECONDS), "an auxiliary worker should have run it");
                waitFor(() -> executor.statistics().blockedDetections() >= 1, executor);
                // Mid-flight: the stuck worker is active, and there is one thread more than the core.
                ExecutorStatistics busy = executor.statistics();
                assertTrue(busy.active() >= 1 && busy.threads() >= 2, busy.toString());
                assertEquals(busy.maxThreads(), value(registry, "executor.pool.max"));
                assertTrue(value(registry, "executor.active") >= 1);
            } finally {
                release.countDown();
            }
            waitQuiescent(executor);
            ExecutorStatistics s = executor.statistics();
            assertTrue(s.coalesced() >= 1 && s.failed() == 1 && s.auxiliaryThreadsStarted() >= 1, s.toString());
            assertEquals(2, s.delayed(), s.toString());
            for (Map.Entry<String, ToDoubleFunction<ExecutorStatistics>> m : METERS.entrySet()) {
                if (m.getKey().equals("executor.active") || m.getKey().equals("executor.contexts.live")
                        || m.getKey().equals("executor.pool.size")) {
                    continue; // these move on their own (idle workers, lane release); checked below
                }
                assertEquals(m.getValue().applyAsDouble(s), value(registry, m.getKey()), m.getKey() + " vs " + s);
                Meter meter = registry.find(m.getKey()).tags("name", "metered", "service", "test").meter();
                assertNotNull(meter, m.getKey() + " lacks its tags");
            }
            delayed.forEach(f -> f.cancel(false));
            assertEquals(0.0, value(registry, "executor.delayed"), "cancelled delayed tasks leave the timer");
            assertEquals(executor.statistics().threads(), value(registry, "executor.pool.size"), 0.0);
            assertTrue(value(registry, "executor.active") <= executor.statistics().threads());
        }
        assertEquals(0.0, value(registry, "executor.pool.size"), "no thread after close()");
        assertEquals(0.0, value(registry, "executor.contexts.live"));
    }

    @Test
    @Timeout(30)
    void capacityMetersReadWhatStatisticsSays() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("bounded-metered").maxQueuedPerContext(1)
                .build()) {
            new GatlingExecutorMetrics(executor, Tags.empty()).bindTo(registry);
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(1);
            executor.sequential("k").execute(() -> {
                holding.countDown();
                await(release);
            });
            try {
                assertTrue(holding.await(10, TimeUnit.SECONDS));
                executor.sequential("k").execute(() -> { });
                assertThrows(RejectedExecutionException.class, () -> executor.sequential("k").execute(() -> { }));
                assertEquals(1.0, value(registry, "executor.rejected"));
                assertEquals(executor.statistics().rejected(), value(registry, "executor.rejected"));
                assertEquals(1.0, value(registry, "executor.queued"));
                Thread.sleep(30);
                Duration before = executor.statistics().oldestQueuedAge();
                TimeGauge age = registry.find("executor.queue.oldest.age").timeGauge();
                assertNotNull(age, "executor.queue.oldest.age is a time gauge");
                double seconds = age.value(TimeUnit.SECONDS);
                Duration after = executor.statistics().oldestQueuedAge();
                assertTrue(before.toMillis() >= 20, before.toString());
                assertTrue(seconds * 1e9 >= before.toNanos() && seconds * 1e9 <= after.toNanos(),
                        before + " <= " + seconds + " s <= " + after);
            } finally {
                release.countDown();
            }
            waitQuiescent(executor);
            assertEquals(0.0, registry.find("executor.queue.oldest.age").timeGauge().value(TimeUnit.SECONDS));
        }
    }

    /**
     * The two meters of {@code block} read apart: one submitter parked for room, two tasks a worker put over the limit
     * (a binding of one to the other's figure would read 2 and 1).
     */
    @Test
    @Timeout(30)
    void waitingSubmittersAndAcceptedOverLimitReadTheirOwnFigures() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("blocking-metered").coreThreads(2)
                .maxQueuedPerContext(1).overflow(Overflow.block(Duration.ofSeconds(20))).build()) {
            new GatlingExecutorMetrics(executor, Tags.empty()).bindTo(registry);
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(1);
            Executor k = executor.sequential("k");
            k.execute(() -> {
                holding.countDown();
                await(release);
            });
            java.util.concurrent.atomic.AtomicReference<Throwable> parkedFailure =
                    new java.util.concurrent.atomic.AtomicReference<>();
            Thread parked = new Thread(() -> {
                try {
                    k.execute(() -> { });
                } catch (Throwable failure) {
                    parkedFailure.set(failure); // it must be admitted once room is made, not refused
                }
            }, "parked-submitter");
            try {
                assertTrue(holding.await(10, TimeUnit.SECONDS));
                k.execute(() -> { }); // the one place of k's lane
                parked.start();
                waitFor(() -> executor.statistics().waitingSubmitters() == 1, executor);
                CountDownLatch fannedOut = new CountDownLatch(1);
                executor.sequential("w").execute(() -> { // a worker of this executor is never made to wait
                    k.execute(() -> { });
                    k.execute(() -> { });
                    fannedOut.countDown();
                });
                assertTrue(fannedOut.await(10, TimeUnit.SECONDS));
                ExecutorStatistics s = executor.statistics();
                assertEquals(1, s.waitingSubmitters(), s.toString());
                assertEquals(2, s.acceptedOverLimit(), s.toString());
                assertEquals(1.0, value(registry, "executor.submitters.waiting"));
                assertEquals(2.0, value(registry, "executor.accepted.over.limit"));
            } finally {
                release.countDown();
            }
            parked.join(TimeUnit.SECONDS.toMillis(10));
            assertFalse(parked.isAlive(), "the parked submitter was never admitted");
            assertNull(parkedFailure.get(), () -> "the parked submitter was refused: " + parkedFailure.get());
            waitQuiescent(executor);
            assertEquals(0.0, value(registry, "executor.submitters.waiting"));
            assertEquals(2.0, value(registry, "executor.accepted.over.limit"));
        }
    }

    @Test
    void badArgumentsAreRejectedAtConstruction() {
        assertThrows(NullPointerException.class, () -> new GatlingExecutorMetrics(null, Tags.empty()));
        try (GatlingExecutor e = new GatlingExecutor("nulltags", 1)) {
            assertThrows(NullPointerException.class, () -> new GatlingExecutorMetrics(e, null));
        }
    }

    private static double value(SimpleMeterRegistry registry, String name) {
        Meter meter = registry.find(name).meter();
        assertNotNull(meter, "no meter " + name);
        if (meter instanceof FunctionCounter) {
            return ((FunctionCounter) meter).count();
        }
        return ((Gauge) meter).value();
    }

    private static void waitQuiescent(GatlingExecutor e) throws InterruptedException {
        waitFor(() -> {
            ExecutorStatistics s = e.statistics();
            return s.submitted() == s.executed() + s.coalesced() + s.returned() && s.active() == 0;
        }, e);
    }

    private static void waitFor(java.util.function.BooleanSupplier condition, GatlingExecutor e)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "condition not reached: " + e.statistics());
            Thread.sleep(5);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
    /**
     * The meters hold the executor weakly (Micrometer's default). A caller that keeps only a lane handle must still
     * see them read while the executor runs: the running executor keeps its public object reachable, as a
     * {@code ThreadPoolExecutor}'s workers keep their pool. Before, a collection took it, and the gauges read NaN.
     */
    @Test
    @Timeout(30)
    void metersKeepReadingWhileTheExecutorRunsAndOnlyALaneHandleIsKept() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        LaneOnly kept = bindAndKeepOnlyALane(registry);
        try {
            kept.lane.execute(() -> { });
            FunctionCounter completed = registry.get("executor.completed").functionCounter();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (completed.count() != 1.0) { // counted once the task has run (a fresh executor counts no other)
                assertTrue(System.nanoTime() < deadline, "completed reads " + completed.count());
                Thread.sleep(5);
            }
            // A collection must be seen to happen (an object held only weakly goes), else the check below passes
            // for want of one (explicit GC disabled, say).
            WeakReference<Object> canary = new WeakReference<>(new Object());
            while (canary.get() != null) {
                assertTrue(System.nanoTime() < deadline, "no collection took a weakly held object");
                System.gc();
                Thread.sleep(5);
            }
            assertNotNull(kept.executor.get(), "the running executor's public object was collected");
            assertEquals(1.0, registry.get("executor.pool.size").gauge().value());
            assertEquals(1.0, completed.count());
        } finally {
            GatlingExecutor executor = kept.executor.get();
            if (executor != null) {
                executor.close();
            }
        }
    }

    /** A lane handle, and the executor it belongs to held weakly. */
    private record LaneOnly(Executor lane, WeakReference<GatlingExecutor> executor) {
    }

    /** Apart, so the test's frame holds no strong reference to the executor. */
    private static LaneOnly bindAndKeepOnlyALane(SimpleMeterRegistry registry) {
        GatlingExecutor executor = GatlingExecutor.builder().name("lane-only").coreThreads(1).build();
        new GatlingExecutorMetrics(executor, Tags.empty()).bindTo(registry);
        return new LaneOnly(executor.sequential("k"), new WeakReference<>(executor));
    }
}
