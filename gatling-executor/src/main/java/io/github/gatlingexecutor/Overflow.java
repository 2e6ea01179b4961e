package io.github.gatlingexecutor;

import java.time.Duration;
import java.util.Objects;

/**
 * What a submission does when accepting its task would go over {@link GatlingExecutor.Builder#maxQueued(int)} or
 * {@link GatlingExecutor.Builder#maxQueuedPerContext(int)}. Immutable; obtained from {@link #reject()} or
 * {@link #block(Duration)}.
 */
public final class Overflow {
    private static final Overflow REJECT = new Overflow(0);

    /** 0 for reject; the longest wait otherwise. */
    final long maxWaitNanos;

    private Overflow(long maxWaitNanos) {
        this.maxWaitNanos = maxWaitNanos;
    }

    /**
     * The default: the submission throws {@link java.util.concurrent.RejectedExecutionException} at once, with a
     * message naming the limit, its value and (for a lane task) the context. {@code offer} returns {@code false}.
     *
     * @return the reject policy
     */
    public static Overflow reject() {
        return REJECT;
    }

    /**
     * The submitter parks until its task fits, then the task is accepted; after {@code maxWait} it gets
     * {@link java.util.concurrent.RejectedExecutionException}. Waiting submitters are admitted in arrival order;
     * an interrupted one, or one woken by {@code shutdown()}, gets the exception (an interrupted one keeps its
     * interrupt status). A worker of the same executor is never made to wait: its task is accepted over the limit
     * and counted in {@link ExecutorStatistics#acceptedOverLimit()}. Nor is a submission made from a context's
     * {@code equals} or {@code hashCode}, or from the thread factory, while the executor runs it to admit waiting
     * submitters or to dispatch a scheduled task, or on its checker thread: it holds a lock of the executor's there
     * (or is its checker), so it is rejected at once rather than wait.
     *
     * @param maxWait the longest a submitter waits for room
     * @return a block policy
     * @throws NullPointerException if {@code maxWait} is null
     * @throws IllegalArgumentException if {@code maxWait} is zero or negative
     */
    public static Overflow block(Duration maxWait) {
        Objects.requireNonNull(maxWait, "maxWait");
        if (maxWait.isNegative() || maxWait.isZero()) {
            throw new IllegalArgumentException("maxWait must be positive, was " + maxWait);
        }
        long nanos;
        try {
            nanos = maxWait.toNanos();
        } catch (ArithmeticException tooLong) {
            nanos = Long.MAX_VALUE;
        }
        return new Overflow(Math.max(1, nanos));
    }

    /** Whether submitters wait for room (as opposed to being rejected at once). */
    boolean blocks() {
        return maxWaitNanos > 0;
    }

    @Override
    public String toString() {
        return blocks() ? "Overflow.block(" + Duration.ofNanos(maxWaitNanos) + ")" : "Overflow.reject()";
    }
}
