package io.github.gatlingexecutor.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.ContextExecutor;
import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.Overflow;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every meter has its kind, base unit and tags, and reads the same value as {@code statistics()}; a binder refuses to
 * share meters with another, and removes its own on close.
 */
class GatlingExecutorMetricsTest {

    private enum Kind { COUNTER, GAUGE }

    /** A meter as it must be registered ({@code executor.queue.oldest.age}, a time gauge, is checked apart). */
    private record Expected(String name, Kind kind, String unit, ToDoubleFunction<ExecutorStatistics> value) {
    }

    private static final List<Expected> METERS = List.of(
            new Expected("executor.completed", Kind.COUNTER, BaseUnits.TASKS, ExecutorStatistics::executed),
            new Expected("executor.queued", Kind.GAUGE, BaseUnits.TASKS, ExecutorStatistics::queued),
            new Expected("executor.active", Kind.GAUGE, BaseUnits.THREADS, ExecutorStatistics::active),
            new Expected("executor.pool.size", Kind.GAUGE, BaseUnits.THREADS, ExecutorStatistics::threads),
            new Expected("executor.pool.core", Kind.GAUGE, BaseUnits.THREADS, ExecutorStatistics::coreThreads),
            new Expected("executor.pool.max", Kind.GAUGE, BaseUnits.THREADS, ExecutorStatistics::maxThreads),
            new Expected("executor.coalesced", Kind.COUNTER, BaseUnits.TASKS, ExecutorStatistics::coalesced),
            new Expected("executor.failed", Kind.COUNTER, BaseUnits.TASKS, ExecutorStatistics::failed),
            new Expected("executor.contexts.live", Kind.GAUGE, "contexts", ExecutorStatistics::liveContexts),
            new Expected("executor.threads.auxiliary.started", Kind.COUNTER, BaseUnits.THREADS,
                    ExecutorStatistics::auxiliaryThreadsStarted),
            new Expected("executor.blocked", Kind.COUNTER, "detections", ExecutorStatistics::blockedDetections),
            new Expected("executor.transfers", Kind.COUNTER, "transfers", ExecutorStatistics::transfers),
            new Expected("executor.rejected", Kind.COUNTER, BaseUnits.TASKS, ExecutorStatistics::rejected),
            new Expected("executor.submitters.waiting", Kind.GAUGE, "submitters",
                    ExecutorStatistics::waitingSubmitters),
            new Expected("executor.accepted.over.limit", Kind.COUNTER, BaseUnits.TASKS,
                    ExecutorStatistics::acceptedOverLimit),
            new Expected("executor.delayed", Kind.GAUGE, BaseUnits.TASKS, ExecutorStatistics::delayed));

    private static final String AGE = "executor.queue.oldest.age";
    private static final int METER_COUNT = METERS.size() + 1;

    /** Levels that move on their own (idle workers retire, emptied lanes are released): checked apart. */
    private static final Set<String> MOVING = Set.of("executor.active", "executor.pool.size", "executor.contexts.live");

