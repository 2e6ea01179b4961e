package io.github.gatlingexecutor;

import java.time.Duration;

/**
 * A snapshot of a {@link ContextExecutor}'s counters, taken by {@link ContextExecutor#statistics()}.
 *
 * <p>Task counters count tasks that entered the pool: a task given to {@code execute}, a lane, {@code submit} or
 * {@code invoke*} counts once when accepted; a scheduled task counts each time it becomes due and enters the pool
 * (until then it counts in {@link #delayed()} only).
 * Once the executor is quiescent, {@code submitted = executed + coalesced + queued + returned}. Refused submissions
 * ({@link #rejected()}) were never accepted, so they are in none of these.
 */
public final class ExecutorStatistics {
    private final long submitted;
    private final long executed;
    private final long coalesced;
    private final long failed;
    private final long returned;
    private final long liveContexts;
    private final int threads;
    private final int peakThreads;
    private final int coreThreads;
    private final long auxiliaryThreadsStarted;
    private final long coreBumps;
    private final long transfers;
    private final long blockedDetections;
    private final long threadStartFailures;
    private final int active;
    private final int maxThreads;
    private final long queued;
    private final long rejected;
    private final int waitingSubmitters;
    private final long acceptedOverLimit;
    private final long oldestQueuedAgeNanos;
    private final long delayed;

    ExecutorStatistics(long submitted, long executed, long coalesced, long failed, long returned,
                       long liveContexts, int threads, int peakThreads, int coreThreads,
                       long auxiliaryThreadsStarted, long coreBumps, long transfers, long blockedDetections,
                       long threadStartFailures, int active, int maxThreads, long queued, long rejected,
                       int waitingSubmitters, long acceptedOverLimit, long oldestQueuedAgeNanos, long delayed) {
        this.submitted = submitted;
        this.executed = executed;
        this.coalesced = coalesced;
        this.failed = failed;
        this.returned = returned;
        this.liveContexts = liveContexts;
        this.threads = threads;
        this.peakThreads = peakThreads;
        this.coreThreads = coreThreads;
        this.auxiliaryThreadsStarted = auxiliaryThreadsStarted;
        this.coreBumps = coreBumps;
        this.transfers = transfers;
        this.blockedDetections = blockedDetections;
        this.threadStartFailures = threadStartFailures;
        this.active = active;
        this.maxThreads = maxThreads;
        this.queued = queued;
        this.rejected = rejected;
        this.waitingSubmitters = waitingSubmitters;
        this.acceptedOverLimit = acceptedOverLimit;
        this.oldestQueuedAgeNanos = oldestQueuedAgeNanos;
        this.delayed = delayed;
    }

    /**
     * Tasks accepted into the pool.
     *
     * @return the count
     */
    public long submitted() { return submitted; }

    /**
     * Tasks that ran, whether or not they threw (a cancelled {@code Future} that was reached counts too, and so does
     * the waiting run of a periodic task that was cancelled, which {@code shutdownNow()} does not return). A task
     * counts once it has ended (a {@code Future} just before it completes, so a caller who saw it done sees it here);
     * while it runs it is in {@link #active()}. {@link ContextStatistics#executed()} counts a lane's task from its
     * start.
     *
     * @return the count
     */
    public long executed() { return executed; }

    /**
     * Coalescing tasks dropped because a newer task of the same context replaced them before they started.
     *
     * @return the count
     */
    public long coalesced() { return coalesced; }

    /**
     * Tasks that ran and threw. A {@code Future} cancelled while its task ran is not counted, whatever the task then
     * threw: its caller sees the cancellation, not the throwable.
     *
     * @return the count
     */
    public long failed() { return failed; }

    /**
     * Tasks handed back, never started, by {@code shutdownNow()}. Delayed tasks that had not yet become due are handed
     * back too, but, never having entered the pool, they count neither here nor in {@link #submitted()}.
     *
     * @return the count
     */
    public long returned() { return returned; }

    /**
     * Accepted tasks that have not started: neither started, coalesced away, nor returned (a running task is not
     * queued). Once the executor is quiescent this is {@code submitted - executed - coalesced - returned}. Never
     * negative. While tasks flow it errs low rather than high: a task that starts during the snapshot may be left out,
     * but is not counted as waiting after it started.
     *
     * @return the count
     */
    public long queued() { return queued; }

    /**
     * Lanes that exist now: contexts with queued or running work, plus lanes emptied within the last few milliseconds
     * (an emptied lane stays mapped for a short grace so a context used again at once is cheap, then it is released).
     * After {@code shutdownNow()}, only the contexts whose task still runs. Zero once terminated.
     *
     * @return the number of lanes that exist now
     */
    public long liveContexts() { return liveContexts; }

