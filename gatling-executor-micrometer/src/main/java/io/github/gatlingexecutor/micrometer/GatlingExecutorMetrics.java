package io.github.gatlingexecutor.micrometer;

import io.github.gatlingexecutor.ContextExecutor;
import io.github.gatlingexecutor.ExecutorStatistics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;

/**
 * Binds a {@link ContextExecutor}'s {@link ExecutorStatistics} to Micrometer registries, tagged {@code name} = the
 * executor's name plus the given tags.
 *
 * <p>Seventeen meters. Micrometer's own executor names where they exist: {@code executor.completed} (tasks that ran),
 * {@code executor.queued}, {@code executor.active}, {@code executor.pool.size}, {@code executor.pool.core},
 * {@code executor.pool.max}; and for what only this executor has: {@code executor.coalesced},
 * {@code executor.failed}, {@code executor.contexts.live}, {@code executor.threads.auxiliary.started},
 * {@code executor.blocked} (stuck workers detected), {@code executor.transfers}, {@code executor.rejected}
 * (submissions refused for capacity), {@code executor.queue.oldest.age} (a time gauge: how long the oldest waiting
 * task has waited), {@code executor.submitters.waiting}, {@code executor.accepted.over.limit} and
 * {@code executor.delayed} (scheduled tasks not yet due). The counts that only grow are function counters, the rest
 * gauges.
 *
 * <p>Every meter is function-based: nothing runs on the executor's hot path. A meter reads a fresh
 * {@link ContextExecutor#statistics()} snapshot when the registry asks for its value, so each meter's value is of
 * its own instant, and a scrape of the seventeen takes seventeen snapshots. A snapshot costs a few dozen reads plus a
 * walk of what waits in the ready queue: about 5 ms with a million lanes waiting on a 2-core VM, 0.1 s a scrape. The
 * meters hold the executor weakly, as Micrometer's function-based meters do, so binding does not keep it alive. A
 * {@link io.github.gatlingexecutor.GatlingExecutor} keeps itself reachable while it has threads, lane handles or
 * futures in use, so its meters read on for as long as it runs, whatever the caller keeps.
 *
 * <p>A registry knows a meter by its name and tags, so the executor's name plus the extra tags must be unique among
 * the executors bound to one registry (every executor built without a name is named {@code "gatling"}):
 * {@link #bindTo} refuses a second executor whose meters would be the first one's. {@link #close()} removes the meters
 * again, from every registry this binder was bound to; close the binder when the executor is closed, else its meters
 * stay registered and read what the executor last counted (or {@code NaN} once it is collected). A closed binder
 * cannot be bound again: make a new one.
 *
 * <p>Thread-safe: {@code bindTo} and {@code close} may be called from any thread, concurrently.
 *
 * <pre>{@code
 * GatlingExecutor executor = GatlingExecutor.builder().name("orders").build();
 * GatlingExecutorMetrics metrics = new GatlingExecutorMetrics(executor, Tags.of("service", "billing"));
 * metrics.bindTo(registry);
 * ...
 * executor.close();
 * metrics.close();
 * }</pre>
 */
public final class GatlingExecutorMetrics implements MeterBinder, AutoCloseable {
    /**
     * Guards every binder's state. One lock for all binders, so that two binders' check-then-register on one registry
     * cannot interleave: both would pass the check, and the second would get the first one's meters back.
     */
    private static final Object LOCK = new Object();

