package io.github.gatlingexecutor;

import java.time.Duration;

/**
 * Counters of one live context's lane, as reported by {@link ContextExecutor#contextStatistics()}.
 *
 * <p>The counters start when the lane is created; a context whose lane was released and is used again starts from
 * zero.
 */
public final class ContextStatistics {
    private final Object context;
    private final boolean coalescing;
    private final long submitted;
    private final long executed;
    private final long queued;
    private final long oldestQueuedAgeNanos;

    ContextStatistics(Object context, boolean coalescing, long submitted, long executed, long queued,
                      long oldestQueuedAgeNanos) {
        this.context = context;
        this.coalescing = coalescing;
        this.submitted = submitted;
        this.executed = executed;
        this.queued = queued;
        this.oldestQueuedAgeNanos = oldestQueuedAgeNanos;
    }

    /**
     * The context this lane belongs to.
     *
     * @return the context
     */
    public Object context() { return context; }

    /**
     * {@code true} for a coalescing lane, {@code false} for a sequential one.
     *
     * @return whether the lane is a coalescing one
     */
    public boolean coalescing() { return coalescing; }

    /**
     * Tasks accepted into this lane since it was created.
     *
     * @return the count
     */
    public long submitted() { return submitted; }

    /**
     * Tasks of this lane that have started running, the running one included (a coalescing lane's replaced tasks
     * never do); {@link ExecutorStatistics#executed()} counts a task only once it has ended.
     *
     * @return the count
     */
    public long executed() { return executed; }

    /**
     * Tasks of this lane accepted and not yet started (not the running one); at most 1 for a coalescing lane.
     *
     * @return the count
     */
    public long queued() { return queued; }

    /**
     * How long the oldest waiting task of this lane has waited; zero when none waits. For a coalescing lane it is the
     * age of the oldest update not yet served: a replacement keeps the stamp of the task it replaced, so a lane whose
     * updates keep coming but never run shows its true staleness. Coarse (a few milliseconds).
     *
     * @return the age of the oldest waiting task of this lane
     */
    public Duration oldestQueuedAge() { return Duration.ofNanos(oldestQueuedAgeNanos); }

    @Override
    public String toString() {
        return (coalescing ? "coalescing(" : "sequential(") + context + "){submitted=" + submitted
                + ", executed=" + executed + ", queued=" + queued + ", oldestQueuedAge=" + oldestQueuedAge() + '}';
    }
}