    /**
     * Worker threads running now (the checker is not a worker). A worker counts from its first step on its own
     * thread: a start still in progress, which may yet fail, is not counted.
     *
     * @return worker threads running now
     */
    public int threads() { return threads; }

    /**
     * The most worker threads alive at once.
     *
     * @return the most worker threads alive at once
     */
    public int peakThreads() { return peakThreads; }

    /**
     * The current core size: the configured one plus every core bump.
     *
     * @return the core size now
     */
    public int coreThreads() { return coreThreads; }

    /**
     * Auxiliary threads started since construction.
     *
     * @return the count
     */
    public long auxiliaryThreadsStarted() { return auxiliaryThreadsStarted; }

    /**
     * Times the core size was raised by one because auxiliary threads were needed often.
     *
     * @return the count
     */
    public long coreBumps() { return coreBumps; }

    /**
     * Lane batches that ran on a different worker than the lane's previous batch.
     *
     * @return the count
     */
    public long transfers() { return transfers; }

    /**
     * Times the checker found a worker stuck in one task for longer than the blocked threshold.
     *
     * @return the count
     */
    public long blockedDetections() { return blockedDetections; }

    /**
     * Times a thread (a worker or the checker) could not be started: the thread factory threw, returned
     * {@code null} or gave a thread it had already started (refused, as {@code ThreadPoolExecutor} refuses it), or
     * {@code Thread.start} failed; or the thread it gave was found ended, a second or more after its start, without
     * having run the worker or the checker it was made for.
     *
     * @return the count
     */
    public long threadStartFailures() { return threadStartFailures; }

    /**
     * Tasks running now: started and not yet ended (a task that threw ends once the uncaught-exception handler has
     * returned). At most one per worker. Read without stopping the workers, so it can be a moment old.
     *
     * @return the number of tasks running
     */
    public int active() { return active; }

    /**
     * The configured cap on worker threads.
     *
     * @return {@code maxThreads}
     */
    public int maxThreads() { return maxThreads; }

    /**
     * Submissions refused for capacity: rejected at once by a limit, a blocked submitter that timed out or was
     * interrupted, or an {@code offer} that returned {@code false} because of a limit. Never a submission refused
     * because the executor was shut down. Zero for an unbounded executor.
     *
     * @return the count
     */
    public long rejected() { return rejected; }

    /**
     * Submitters parked now, waiting for room under {@link Overflow#block}. A submitter woken by the shutdown counts
     * until it has left; termination waits for that, so this is zero once terminated.
     *
     * @return the number of submitters waiting
     */
    public int waitingSubmitters() { return waitingSubmitters; }

    /**
     * Tasks accepted over a limit: submitted by a worker of this executor under {@link Overflow#block} (which is never
     * made to wait), or due scheduled tasks (which are never refused for capacity).
     *
     * @return the count
     */
    public long acceptedOverLimit() { return acceptedOverLimit; }

    /**
     * How long the oldest task accepted and not yet started has waited, anywhere in the executor; zero when nothing
     * waits. Tasks are stamped from a coarse clock (a few milliseconds), and the age is computed when the snapshot is
     * taken, so it keeps growing while every worker is stuck.
     *
     * @return the age of the oldest waiting task
     */
    public Duration oldestQueuedAge() { return Duration.ofNanos(oldestQueuedAgeNanos); }

    /**
     * Scheduled tasks waiting for their due time: delayed tasks, and periodic tasks between runs. They are accepted
     * (their {@code schedule*} call returned a future) but enter the pool only when due, so until then they count in
     * none of the task counters above, {@link #queued()} included, and not toward {@code maxQueued}; this is where a
     * monitor sees them. A periodic task's run that is due and waiting for a worker counts in {@link #queued()}
     * instead. Read without the timer's lock: while tasks are scheduled and fall due it may be a moment old.
     *
     * @return the number of scheduled tasks not yet due
     */
    public long delayed() { return delayed; }

    @Override
    public String toString() {
        return "ExecutorStatistics{submitted=" + submitted + ", executed=" + executed + ", coalesced=" + coalesced
                + ", failed=" + failed + ", returned=" + returned + ", queued=" + queued()
                + ", liveContexts=" + liveContexts + ", threads=" + threads + ", peakThreads=" + peakThreads
                + ", coreThreads=" + coreThreads + ", auxiliaryThreadsStarted=" + auxiliaryThreadsStarted
                + ", coreBumps=" + coreBumps + ", transfers=" + transfers
                + ", blockedDetections=" + blockedDetections + ", threadStartFailures=" + threadStartFailures
                + ", active=" + active + ", maxThreads=" + maxThreads + ", rejected=" + rejected
                + ", waitingSubmitters=" + waitingSubmitters + ", acceptedOverLimit=" + acceptedOverLimit
                + ", oldestQueuedAge=" + oldestQueuedAge() + ", delayed=" + delayed + '}';
    }
}