    private static final List<Spec> METERS = List.of(
            new Spec(Kind.COUNTER, "executor.completed", "Tasks that ran, whether or not they threw",
                    BaseUnits.TASKS, ExecutorStatistics::executed),
            new Spec(Kind.GAUGE, "executor.queued", "Tasks accepted and not yet started",
                    BaseUnits.TASKS, ExecutorStatistics::queued),
            new Spec(Kind.GAUGE, "executor.active", "Workers running a task now",
                    BaseUnits.THREADS, ExecutorStatistics::active),
            new Spec(Kind.GAUGE, "executor.pool.size", "Worker threads alive now",
                    BaseUnits.THREADS, ExecutorStatistics::threads),
            new Spec(Kind.GAUGE, "executor.pool.core", "The core size now (configured plus core bumps)",
                    BaseUnits.THREADS, ExecutorStatistics::coreThreads),
            new Spec(Kind.GAUGE, "executor.pool.max", "The cap on worker threads",
                    BaseUnits.THREADS, ExecutorStatistics::maxThreads),
            new Spec(Kind.COUNTER, "executor.coalesced", "Coalescing tasks replaced before they started",
                    BaseUnits.TASKS, ExecutorStatistics::coalesced),
            new Spec(Kind.COUNTER, "executor.failed", "Tasks that ran and threw",
                    BaseUnits.TASKS, ExecutorStatistics::failed),
            new Spec(Kind.GAUGE, "executor.contexts.live", "Lanes that exist now",
                    "contexts", ExecutorStatistics::liveContexts),
            new Spec(Kind.COUNTER, "executor.threads.auxiliary.started", "Auxiliary worker threads started",
                    BaseUnits.THREADS, ExecutorStatistics::auxiliaryThreadsStarted),
            new Spec(Kind.COUNTER, "executor.blocked",
                    "Workers found stuck in one task longer than the blocked threshold",
                    "detections", ExecutorStatistics::blockedDetections),
            new Spec(Kind.COUNTER, "executor.transfers",
                    "Lane batches that ran on another worker than the previous one",
                    "transfers", ExecutorStatistics::transfers),
            new Spec(Kind.COUNTER, "executor.rejected", "Submissions refused for capacity (never for shutdown)",
                    BaseUnits.TASKS, ExecutorStatistics::rejected),
            new Spec(Kind.GAUGE, "executor.submitters.waiting", "Submitters parked for room now",
                    "submitters", ExecutorStatistics::waitingSubmitters),
            new Spec(Kind.COUNTER, "executor.accepted.over.limit",
                    "Tasks accepted over a limit (from the executor's own workers under block, or due scheduled tasks)",
                    BaseUnits.TASKS, ExecutorStatistics::acceptedOverLimit),
            new Spec(Kind.GAUGE, "executor.delayed",
                    "Scheduled tasks waiting for their due time (in no other count yet)",
                    BaseUnits.TASKS, ExecutorStatistics::delayed),
            new Spec(Kind.TIME_GAUGE, "executor.queue.oldest.age",
                    "How long the oldest task accepted and not yet started has waited",
                    null, s -> s.oldestQueuedAge().toNanos()));

    private final ContextExecutor executor;
    private final Tags tags;
    /** The meters this binder registered, by registry (by identity: registries need not be equal-comparable). */
    private final Map<MeterRegistry, List<Meter>> bound = new IdentityHashMap<>(); // guarded by LOCK
    private boolean closed; // guarded by LOCK

    /**
     * A binder for {@code executor}.
     *
     * @param executor the executor to observe
     * @param tags extra tags for every meter ({@code name} is added)
     * @throws NullPointerException if {@code executor} or {@code tags} is null
     */
    public GatlingExecutorMetrics(ContextExecutor executor, Iterable<Tag> tags) {
        this.executor = Objects.requireNonNull(executor, "executor");
        this.tags = Tags.concat(Objects.requireNonNull(tags, "tags"), "name", executor.name());
    }

