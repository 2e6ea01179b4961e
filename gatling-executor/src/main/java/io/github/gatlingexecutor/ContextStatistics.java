package io.github.gatlingexecutor;

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

    ContextStatistics(Object context, boolean coalescing, long submitted, long executed) {
        this.context = context;
        this.coalescing = coalescing;
        this.submitted = submitted;
        this.executed = executed;
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
     * Tasks of this lane that have started running (a coalescing lane's replaced tasks never do).
     *
     * @return the count
     */
    public long executed() { return executed; }

    @Override
    public String toString() {
        return (coalescing ? "coalescing(" : "sequential(") + context + "){submitted=" + submitted
                + ", executed=" + executed + '}';
    }
}
