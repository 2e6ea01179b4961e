package io.github.gatlingexecutor.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.Overflow;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The meters of an executor while it shuts down, once it has terminated, and once it is gone: what they read is
 * checked against what the README promises of the statistics (counters never go back, no level reads below zero, a
 * terminated executor's figures are final) and of the binding (the meters hold the executor weakly).
 */
class GatlingExecutorMetricsShutdownTest {

    /** Every meter by name, with the figure it reads; the counters are the ones whose figure only grows. */
    private static final Map<String, ToDoubleFunction<ExecutorStatistics>> COUNTERS = new LinkedHashMap<>();
    private static final Map<String, ToDoubleFunction<ExecutorStatistics>> GAUGES = new LinkedHashMap<>();
    private static final String AGE = "executor.queue.oldest.age";

    static {
        COUNTERS.put("executor.completed", ExecutorStatistics::executed);
        COUNTERS.put("executor.coalesced", ExecutorStatistics::coalesced);
        COUNTERS.put("executor.failed", ExecutorStatistics::failed);
        COUNTERS.put("executor.threads.auxiliary.started", ExecutorStatistics::auxiliaryThreadsStarted);
        COUNTERS.put("executor.blocked", ExecutorStatistics::blockedDetections);
        COUNTERS.put("executor.transfers", ExecutorStatistics::transfers);
        COUNTERS.put("executor.rejected", ExecutorStatistics::rejected);
        COUNTERS.put("executor.accepted.over.limit", ExecutorStatistics::acceptedOverLimit);
        GAUGES.put("executor.queued", ExecutorStatistics::queued);
        GAUGES.put("executor.active", ExecutorStatistics::active);
        GAUGES.put("executor.pool.size", ExecutorStatistics::threads);
        GAUGES.put("executor.pool.core", ExecutorStatistics::coreThreads);
        GAUGES.put("executor.pool.max", ExecutorStatistics::maxThreads);
        GAUGES.put("executor.contexts.live", ExecutorStatistics::liveContexts);
        GAUGES.put("executor.submitters.waiting", ExecutorStatistics::waitingSubmitters);
        GAUGES.put("executor.delayed", ExecutorStatistics::delayed);
    }

    @Test
    @Timeout(60)
    void metersScrapedThroughShutdownNeverGoBackAndEndAtTheFinalFigures() throws Exception {
        scrapeThroughTheEnd(false);
    }

    @Test
    @Timeout(60)
    void metersScrapedThroughShutdownNowNeverGoBackAndEndAtTheFinalFigures() throws Exception {
        scrapeThroughTheEnd(true);
    }

    /**
     * Submitters that wait for room, coalescing submitters, a scheduling thread and a task that fails now and then
     * keep the executor busy while a scraper reads every meter in a loop; the executor is then shut down under them.
     * Each meter reads a snapshot of its own instant, so the meters are not compared with one another while work
     * flows, only each with its own earlier reads: a counter never reads less than before, and no meter reads below
     * zero or NaN. Once the executor has terminated and every thread that submitted to it has ended, each meter reads
     * the final statistics, and still does a moment later.
     */
    private void scrapeThroughTheEnd(boolean now) throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        String name = now ? "ending-now" : "ending";
        GatlingExecutor executor = GatlingExecutor.builder().name(name).coreThreads(2).maxThreads(4)
                .maxQueued(16).maxQueuedPerContext(4).overflow(Overflow.block(Duration.ofSeconds(30)))
                .checkPeriod(Duration.ofMillis(5)).blockedThreshold(Duration.ofMillis(5))
                .auxiliaryKeepAlive(Duration.ofMillis(20)).uncaughtExceptionHandler((t, e) -> { }).build();
        GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
        metrics.bindTo(registry);
        Tags tags = Tags.of("name", name);
        List<String> violations = new CopyOnWriteArrayList<>();
        AtomicBoolean scraping = new AtomicBoolean(true);
        AtomicLong scrapes = new AtomicLong();
        Thread scraper = new Thread(() -> {
            Map<String, Double> last = new LinkedHashMap<>();
            while (scraping.get()) {
                for (String meter : COUNTERS.keySet()) {
                    double v = registry.get(meter).tags(tags).functionCounter().count();
                    Double before = last.put(meter, v);
                    if (Double.isNaN(v) || v < 0 || (before != null && v < before)) {
                        violations.add(meter + " read " + v + " after " + before);
                    }
                }
                for (String meter : GAUGES.keySet()) {
                    double v = registry.get(meter).tags(tags).gauge().value();
                    if (Double.isNaN(v) || v < 0) {
                        violations.add(meter + " read " + v);
                    }
                }
                double age = registry.get(AGE).tags(tags).timeGauge().value(TimeUnit.NANOSECONDS);
                if (Double.isNaN(age) || age < 0) {
                    violations.add(AGE + " read " + age);
                }
                scrapes.incrementAndGet();
            }
        }, name + "-scraper");
        scraper.start();

        AtomicBoolean submitting = new AtomicBoolean(true);
        List<Thread> submitters = new ArrayList<>();
        AtomicLong accepted = new AtomicLong();
        for (int i = 0; i < 3; i++) {
            int id = i;
            submitters.add(new Thread(() -> {
                long n = 0;
                while (submitting.get()) {
                    try {
                        long k = n++;
                        executor.sequential("s" + (k % 5)).execute(() -> {
                            if (k % 97 == 0) {
                                throw new IllegalStateException("counted in failed()");
                            }
                            spin(50);
                        });
                        accepted.incrementAndGet();
                    } catch (RejectedExecutionException shutDown) {
                        return;
                    }
                }
            }, name + "-sequential-" + id));
        }
        submitters.add(new Thread(() -> {
            long n = 0;
            while (submitting.get()) {
                try {
                    executor.coalescing("c" + (n++ % 3)).execute(() -> spin(20));
                } catch (RejectedExecutionException shutDown) {
                    return;
                }
            }
        }, name + "-coalescing"));
        submitters.add(new Thread(() -> {
            long n = 0;
            while (submitting.get()) {
                try {
                    executor.schedule(() -> spin(10), n++ % 3, TimeUnit.MILLISECONDS);
                    Thread.sleep(1);
                } catch (RejectedExecutionException | InterruptedException shutDown) {
                    return;
                }
            }
        }, name + "-scheduling"));
        submitters.forEach(Thread::start);
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (accepted.get() < 500 || executor.statistics().waitingSubmitters() == 0) {
                assertTrue(System.nanoTime() < deadline, "no load built up: " + executor.statistics());
                Thread.sleep(1);
            }
            if (now) {
                executor.shutdownNow();
            } else {
                executor.shutdown();
            }
            assertTrue(executor.awaitTermination(30, TimeUnit.SECONDS), executor.statistics().toString());
        } finally {
            submitting.set(false);
            for (Thread t : submitters) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            scraping.set(false);
            scraper.join(TimeUnit.SECONDS.toMillis(30));
        }
        assertTrue(violations.isEmpty(), () -> scrapes.get() + " scrapes: " + violations);
        assertTrue(scrapes.get() > 0);
        ExecutorStatistics last = executor.statistics();
        assertEquals(last.submitted(), last.executed() + last.coalesced() + last.returned(), last.toString());
        assertEquals(0, last.threads(), last.toString());
        assertEveryMeterReads(registry, tags, last);
        Thread.sleep(20);
        assertEquals(last.toString(), executor.statistics().toString(), "a terminated executor's figures moved");
        assertEveryMeterReads(registry, tags, last);
        metrics.close();
        assertTrue(registry.getMeters().isEmpty(), registry.getMeters().toString());
    }

    /**
     * A binder bound to a terminated executor registers meters that read its final figures: binding is not refused
     * nor made to wait, and nothing moves.
     */
    @Test
    @Timeout(30)
    void aBinderBoundAfterTerminationReadsTheFinalFigures() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        GatlingExecutor executor = GatlingExecutor.builder().name("terminated").coreThreads(2).build();
        for (int i = 0; i < 10; i++) {
            executor.sequential("k" + i % 3).execute(() -> { });
        }
        executor.coalescing("c").execute(() -> { });
        executor.close();
        ExecutorStatistics last = executor.statistics();
        assertEquals(11, last.executed(), last.toString());
        try (GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty())) {
            metrics.bindTo(registry);
            assertEveryMeterReads(registry, Tags.of("name", "terminated"), last);
        }
        assertTrue(registry.getMeters().isEmpty(), registry.getMeters().toString());
    }

    /**
     * A binder left bound and then dropped with its executor, which terminated: neither the registry nor the meters
     * keep the executor (README: the meters hold it weakly), which is collected; then the gauges read NaN and the
     * counters of a cumulative registry keep the last value they read.
     */
    @Test
    @Timeout(30)
    void aTerminatedExecutorLeftBoundIsCollectedAndItsGaugesReadNaN() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Tags tags = Tags.of("name", "left-bound");
        WeakReference<GatlingExecutor> gone = bindRunAndClose(registry);
        assertEquals(7.0, registry.get("executor.completed").tags(tags).functionCounter().count());
        assertCollected(gone, "the terminated executor is kept through its meters");
        for (String meter : GAUGES.keySet()) {
            assertTrue(Double.isNaN(registry.get(meter).tags(tags).gauge().value()), meter);
        }
        assertTrue(Double.isNaN(registry.get(AGE).tags(tags).timeGauge().value(TimeUnit.SECONDS)));
        assertEquals(7.0, registry.get("executor.completed").tags(tags).functionCounter().count());
        assertEquals(0.0, registry.get("executor.failed").tags(tags).functionCounter().count());
        assertEquals(COUNTERS.size() + GAUGES.size() + 1, registry.getMeters().size());
    }

    /**
     * A binder the caller keeps after closing it (a field of a long-lived object, say) does not keep its executor: it
     * held it in a final field, so every executor ever bound stayed reachable through its closed binder.
     */
    @Test
    @Timeout(30)
    void aClosedBinderKeptByTheCallerDoesNotKeepItsExecutor() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        GatlingExecutorMetrics[] kept = new GatlingExecutorMetrics[1];
        WeakReference<GatlingExecutor> gone = bindRunAndCloseBoth(registry, kept);
        assertCollected(gone, "the closed binder keeps the executor");
        assertTrue(registry.getMeters().isEmpty(), registry.getMeters().toString());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> kept[0].bindTo(registry));
        assertTrue(e.getMessage().contains("'kept-binder'"), e.getMessage()); // the name outlives the reference
    }

    /**
     * Collects until {@code ref} is cleared, or 20 s; a weakly held object made after the last strong reference to the
     * referent went, and cleared too, shows that a collection ran that could have taken it.
     */
    private static void assertCollected(WeakReference<?> ref, String message) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        WeakReference<Object> canary = new WeakReference<>(new Object());
        while ((ref.get() != null || canary.get() != null) && System.nanoTime() - deadline < 0) {
            System.gc();
            Thread.sleep(10);
        }
        assertNull(canary.get(), "no collection took a weakly held object");
        assertNull(ref.get(), message);
    }

    /** Apart, so that no frame of the test keeps the executor; the binder is kept in {@code kept}. */
    private static WeakReference<GatlingExecutor> bindRunAndCloseBoth(MeterRegistry registry,
                                                                      GatlingExecutorMetrics[] kept) throws Exception {
        GatlingExecutor executor = GatlingExecutor.builder().name("kept-binder").coreThreads(1).build();
        kept[0] = new GatlingExecutorMetrics(executor, Tags.empty());
        kept[0].bindTo(registry);
        executor.sequential("k").execute(() -> { });
        executor.close();
        kept[0].close();
        return new WeakReference<>(executor);
    }

    /** Apart, so that no frame of the test keeps the executor or its binder. */
    private static WeakReference<GatlingExecutor> bindRunAndClose(MeterRegistry registry) throws Exception {
        GatlingExecutor executor = GatlingExecutor.builder().name("left-bound").coreThreads(2).build();
        new GatlingExecutorMetrics(executor, Tags.empty()).bindTo(registry);
        for (int i = 0; i < 7; i++) {
            executor.sequential("k" + i).execute(() -> { });
        }
        executor.close();
        return new WeakReference<>(executor);
    }

    /**
     * {@code close()} of the binder, {@code close()} of the executor and scrapes of the registry at the same moment:
     * no scrape fails, and the registry ends empty.
     */
    @Test
    @Timeout(30)
    void aBindersCloseRacingTheExecutorsCloseAndAScrape() throws Exception {
        for (int round = 0; round < 50; round++) {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            GatlingExecutor executor = GatlingExecutor.builder().name("racing").coreThreads(2).build();
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(registry);
            for (int i = 0; i < 20; i++) {
                executor.sequential("k" + i % 4).execute(() -> spin(20));
            }
            CountDownLatch go = new CountDownLatch(1);
            List<Throwable> failures = new CopyOnWriteArrayList<>();
            AtomicBoolean closed = new AtomicBoolean();
            Thread scraper = new Thread(() -> {
                try {
                    go.await();
                    while (!closed.get()) {
                        for (Meter m : registry.getMeters()) {
                            m.measure().forEach(ms -> ms.getValue());
                        }
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            });
            Thread closer = new Thread(() -> {
                try {
                    go.await();
                    executor.close();
                } catch (Throwable t) {
                    failures.add(t);
                }
            });
            scraper.start();
            closer.start();
            go.countDown();
            metrics.close();
            closer.join(TimeUnit.SECONDS.toMillis(20));
            closed.set(true);
            scraper.join(TimeUnit.SECONDS.toMillis(20));
            assertTrue(failures.isEmpty(), failures.toString());
            assertTrue(registry.getMeters().isEmpty(), registry.getMeters().toString());
            assertTrue(executor.isTerminated());
        }
    }

    /** Each meter reads what {@code s} says (the oldest age in nanoseconds, through the registry's seconds). */
    private static void assertEveryMeterReads(MeterRegistry registry, Tags tags, ExecutorStatistics s) {
        for (Map.Entry<String, ToDoubleFunction<ExecutorStatistics>> m : COUNTERS.entrySet()) {
            FunctionCounter counter = registry.get(m.getKey()).tags(tags).functionCounter();
            assertEquals(m.getValue().applyAsDouble(s), counter.count(), m.getKey() + " vs " + s);
        }
        for (Map.Entry<String, ToDoubleFunction<ExecutorStatistics>> m : GAUGES.entrySet()) {
            Gauge gauge = registry.get(m.getKey()).tags(tags).gauge();
            assertEquals(m.getValue().applyAsDouble(s), gauge.value(), m.getKey() + " vs " + s);
        }
        TimeGauge age = registry.get(AGE).tags(tags).timeGauge();
        assertEquals(s.oldestQueuedAge().toNanos(), age.value(TimeUnit.NANOSECONDS), 0.5, AGE + " vs " + s);
    }

    private static void spin(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    }
}