    /**
     * Registers the seventeen meters in {@code registry}, all or none. Binding again to a registry this binder is
     * bound to registers only what was removed from it since, and is otherwise harmless.
     *
     * <p>A meter of one of these names with exactly these tags (not more) that this binder did not register refuses
     * the whole binding: every id is checked before any meter is registered, and the {@code IllegalStateException}
     * names the meter and its tags. That is typically another executor of the same name bound to the same registry;
     * close its binder first, or give this executor a distinct name or an extra tag. If the registry's meter filters
     * (common tags, say) map an id onto a meter already there, that is seen only as the meter is registered: the
     * meters this call registered are removed again before the same exception is thrown.
     *
     * @param registry the registry to register the meters in
     * @throws IllegalStateException if the registry holds a meter with one of these names and tags that this binder
     *         did not register, or if this binder is closed
     * @throws NullPointerException if {@code registry} is null
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        synchronized (LOCK) {
            if (closed) {
                throw new IllegalStateException("This GatlingExecutorMetrics of executor '" + executor.name()
                        + "' is closed and binds no more; bind a new one");
            }
            List<Meter> previous = bound.get(registry); // in the order of METERS
            Set<Meter> own = identitySet(previous == null ? List.of() : previous);
            Set<Meter> present = identitySet(registry.getMeters());
            for (Meter m : present) {
                if (!own.contains(m) && isOneOfMine(m.getId())) {
                    throw collision(m.getId());
                }
            }
            List<Meter> registered = new ArrayList<>(METERS.size());
            for (int i = 0; i < METERS.size(); i++) {
                if (previous != null && present.contains(previous.get(i))) {
                    registered.add(previous.get(i)); // registering it again would only log a warning
                    continue;
                }
                Meter m = METERS.get(i).register(registry, executor, tags);
                if (present.contains(m) && !own.contains(m)) {
                    for (Meter r : registered) {
                        if (!present.contains(r)) {
                            registry.remove(r);
                        }
                    }
                    throw collision(m.getId());
                }
                registered.add(m);
            }
            bound.put(registry, registered);
        }
    }

    /**
     * Removes the meters this binder registered from every registry it was bound to, and closes this binder: a later
     * {@link #bindTo} throws {@code IllegalStateException}. A meter already removed by other means is left alone, and
     * so is one registered in its place. Idempotent.
     */
    @Override
    public void close() {
        synchronized (LOCK) {
            if (closed) {
                return;
            }
            closed = true;
            for (Map.Entry<MeterRegistry, List<Meter>> e : bound.entrySet()) {
                MeterRegistry registry = e.getKey();
                // Removal goes by id: only a meter still there itself is removed, never another one of its id.
                Set<Meter> present = identitySet(registry.getMeters());
                for (Meter m : e.getValue()) {
                    if (present.contains(m)) {
                        registry.remove(m);
                    }
                }
            }
            bound.clear();
        }
    }

    private boolean isOneOfMine(Meter.Id id) {
        if (!tags.equals(Tags.of(id.getTags()))) {
            return false;
        }
        for (Spec spec : METERS) {
            if (spec.name.equals(id.getName())) {
                return true;
            }
        }
        return false;
    }

    private IllegalStateException collision(Meter.Id id) {
        String tagList = id.getTags().stream().map(t -> t.getKey() + "=" + t.getValue())
                .collect(Collectors.joining(", ", "{", "}"));
        return new IllegalStateException("Meter " + id.getName() + tagList + " is already in the registry and was not"
                + " registered by this binder: an executor's meters need a name and tags no other executor bound to"
                + " the registry has. Close the binder that registered it first, or give this executor ('"
                + executor.name() + "') a distinct name (GatlingExecutor.builder().name(..)) or an extra tag");
    }

    /** Meters compare equal by id; ownership is a matter of identity. */
    private static Set<Meter> identitySet(List<Meter> meters) {
        Set<Meter> set = Collections.newSetFromMap(new IdentityHashMap<>(meters.size() * 2));
        set.addAll(meters);
        return set;
    }

    private enum Kind { COUNTER, GAUGE, TIME_GAUGE }

    /** One meter; {@code unit} is null for the time gauge, whose unit is the registry's base time unit. */
    private record Spec(Kind kind, String name, String description, String unit,
                        ToDoubleFunction<ExecutorStatistics> value) {

        Meter register(MeterRegistry registry, ContextExecutor executor, Tags tags) {
            ToDoubleFunction<ContextExecutor> read = e -> value.applyAsDouble(e.statistics());
            return switch (kind) {
                case COUNTER -> FunctionCounter.builder(name, executor, read)
                        .tags(tags).description(description).baseUnit(unit).register(registry);
                case GAUGE -> Gauge.builder(name, executor, read)
                        .tags(tags).description(description).baseUnit(unit).register(registry);
                case TIME_GAUGE -> TimeGauge.builder(name, executor, TimeUnit.NANOSECONDS, read)
                        .tags(tags).description(description).register(registry);
            };
        }
    }
}