    /**
     * Three of four core workers held (the heads of lanes r and c, and a plain task), so that the figures compared
     * stand still and differ: a meter wired to another one's figure reads a wrong value.
     */
    @Test
    @Timeout(30)
    void everyMeterReadsWhatStatisticsSays() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Tags tags = Tags.of("name", "metered", "service", "test");
        GatlingExecutorMetrics metrics;
        try (GatlingExecutor executor = GatlingExecutor.builder().name("metered").coreThreads(4).maxThreads(11)
                .maxQueuedPerContext(5).checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(20))
                .uncaughtExceptionHandler((t, e) -> { }).build()) {
            metrics = new GatlingExecutorMetrics(executor, Tags.of("service", "test"));
            metrics.bindTo(registry);
            Set<String> names = registry.getMeters().stream().map(m -> m.getId().getName()).collect(Collectors.toSet());
            Set<String> expectedNames = METERS.stream().map(Expected::name).collect(Collectors.toSet());
            assertTrue(expectedNames.add(AGE));
            assertEquals(expectedNames, names);
            assertEquals(METER_COUNT, registry.getMeters().size());

            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(3);
            Runnable hold = () -> {
                holding.countDown();
                await(release);
            };
            executor.sequential("r").execute(hold);
            executor.coalescing("c").execute(hold);
            executor.execute(hold);
            List<ScheduledFuture<?>> delayed = new ArrayList<>();
            try {
                try {
                    assertTrue(holding.await(10, TimeUnit.SECONDS));
                    for (int i = 0; i < 5; i++) {
                        executor.sequential("r").execute(() -> { }); // r's five places, behind its running head
                    }
                    Executor r = executor.sequential("r");
                    for (int i = 0; i < 7; i++) {
                        assertThrows(RejectedExecutionException.class, () -> r.execute(() -> { }));
                    }
                    for (int i = 0; i < 10; i++) {
                        executor.coalescing("c").execute(() -> { }); // each replaces the one before it: 9 coalesced
                    }
                    for (int i = 0; i < 2; i++) {
                        executor.execute(() -> {
                            throw new IllegalStateException("counted in failed()");
                        });
                    }
                    for (int i = 0; i < 3; i++) {
                        executor.execute(() -> { });
                    }
                    for (int i = 0; i < 8; i++) {
                        delayed.add(executor.schedule(() -> { }, 1, TimeUnit.HOURS));
                    }
                    waitFor(() -> {
                        ExecutorStatistics s = executor.statistics();
                        return s.executed() == 5 && s.failed() == 2 && s.active() == 3 && s.queued() == 6
                                && s.blockedDetections() == 3;
                    }, executor);
                    ExecutorStatistics s = executor.statistics();
                    assertDistinct(s, "executor.completed", "executor.queued", "executor.active", "executor.pool.core",
                            "executor.pool.max", "executor.coalesced", "executor.failed", "executor.rejected",
                            "executor.delayed");
                    assertEveryMeterReads(registry, tags, s, Set.of("executor.pool.size", "executor.contexts.live"));
                    assertTrue(read(registry, "executor.pool.size", tags) >= 4);
                } finally {
                    release.countDown();
                }
                waitQuiescent(executor);
                ExecutorStatistics s = executor.statistics();
                assertEquals(14, s.executed(), s.toString());
                assertEquals(9, s.coalesced(), s.toString());
                assertEquals(3, s.blockedDetections(), s.toString());
                assertEveryMeterReads(registry, tags, s, MOVING);
                delayed.forEach(f -> f.cancel(false));
                assertEquals(0.0, read(registry, "executor.delayed", tags), "cancelled delayed tasks leave the timer");
                assertEquals(executor.statistics().threads(), read(registry, "executor.pool.size", tags));
                assertTrue(read(registry, "executor.active", tags) <= executor.statistics().threads());
            } finally {
                delayed.forEach(f -> f.cancel(false)); // else close() would wait an hour for them
            }
        }
        assertEquals(0.0, read(registry, "executor.pool.size", tags), "no thread after close()");
        assertEquals(0.0, read(registry, "executor.contexts.live", tags));
        metrics.close();
        assertNothingLeft(registry);
    }

    /** Queued (2) and rejected (3) read apart, and the age of the oldest waiting task is a time gauge in seconds. */
    @Test
    @Timeout(30)
    void capacityMetersReadWhatStatisticsSays() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Tags tags = Tags.of("name", "bounded-metered");
        try (GatlingExecutor executor = GatlingExecutor.builder().name("bounded-metered").maxQueuedPerContext(2)
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
                executor.sequential("k").execute(() -> { });
                for (int i = 0; i < 3; i++) {
                    assertThrows(RejectedExecutionException.class, () -> executor.sequential("k").execute(() -> { }));
                }
                assertEquals(3, executor.statistics().rejected());
                assertEquals(2, executor.statistics().queued());
                assertEquals(3.0, read(registry, "executor.rejected", tags));
                assertEquals(2.0, read(registry, "executor.queued", tags));
                Thread.sleep(30);
                Duration before = executor.statistics().oldestQueuedAge();
                TimeGauge age = age(registry, tags);
                double seconds = age.value(TimeUnit.SECONDS);
                Duration after = executor.statistics().oldestQueuedAge();
                assertTrue(before.toMillis() >= 20, before.toString());
                assertTrue(seconds * 1e9 >= before.toNanos() && seconds * 1e9 <= after.toNanos(),
                        before + " <= " + seconds + " s <= " + after);
                Duration low = executor.statistics().oldestQueuedAge();
                double inBaseUnit = age.value();
                Duration high = executor.statistics().oldestQueuedAge();
                assertTrue(inBaseUnit * 1e9 >= low.toNanos() && inBaseUnit * 1e9 <= high.toNanos(),
                        "read in the registry's base unit: " + low + " <= " + inBaseUnit + " s <= " + high);
            } finally {
                release.countDown();
            }
            waitQuiescent(executor);
            assertEquals(0.0, age(registry, tags).value(TimeUnit.SECONDS));
        }
    }

    /**
     * {@code executor.contexts.live} reads the lanes that exist: one held on the only worker and four waiting behind
     * it, held still (no auxiliary may start). The other tests skip it while tasks move and compare it only after close,
     * where every figure it could be mistaken for reads zero too.
     */
    @Test
    @Timeout(30)
    void liveContextsReadsTheLanesThatExist() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Tags tags = Tags.of("name", "lanes-metered");
        try (GatlingExecutor executor = GatlingExecutor.builder().name("lanes-metered").coreThreads(1).maxThreads(1)
                .build()) {
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(registry);
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(1);
            executor.sequential("held").execute(() -> {
                holding.countDown();
                await(release);
            });
            try {
                assertTrue(holding.await(10, TimeUnit.SECONDS));
                for (int i = 0; i < 4; i++) {
                    executor.sequential("waiting-" + i).execute(() -> { });
                }
                ExecutorStatistics s = executor.statistics();
                assertEquals(5, s.liveContexts(), s.toString());
                assertDistinctFromEveryOther(s, "executor.contexts.live");
                assertEquals(5.0, read(registry, "executor.contexts.live", tags));
            } finally {
                release.countDown();
            }
            waitQuiescent(executor);
            metrics.close();
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
        Tags tags = Tags.of("name", "blocking-metered");
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
            AtomicReference<Throwable> parkedFailure = new AtomicReference<>();
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
                assertEquals(1.0, read(registry, "executor.submitters.waiting", tags));
                assertEquals(2.0, read(registry, "executor.accepted.over.limit", tags));
            } finally {
                release.countDown();
            }
            parked.join(TimeUnit.SECONDS.toMillis(10));
            assertFalse(parked.isAlive(), "the parked submitter was never admitted");
            assertNull(parkedFailure.get(), () -> "the parked submitter was refused: " + parkedFailure.get());
            waitQuiescent(executor);
            assertEquals(0.0, read(registry, "executor.submitters.waiting", tags));
            assertEquals(2.0, read(registry, "executor.accepted.over.limit", tags));
        }
    }

    @Test
    void badArgumentsAreRejected() {
        assertThrows(NullPointerException.class, () -> new GatlingExecutorMetrics(null, Tags.empty()));
        try (GatlingExecutor e = new GatlingExecutor("nulltags", 1)) {
            assertThrows(NullPointerException.class, () -> new GatlingExecutorMetrics(e, null));
            assertThrows(NullPointerException.class, () -> new GatlingExecutorMetrics(e, Tags.empty()).bindTo(null));
        }
        // Another implementation of the interface may answer a null name; it is refused here, named, not at bindTo.
        ContextExecutor nameless = (ContextExecutor) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {ContextExecutor.class}, (proxy, method, args) -> {
                    if (method.getName().equals("name")) {
                        return null;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        NullPointerException thrown = assertThrows(NullPointerException.class,
                () -> new GatlingExecutorMetrics(nameless, Tags.empty()));
        assertTrue(thrown.getMessage().contains("name()"), thrown.getMessage());
    }

    /** A caller's own {@code name} tag was silently replaced by the executor's name; it is now refused at once. */
    @Test
    void aNameTagOfTheCallersIsRefusedAtConstruction() {
        try (GatlingExecutor e = GatlingExecutor.builder().name("orders").coreThreads(1).build()) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> new GatlingExecutorMetrics(e, Tags.of("name", "mine", "svc", "b")));
            assertTrue(refused.getMessage().contains("name=mine") && refused.getMessage().contains("name=orders"),
                    refused.getMessage());
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            try (GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(e, Tags.of("svc", "b"))) {
                metrics.bindTo(registry);
                assertEquals("orders",
                        registry.get("executor.pool.size").tags("svc", "b").gauge().getId().getTag("name"));
            }
        }
    }

    /** Two executors named alike: the second binding throws, names the meter, and leaves the registry as it was. */
    @Test
    void aSecondExecutorOfTheSameNameAndTagsIsRefusedAndRegistersNothing() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor first = GatlingExecutor.builder().coreThreads(1).maxThreads(3).build();
             GatlingExecutor second = GatlingExecutor.builder().coreThreads(1).maxThreads(5).build()) {
            assertEquals(first.name(), second.name());
            new GatlingExecutorMetrics(first, Tags.of("service", "s")).bindTo(registry);
            Set<Meter> before = identitySet(registry.getMeters());
            GatlingExecutorMetrics refused = new GatlingExecutorMetrics(second, Tags.of("service", "s"));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> refused.bindTo(registry));
            String message = e.getMessage();
            assertTrue(message.startsWith("Meter executor."), message);
            assertTrue(message.contains("{name=gatling, service=s} is already in the registry and was not registered"
                    + " by this binder"), message);
            assertTrue(message.contains("Close the binder that registered it first, or give this executor ('gatling')"
                    + " a distinct name (GatlingExecutor.builder().name(..)) or an extra tag"), message);
            assertEquals(before, identitySet(registry.getMeters()));
            assertEquals(3.0, read(registry, "executor.pool.max", Tags.of("name", "gatling", "service", "s")));

            // A tag set of its own, even a superset or a subset of the first one's, is another meter: no collision.
            new GatlingExecutorMetrics(second, Tags.of("service", "s", "shard", "2")).bindTo(registry);
            new GatlingExecutorMetrics(second, Tags.empty()).bindTo(registry);
            assertEquals(3 * METER_COUNT, registry.getMeters().size());
            assertEquals(5.0, read(registry, "executor.pool.max", Tags.of("name", "gatling", "shard", "2")));
        }
    }

    /** With common tags the registry's ids are not the binder's; a second binder of the same tags is refused still. */
    @Test
    void aCollisionThroughTheRegistrysMeterFiltersIsRefusedToo() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        registry.config().commonTags("application", "billing");
        try (GatlingExecutor first = GatlingExecutor.builder().coreThreads(1).build();
             GatlingExecutor second = GatlingExecutor.builder().coreThreads(1).build()) {
            new GatlingExecutorMetrics(first, Tags.empty()).bindTo(registry);
            Set<Meter> before = identitySet(registry.getMeters());
            GatlingExecutorMetrics refused = new GatlingExecutorMetrics(second, Tags.empty());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> refused.bindTo(registry));
            assertTrue(e.getMessage().contains("{application=billing, name=gatling} is already in the registry"),
                    e.getMessage());
            assertEquals(before, identitySet(registry.getMeters()));
        }
    }

    @Test
    void closeRemovesEveryMeterFromEveryRegistryOnceAndForAll() {
        SimpleMeterRegistry a = new SimpleMeterRegistry();
        SimpleMeterRegistry b = new SimpleMeterRegistry();
        Meter foreign = a.counter("unrelated", "name", "gatling");
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build()) {
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(a);
            metrics.bindTo(b);
            assertEquals(METER_COUNT + 1, a.getMeters().size());
            assertEquals(METER_COUNT, b.getMeters().size());
            metrics.close();
            assertEquals(List.of(foreign), a.getMeters());
            assertNothingLeft(b);
            metrics.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> metrics.bindTo(a));
            assertEquals("This GatlingExecutorMetrics of executor 'gatling' is closed and binds no more;"
                    + " bind a new one", e.getMessage());
            assertEquals(List.of(foreign), a.getMeters());
        }
    }

    /** A meter removed by other means, and one registered in its place by someone else, are left to their owner. */
    @Test
    void closeRemovesOnlyTheMetersThisBinderRegistered() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build()) {
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(registry);
            Meter completed = registry.get("executor.completed").meter();
            registry.remove(completed);
            Meter replacement = registry.counter("executor.completed", "name", "gatling");
            metrics.close();
            assertEquals(List.of(replacement), registry.getMeters());
        }
    }

    @Test
    void bindingTheSameBinderTwiceIsHarmlessAndRestoresWhatWasRemoved() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build()) {
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(registry);
            Set<Meter> first = identitySet(registry.getMeters());
            metrics.bindTo(registry);
            assertEquals(first, identitySet(registry.getMeters()));
            registry.remove(registry.get("executor.failed").meter());
            metrics.bindTo(registry);
            assertEquals(METER_COUNT, registry.getMeters().size());
            assertEquals(0.0, read(registry, "executor.failed", Tags.of("name", "gatling")));
            metrics.close();
            assertNothingLeft(registry);
        }
    }

    /** Once the first binder is closed, a new executor of the same name binds, and its meters read its own figures. */
    @Test
    void afterCloseANewExecutorOfTheSameNameBinds() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Tags tags = Tags.of("name", "orders");
        GatlingExecutor old = GatlingExecutor.builder().name("orders").coreThreads(1).maxThreads(3).build();
        GatlingExecutorMetrics oldMetrics = new GatlingExecutorMetrics(old, Tags.empty());
        oldMetrics.bindTo(registry);
        old.close();
        oldMetrics.close();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("orders").coreThreads(1).maxThreads(5).build();
             GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty())) {
            metrics.bindTo(registry);
            assertEquals(METER_COUNT, registry.getMeters().size());
            assertEquals(5.0, read(registry, "executor.pool.max", tags));
        }
        assertNothingLeft(registry);
    }

    /**
     * Auxiliary starts and transfers, zero in the other tests, read their own figures. A transfer: lane t's worker
     * takes lane h's task, which holds it, while t goes round the ready queue to the other worker. The auxiliary
     * worker: both core workers held with work queued.
     */
    @Test
    @Timeout(30)
    void auxiliaryStartsAndTransfersReadTheirOwnFigures() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Tags tags = Tags.of("name", "moving");
        try (GatlingExecutor executor = GatlingExecutor.builder().name("moving").coreThreads(2).maxThreads(3)
                .blockedThreshold(Duration.ofMinutes(1)) // no detection: executor.blocked stays 0
                .auxiliaryKeepAlive(Duration.ofMinutes(1)).build();
             GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty())) {
            metrics.bindTo(registry);
            // More transfers than the pool's sizes, so that transfers reads apart from them. A round may make none:
            // the ready queue does not promise which of h and t t's worker takes first.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (executor.statistics().transfers() < 4) {
                assertTrue(System.nanoTime() < deadline, () -> "too few transfers: " + executor.statistics());
                CountDownLatch holdT = new CountDownLatch(1);
                CountDownLatch holdG = new CountDownLatch(1);
                CountDownLatch holdH = new CountDownLatch(1);
                CountDownLatch tStarted = new CountDownLatch(1);
                CountDownLatch gStarted = new CountDownLatch(1);
                CountDownLatch hStarted = new CountDownLatch(1);
                long before = executor.statistics().transfers();
                executor.sequential("t").execute(() -> {
                    tStarted.countDown();
                    await(holdT);
                });
                assertTrue(tStarted.await(10, TimeUnit.SECONDS));
                executor.sequential("g").execute(() -> { // on the other worker, the only free one
                    gStarted.countDown();
                    await(holdG);
                });
                assertTrue(gStarted.await(10, TimeUnit.SECONDS));
                executor.sequential("h").execute(() -> {
                    hStarted.countDown();
                    await(holdH);
                });
                // Emptied while h waits, t goes round the ready queue behind h, instead of idling on its worker.
                holdT.countDown();
                assertTrue(hStarted.await(10, TimeUnit.SECONDS));
                holdG.countDown(); // the other worker takes t: a transfer
                long roundEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
                while (executor.statistics().transfers() == before && System.nanoTime() < roundEnd) {
                    Thread.sleep(1);
                }
                holdH.countDown();
                waitQuiescent(executor);
            }
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch holding = new CountDownLatch(2);
            for (int i = 0; i < 2; i++) {
                executor.execute(() -> {
                    holding.countDown();
                    await(release);
                });
            }
            try {
                assertTrue(holding.await(10, TimeUnit.SECONDS));
                for (int i = 0; i < 3; i++) {
                    executor.execute(() -> { });
                }
                waitFor(() -> executor.statistics().auxiliaryThreadsStarted() > 0
                        && executor.statistics().queued() == 0, executor);
            } finally {
                release.countDown();
            }
            waitQuiescent(executor);
            ExecutorStatistics s = executor.statistics();
            assertTrue(s.transfers() > 0, s.toString());
            assertEquals(1, s.auxiliaryThreadsStarted(), s.toString()); // the one thread over the core size
            assertDistinctFromEveryOther(s, "executor.transfers");
            assertDistinctFromEveryOther(s, "executor.threads.auxiliary.started");
            assertEveryMeterReads(registry, tags, s, MOVING);
        }
    }

    /**
     * A meter-removed listener that throws (Micrometer calls it inside remove, the meter already out) stops neither a
     * refused binding's roll-back nor a close: every meter goes, and the collision, or the listener's exception for
     * close, is what the caller gets. A loop that stopped at the first failure left the rest registered for good.
     */
    @Test
    void aThrowingRemovalListenerStopsNeitherARollBackNorAClose() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        registry.config().commonTags("application", "billing");
        AtomicInteger foreignFigure = new AtomicInteger(42);
        FunctionCounter foreign = FunctionCounter.builder("executor.delayed", foreignFigure, AtomicInteger::get)
                .tags("name", "gatling").register(registry);
        AtomicInteger failures = new AtomicInteger();
        registry.config().onMeterRemoved(m -> {
            if (failures.getAndIncrement() % 2 == 0) {
                throw new IllegalArgumentException("listener failed " + failures.get());
            }
        });
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build()) {
            GatlingExecutorMetrics refused = new GatlingExecutorMetrics(executor, Tags.empty());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> refused.bindTo(registry));
            assertTrue(e.getMessage().startsWith("Meter executor.delayed{"), e.getMessage());
            assertTrue(e.getSuppressed().length > 0, "the listener's exceptions, suppressed in the refusal");
            assertEquals(List.of(foreign), registry.getMeters());

            registry.remove(foreign);
            failures.set(0);
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(registry);
            assertEquals(METER_COUNT, registry.getMeters().size());
            IllegalArgumentException thrown = assertThrows(IllegalArgumentException.class, metrics::close);
            assertTrue(thrown.getMessage().startsWith("listener failed"), thrown.getMessage());
            assertNothingLeft(registry);
        }
    }

    /**
     * An Error from a listener, a checked exception a listener throws undeclared (as Kotlin code and sneaky throws do),
     * and one exception object a listener throws again and again stop neither a close nor a failed binding's roll-back,
     * and the caller gets the listener's own exception. The loops caught only RuntimeException, so an AssertionError
     * left 16 meters registered after close and 4 after a bindTo that failed (never recorded, so close could not reach
     * them, and a later bindTo took them for another binder's); and suppressing the same exception in itself threw,
     * leaving 15.
     */
    @Test
    void anyThrowableOfAListenerStopsNeitherACloseNorARollBack() {
        for (Throwable thrown : List.of(new AssertionError("listener assertion"),
                new IllegalStateException("one exception object"), new IOException("thrown undeclared"))) {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            registry.config().onMeterRemoved(m -> throwUndeclared(thrown));
            try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build()) {
                GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
                metrics.bindTo(registry);
                assertEquals(METER_COUNT, registry.getMeters().size());
                Throwable e = assertThrows(Throwable.class, metrics::close);
                assertSame(thrown, e);
                assertEquals(0, e.getSuppressed().length, "one exception object is recorded once");
                assertNothingLeft(registry);
            }
        }
        for (Throwable thrown : List.of(new AssertionError("added-listener assertion"),
                new IOException("added-listener, undeclared"))) {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AtomicInteger added = new AtomicInteger();
            registry.config().onMeterAdded(m -> {
                if (added.incrementAndGet() == 5) {
                    throwUndeclared(thrown);
                }
            });
            RuntimeException removal = new IllegalArgumentException("removal listener, every time");
            registry.config().onMeterRemoved(m -> {
                throw removal;
            });
            try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build();
                 GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty())) {
                Throwable e = assertThrows(Throwable.class, () -> metrics.bindTo(registry));
                assertSame(thrown, e);
                assertEquals(List.of(removal), List.of(e.getSuppressed()), "the removals' one exception, once");
                assertTrue(added.get() >= 5, "the listener ran for the fifth meter");
                assertNothingLeft(registry);
            }
        }
    }

    /**
     * A registry whose {@code getMeters} throws (a subclass of the caller's) does not keep close from the other
     * registries: they are emptied, and its exception is what close throws. Outside any catch, it ended close there,
     * and the registries close had not reached yet kept their meters. Close visits them in no set order, so the test
     * binds sixteen others: a close that stops passes only if the failing one comes last (one time in seventeen).
     */
    @Test
    void aRegistryThatFailsToListItsMetersKeepsCloseFromNoOtherRegistry() {
        AtomicBoolean failing = new AtomicBoolean();
        IllegalStateException failure = new IllegalStateException("getMeters failed");
        SimpleMeterRegistry flaky = new SimpleMeterRegistry() {
            @Override
            public List<Meter> getMeters() {
                if (failing.get()) {
                    throw failure;
                }
                return super.getMeters();
            }
        };
        List<SimpleMeterRegistry> others = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            others.add(new SimpleMeterRegistry());
        }
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build()) {
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty());
            metrics.bindTo(flaky);
            others.forEach(metrics::bindTo);
            failing.set(true);
            assertSame(failure, assertThrows(IllegalStateException.class, metrics::close));
            others.forEach(GatlingExecutorMetricsTest::assertNothingLeft);
        }
    }

    /** Throws {@code t} as it is, checked or not, as a listener written in Kotlin may. */
    private static void throwUndeclared(Throwable t) {
        GatlingExecutorMetricsTest.<RuntimeException>undeclared(t);
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void undeclared(Throwable t) throws T {
        throw (T) t;
    }

    /**
     * One binder's bindTo calls do not overlap: one started while another runs (here from a listener the first one set
     * off, on its own thread) is refused and registers nothing, and the first registers every meter. Overlapping, the
     * second took the first one's meters for another binder's, and its roll-back could remove them.
     */
    @Test
    void aBindToWhileAnotherOfTheSameBinderRunsIsRefusedAndTheFirstRegistersEverything() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build();
             GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty())) {
            List<Throwable> overlapping = new ArrayList<>(); // the listener runs on this thread
            registry.config().onMeterAdded(m -> {
                if (m.getId().getName().equals("executor.pool.size")) {
                    try {
                        metrics.bindTo(registry);
                    } catch (Throwable t) {
                        overlapping.add(t);
                    }
                }
            });
            metrics.bindTo(registry);
            assertEquals(1, overlapping.size(), () -> "the overlapping bindTo: " + overlapping);
            assertInstanceOf(IllegalStateException.class, overlapping.get(0));
            assertTrue(overlapping.get(0).getMessage().contains("Another bindTo"), overlapping.get(0).getMessage());
            assertEquals(METER_COUNT, registry.getMeters().size());
            metrics.bindTo(registry); // harmless once the first has returned
            assertEquals(METER_COUNT, registry.getMeters().size());
            metrics.close();
            assertNothingLeft(registry);
        }
    }

    /**
     * A composite is checked against its own meters: a second executor of the same name bound to it is refused, the
     * first one's meters (in the composite and, through it, in its member) untouched; close() empties both.
     */
    @Test
    void aCompositeIsCheckedAgainstItsOwnMetersAndCloseEmptiesItsMembers() {
        SimpleMeterRegistry member = new SimpleMeterRegistry();
        CompositeMeterRegistry composite = new CompositeMeterRegistry();
        composite.add(member);
        Tags tags = Tags.of("name", "gatling");
        try (GatlingExecutor first = GatlingExecutor.builder().coreThreads(1).maxThreads(3).build();
             GatlingExecutor second = GatlingExecutor.builder().coreThreads(1).maxThreads(5).build()) {
            GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(first, Tags.empty());
            metrics.bindTo(composite);
            Set<Meter> inComposite = identitySet(composite.getMeters());
            Set<Meter> inMember = identitySet(member.getMeters());
            assertEquals(METER_COUNT, inComposite.size());
            assertEquals(METER_COUNT, inMember.size());
            metrics.bindTo(composite); // harmless
            assertEquals(inComposite, identitySet(composite.getMeters()));

            GatlingExecutorMetrics refused = new GatlingExecutorMetrics(second, Tags.empty());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> refused.bindTo(composite));
            assertTrue(e.getMessage().contains("{name=gatling} is already in the registry"), e.getMessage());
            refused.close();
            assertEquals(inComposite, identitySet(composite.getMeters()));
            assertEquals(inMember, identitySet(member.getMeters()));
            assertEquals(3.0, read(composite, "executor.pool.max", tags));
            assertEquals(3.0, read(member, "executor.pool.max", tags));

            metrics.close();
            assertNothingLeft(composite);
            assertNothingLeft(member);
        }
    }

    /**
     * With common tags the pre-check cannot see a foreign executor.failed: the collision comes at the eighth meter,
     * and the seven registered before it are removed again. Of the same type, the registry returns the foreign meter;
     * of another type, it throws.
     */
    @Test
    void aCollisionFoundAsTheMetersRegisterRemovesTheOnesRegisteredBefore() {
        AtomicInteger foreignFigure = new AtomicInteger(42);
        SimpleMeterRegistry sameType = new SimpleMeterRegistry();
        sameType.config().commonTags("application", "billing");
        FunctionCounter foreignCounter = FunctionCounter.builder("executor.failed", foreignFigure, AtomicInteger::get)
                .tags("name", "gatling").register(sameType);
        SimpleMeterRegistry otherType = new SimpleMeterRegistry();
        otherType.config().commonTags("application", "billing");
        Gauge foreignGauge = Gauge.builder("executor.failed", foreignFigure, AtomicInteger::get)
                .tags("name", "gatling").register(otherType);
        try (GatlingExecutor executor = GatlingExecutor.builder().coreThreads(1).build();
             GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.empty())) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> metrics.bindTo(sameType));
            assertTrue(e.getMessage().startsWith("Meter executor.failed{application=billing, name=gatling} is already"
                    + " in the registry"), e.getMessage());
            assertEquals(List.of(foreignCounter), sameType.getMeters());

            e = assertThrows(IllegalStateException.class, () -> metrics.bindTo(otherType));
            assertTrue(e.getMessage().startsWith("Meter executor.failed{name=gatling} is already in the registry"),
                    e.getMessage());
            assertInstanceOf(IllegalArgumentException.class, e.getCause());
            assertEquals(List.of(foreignGauge), otherType.getMeters());

            metrics.close();
            assertEquals(List.of(foreignCounter), sameType.getMeters());
            assertEquals(List.of(foreignGauge), otherType.getMeters());
            assertEquals(42.0, foreignCounter.count());
            assertEquals(42.0, foreignGauge.value());
        }
    }

    /**
     * Micrometer runs meter listeners under its registry's lock. A listener that binds while another thread binds to
     * the listener's registry must not make the two wait for each other.
     */
    @Test
    @Timeout(30)
    void aListenerMayBindWhileAnotherThreadBinds() throws Exception {
        SimpleMeterRegistry observed = new SimpleMeterRegistry();
        SimpleMeterRegistry other = new SimpleMeterRegistry();
        try (GatlingExecutor a = GatlingExecutor.builder().name("a").coreThreads(1).build();
             GatlingExecutor b = GatlingExecutor.builder().name("b").coreThreads(1).build()) {
            GatlingExecutorMetrics fromListener = new GatlingExecutorMetrics(b, Tags.empty());
            AtomicReference<Thread> binder = new AtomicReference<>();
            AtomicBoolean binderWaited = new AtomicBoolean();
            CountDownLatch listening = new CountDownLatch(1);
            observed.config().onMeterAdded(m -> {
                if (m.getId().getName().equals("app.trigger")) {
                    listening.countDown();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    // The binder has reached the registry's lock, which this thread holds.
                    while ((binder.get() == null || binder.get().getState() != Thread.State.BLOCKED)
                            && System.nanoTime() < deadline) {
                        Thread.onSpinWait();
                    }
                    binderWaited.set(binder.get() != null && binder.get().getState() == Thread.State.BLOCKED);
                    fromListener.bindTo(other);
                }
            });
            Thread app = new Thread(() -> observed.counter("app.trigger"), "app");
            app.setDaemon(true);
            app.start();
            assertTrue(listening.await(10, TimeUnit.SECONDS));
            Thread t = new Thread(() -> new GatlingExecutorMetrics(a, Tags.empty()).bindTo(observed), "binder");
            t.setDaemon(true);
            binder.set(t);
            t.start();
            t.join(TimeUnit.SECONDS.toMillis(15));
            app.join(TimeUnit.SECONDS.toMillis(1));
            assertFalse(t.isAlive() || app.isAlive(), "deadlocked: binder " + t.getState() + ", app " + app.getState());
            // Otherwise the listener bound with nobody waiting for the registry, and the test tested nothing.
            assertTrue(binderWaited.get(), "the binder never waited for the registry the listener held");
            assertEquals(METER_COUNT + 1, observed.getMeters().size());
            assertEquals(METER_COUNT, other.getMeters().size());
            fromListener.close();
        }
    }

    /**
     * The figure of {@code name} differs in {@code s} from every other meter's that stands still, so none of them can
     * stand in for it.
     */
    private static void assertDistinctFromEveryOther(ExecutorStatistics s, String name) {
        double value = expected(name).value.applyAsDouble(s);
        for (Expected m : METERS) {
            if (!m.name.equals(name) && !MOVING.contains(m.name)) {
                assertFalse(m.value.applyAsDouble(s) == value, () -> name + " and " + m.name + " read alike in " + s);
            }
        }
    }

    /**
     * Each meter of {@link #METERS} but {@code skip}, looked up with its tags as its kind, has its base unit and reads
     * what {@code s} says.
     */
    private static void assertEveryMeterReads(MeterRegistry registry, Tags tags, ExecutorStatistics s,
                                              Set<String> skip) {
        for (Expected m : METERS) {
            if (!skip.contains(m.name)) {
                assertEquals(m.value.applyAsDouble(s), read(registry, m, tags), m.name + " vs " + s);
            }
        }
        assertEquals(s.oldestQueuedAge().toNanos() / 1e9, age(registry, tags).value(TimeUnit.SECONDS), 0.1);
    }

    /** The figures of the named meters differ pairwise in {@code s}, so no two of them can stand in for each other. */
    private static void assertDistinct(ExecutorStatistics s, String... names) {
        Map<Double, String> seen = new HashMap<>();
        for (String name : names) {
            String other = seen.put(expected(name).value.applyAsDouble(s), name);
            assertNull(other, () -> name + " and " + other + " read alike in " + s);
        }
    }

    private static double read(MeterRegistry registry, String name, Tags tags) {
        return read(registry, expected(name), tags);
    }

    private static double read(MeterRegistry registry, Expected m, Tags tags) {
        Meter meter;
        double value;
        if (m.kind == Kind.COUNTER) {
            FunctionCounter counter = registry.get(m.name).tags(tags).functionCounter();
            meter = counter;
            value = counter.count();
        } else {
            Gauge gauge = registry.get(m.name).tags(tags).gauge();
            assertFalse(gauge instanceof TimeGauge, m.name + " is a plain gauge");
            meter = gauge;
            value = gauge.value();
        }
        assertEquals(m.unit, meter.getId().getBaseUnit(), m.name + "'s base unit");
        return value;
    }

    private static TimeGauge age(MeterRegistry registry, Tags tags) {
        TimeGauge age = registry.get(AGE).tags(tags).timeGauge();
        assertEquals(TimeUnit.SECONDS, age.baseTimeUnit());
        assertEquals("seconds", age.getId().getBaseUnit());
        return age;
    }

    private static Expected expected(String name) {
        for (Expected m : METERS) {
            if (m.name.equals(name)) {
                return m;
            }
        }
        throw new AssertionError("no meter " + name);
    }

    private static Set<Meter> identitySet(List<Meter> meters) {
        Set<Meter> set = Collections.newSetFromMap(new IdentityHashMap<>());
        set.addAll(meters);
        return set;
    }

    private static void assertNothingLeft(MeterRegistry registry) {
        assertTrue(registry.getMeters().isEmpty(), () -> "left registered: " + registry.getMeters());
    }

    private static void waitQuiescent(GatlingExecutor e) throws InterruptedException {
        waitFor(() -> {
            ExecutorStatistics s = e.statistics();
            return s.submitted() == s.executed() + s.coalesced() + s.returned() && s.active() == 0;
        }, e);
    }

    private static void waitFor(BooleanSupplier condition, GatlingExecutor e) throws InterruptedException {
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
            assertEquals(BaseUnits.TASKS, completed.getId().getBaseUnit());
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
            assertEquals(1.0, read(registry, "executor.pool.size", Tags.empty()));
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
