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
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
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
 * stay registered and read what the executor last counted (once it is collected, the gauges read {@code NaN} and
 * the counters stop counting: a cumulative registry keeps reporting the last value read, a step registry no increase).
 * A closed binder cannot be bound again: make a new one.
 *
 * <p>Thread-safe: {@code bindTo} and {@code close} may be called from any thread, concurrently, and from meter
 * filters and listeners: no lock of this class is held while Micrometer runs. One binder's {@code bindTo} calls do
 * not overlap, though: one made while another of the same binder runs is refused ({@link IllegalStateException}).
 *
 * <p>The meters count the executor's tasks. An executor shared with other code counts theirs too, and one that runs
 * a {@code KafkaProcessor}'s handlers counts its tasks, not records (a task may handle a batch of records, and
 * catches what a handler throws, so {@code executor.failed} never counts a failed record): the processor's own
 * statistics count records.
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
    /*
     * Locking. LOCK guards every binder's bound and closed, and is never held while calling into Micrometer:
     * Micrometer calls meter filters and meter-added/removed listeners under its registry's own lock, and they may
     * call bindTo or close of any binder. So the only order is "a registry's lock, then LOCK" (LOCK is a leaf: nothing
     * is acquired while holding it), and no cycle of waits can form through a binder. Not even a lock per registry is
     * held across a registration: a listener of that registry binding to it, on a thread that holds the registry's
     * lock, would wait for a binder that waits for that lock.
     *
     * So the calls into Micrometer of different binders interleave freely. One binder's bindTo calls do not overlap:
     * one that finds another running (on another thread, or from a listener the first one set off) is refused at once,
     * since its check would take the meters the first one is registering for another binder's, and its roll-back could
     * remove them. A bindTo racing close of the same binder finds it closed when it records its meters, and removes
     * what it registered.
     * What a check cannot see is a registration that comes between it and the binder's own: two binders of one name
     * and tags binding to one registry at the same instant may both pass, the second then reading the first one's
     * meters, and a close's check-then-remove may remove a meter that other code re-registered in between. Making
     * those exact would take a claim on the registry that outlives the call, and so a table of registries that keeps
     * them reachable; a binding is made once, at start-up, and the sequential cases are the ones met in practice.
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

    /**
     * Empty once closed: a closed binder a caller keeps (a bean's field, say) no longer keeps the executor. Written
     * under LOCK; a final field's reference, so that a binder published without a happens-before edge still shows the
     * executor.
     */
    private final AtomicReference<ContextExecutor> executor;
    private final String executorName;
    private final Tags tags;
    /** This binder's meters in each registry it was bound to, in the order of METERS. */
    private final Map<MeterRegistry, Meter[]> bound = new IdentityHashMap<>(); // guarded by LOCK
    private boolean closed; // guarded by LOCK
    private boolean binding; // guarded by LOCK: a bindTo of this binder is running

    /**
     * A binder for {@code executor}.
     *
     * @param executor the executor to observe
     * @param tags extra tags for every meter; the binder adds {@code name}, the executor's name
     * @throws NullPointerException if {@code executor} or {@code tags} is null, or if {@code executor.name()} returns
     *         null (a {@code ContextExecutor} of another implementation: every meter is tagged with it)
     * @throws IllegalArgumentException if {@code tags} has a {@code name} tag: the executor's name would silently
     *         replace it (name the executor instead, or use another key)
     */
    public GatlingExecutorMetrics(ContextExecutor executor, Iterable<Tag> tags) {
        this.executor = new AtomicReference<>(Objects.requireNonNull(executor, "executor"));
        this.executorName = Objects.requireNonNull(executor.name(), "executor.name()");
        Tags extra = Tags.of(Objects.requireNonNull(tags, "tags"));
        extra.stream().filter(t -> t.getKey().equals("name")).findFirst().ifPresent(t -> {
            throw new IllegalArgumentException("tags must not have a 'name' tag (was name=" + t.getValue()
                    + "): every meter is tagged name=" + executorName + ", the executor's name");
        });
        this.tags = extra.and("name", executorName);
    }

    /**
     * Registers the seventeen meters in {@code registry}, all or none. Binding again to a registry this binder is
     * bound to registers only what was removed from it since, and is otherwise harmless.
     *
     * <p>Refused with an {@code IllegalStateException} that names the meter and its tags, registering nothing, when the
     * registry holds a meter of one of these names with exactly these tags (not more) that this binder did not
     * register. That is typically another executor of the same name bound to the same registry; close its binder first,
     * or give this executor a distinct name or an extra tag. If the registry's meter filters (common tags, say) map an
     * id onto a meter already there, that is seen only as the meters are registered; then, as for any other exception a
     * registration throws, the meters this call registered are removed again before it is thrown (a meter of another
     * type is reported as this {@code IllegalStateException}, with Micrometer's exception as its cause; what a removal
     * throws is suppressed in it, and does not stop the other removals). Not detected, and taken for this binder's own:
     * a meter of one of these ids that other code (another binder included) registers while this call runs; two binders
     * of one name and tags binding to one registry at the same instant may therefore both succeed, the second reading
     * the first one's meters. A call made while another {@code bindTo} of this binder runs (on another thread, or from
     * a meter filter or listener it set off) is refused with an {@code IllegalStateException}, registering nothing.
     *
     * <p>A {@link CompositeMeterRegistry} is checked against its own meters only. Its members, which hold a meter of
     * their own for each of its meters under ids their own filters may change, are not looked at, and Micrometer
     * removes a composite's meter from its members by id: a binder bound to a composite and another bound directly to
     * one of its members are not told apart, and the first one's {@link #close()} (or a refused binding's roll-back)
     * removes the members' meters of its ids whoever registered them. Micrometer also makes a composite meter's
     * copies in the members before the composite's own listeners run: when one of those throws, the composite never
     * hands that meter back, and a roll-back cannot remove its copies. Bind every executor to the same registry.
     *
     * @param registry the registry to register the meters in
     * @throws IllegalStateException if the meters would collide as above, if this binder is closed, or if another
     *         {@code bindTo} of this binder is running
     * @throws NullPointerException if {@code registry} is null
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        ContextExecutor observed;
        synchronized (LOCK) {
            checkOpen();
            observed = executor.get();
            if (binding) {
                throw new IllegalStateException("Another bindTo of this GatlingExecutorMetrics of executor '"
                        + executorName + "' is running; bind it once at a time");
            }
            binding = true;
        }
        try {
            register(registry, observed);
        } finally {
            synchronized (LOCK) {
                binding = false;
            }
        }
    }

    private void register(MeterRegistry registry, ContextExecutor observed) {
        Set<Meter> own;
        Meter[] previous;
        synchronized (LOCK) {
            previous = bound.get(registry);
            own = identitySet(previous);
        }
        List<Meter> before = registry.getMeters();
        for (Meter m : before) {
            if (!own.contains(m) && isOneOfMine(m.getId())) {
                throw collision(m.getId().getName(), m.getId().getTags(), null);
            }
        }
        Set<Meter> present = identitySet(before);
        Meter[] registered = new Meter[METERS.size()];
        List<Meter> added = new ArrayList<>(); // registered by this call: what a failure removes again
        try {
            for (int i = 0; i < METERS.size(); i++) {
                if (previous != null && present.contains(previous[i])) {
                    registered[i] = previous[i]; // registering it again would only log a warning
                    continue;
                }
                Meter m = registerOrRefuse(METERS.get(i), registry, observed);
                if (!present.contains(m)) {
                    added.add(m);
                } else if (!own.contains(m)) {
                    throw collision(m.getId().getName(), m.getId().getTags(), null);
                }
                registered[i] = m;
            }
        } catch (Throwable e) {
            // Whatever it is (an Error, a listener's assertion; a checked exception a listener threw undeclared, as
            // Kotlin and sneaky throws do): the meters registered so far are not yet in bound, so nothing else would
            // ever remove them.
            throw rethrow(removeEach(registry, added, e));
        }
        boolean closedMeanwhile;
        synchronized (LOCK) {
            closedMeanwhile = closed;
            if (!closedMeanwhile) {
                bound.put(registry, registered);
            }
        }
        if (closedMeanwhile) { // close() ran during this call and did not see these meters
            throw rethrow(removeEach(registry, added, closedException()));
        }
    }

    /** Micrometer refuses a meter of another type under an id already taken with an IllegalArgumentException. */
    private Meter registerOrRefuse(Spec spec, MeterRegistry registry, ContextExecutor observed) {
        try {
            return spec.register(registry, observed, tags);
        } catch (IllegalArgumentException e) {
            if (String.valueOf(e.getMessage()).contains("different type")) {
                throw collision(spec.name, tags, e);
            }
            throw e;
        }
    }

    /**
     * Removes the meters this binder registered from every registry it was bound to, and closes this binder: a later
     * {@link #bindTo} throws {@code IllegalStateException}. A meter already removed by other means is left alone, and
     * so is one registered in its place since; one re-registered in its place at the instant of the removal may be
     * removed with it (a registry removes by id). What a removal throws (a meter-removed listener's exception) does not
     * stop the others: once every meter was tried, the first is thrown, the later ones suppressed in it. Idempotent.
     * Until closed, a binder keeps the registries it was bound to, and its executor, reachable for as long as it is
     * itself; closed, neither.
     */
    @Override
    public void close() {
        Map<MeterRegistry, Meter[]> toRemove;
        synchronized (LOCK) {
            if (closed) {
                return;
            }
            closed = true;
            executor.set(null);
            toRemove = new IdentityHashMap<>(bound);
            bound.clear();
        }
        Throwable failure = null;
        for (Map.Entry<MeterRegistry, Meter[]> e : toRemove.entrySet()) {
            MeterRegistry registry = e.getKey();
            // Removal goes by id: only a meter still there itself is removed, never another one of its id (in this
            // registry: a composite's removal reaches its members by id, see bindTo).
            Set<Meter> present;
            try {
                present = identitySet(registry.getMeters());
            } catch (Throwable t) { // a registry of the caller's that overrides getMeters: the others still go
                failure = record(failure, t);
                continue;
            }
            List<Meter> mine = new ArrayList<>();
            for (Meter m : e.getValue()) {
                if (present.contains(m)) {
                    mine.add(m);
                }
            }
            failure = removeEach(registry, mine, failure);
        }
        if (failure != null) {
            throw rethrow(failure);
        }
    }

    /**
     * Removes each of {@code meters}; what a removal throws (a meter-removed listener's exception: Micrometer calls
     * them inside {@code remove}, once the meter is out) does not stop the others, which would otherwise stay
     * registered with no binder to remove them. Whatever is thrown: an {@code Error}, or a checked exception thrown
     * undeclared, stops nothing either, since the binder is closed (or the meters were never recorded) and nobody could
     * remove what a stopped loop left. Returns what {@link #record} makes of {@code failure} and what was thrown.
     */
    private static Throwable removeEach(MeterRegistry registry, List<Meter> meters, Throwable failure) {
        for (Meter m : meters) {
            try {
                registry.remove(m);
            } catch (Throwable t) {
                failure = record(failure, t);
            }
        }
        return failure;
    }

    /**
     * {@code thrown} if it is the first failure, else {@code failure} with {@code thrown} suppressed in it, once: a
     * listener that throws one exception object for every meter has it recorded once (suppressing an exception in
     * itself throws, and a copy per meter says nothing more).
     */
    private static Throwable record(Throwable failure, Throwable thrown) {
        if (failure == null) {
            return thrown;
        }
        if (thrown != failure && !Arrays.asList(failure.getSuppressed()).contains(thrown)) { // Throwable: identity
            failure.addSuppressed(thrown);
        }
        return failure;
    }

    /**
     * Throws {@code failure} as it is, checked or not (a checked one came from code that threw it undeclared, and
     * wrapping it would change what the caller catches). Declared to return an exception so that callers can write
     * {@code throw rethrow(..)}; it never returns.
     */
    private static RuntimeException rethrow(Throwable failure) {
        throw GatlingExecutorMetrics.<RuntimeException>sneaky(failure);
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> T sneaky(Throwable failure) throws T {
        throw (T) failure;
    }

    private void checkOpen() {
        if (closed) {
            throw closedException();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException("This GatlingExecutorMetrics of executor '" + executorName
                + "' is closed and binds no more; bind a new one");
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

    private IllegalStateException collision(String name, Iterable<Tag> meterTags, Throwable cause) {
        String tagList = Tags.of(meterTags).stream().map(t -> t.getKey() + "=" + t.getValue())
                .collect(Collectors.joining(", ", "{", "}"));
        return new IllegalStateException("Meter " + name + tagList + " is already in the registry and was not"
                + " registered by this binder: an executor's meters need a name and tags no other executor bound to"
                + " the registry has. Close the binder that registered it first, or give this executor ('"
                + executorName + "') a distinct name (GatlingExecutor.builder().name(..)) or an extra tag", cause);
    }

    /** Meters compare equal by id; ownership is a matter of identity. */
    private static Set<Meter> identitySet(Collection<Meter> meters) {
        Set<Meter> set = Collections.newSetFromMap(new IdentityHashMap<>());
        set.addAll(meters);
        return set;
    }

    private static Set<Meter> identitySet(Meter[] meters) {
        return identitySet(meters == null ? List.of() : Arrays.asList(meters));
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
