package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * {@code io.github.gatlingexecutor.Statistics}: Every ExecutorStatistics counter of one executor, once per period.
 */
@Name("io.github.gatlingexecutor.Statistics")
@Category("GatlingExecutor")
@Label("Executor Statistics")
@Description("Every ExecutorStatistics counter of one executor, once per period.")
@StackTrace(false)
@Period("1 s")
public final class StatisticsEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public StatisticsEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** Submitted. */
    @Label("Submitted")
    public long submitted;

    /** Executed. */
    @Label("Executed")
    public long executed;

    /** Coalesced. */
    @Label("Coalesced")
    public long coalesced;

    /** Failed. */
    @Label("Failed")
    public long failed;

    /** Returned. */
    @Label("Returned")
    public long returned;

    /** Queued. */
    @Label("Queued")
    public long queued;

    /** Live Contexts. */
    @Label("Live Contexts")
    public long liveContexts;

    /** Threads. */
    @Label("Threads")
    public int threads;

    /** Peak Threads. */
    @Label("Peak Threads")
    public int peakThreads;

    /** Core Threads. */
    @Label("Core Threads")
    public int coreThreads;

    /** Auxiliary Threads Started. */
    @Label("Auxiliary Threads Started")
    public long auxiliaryThreadsStarted;

    /** Core Bumps. */
    @Label("Core Bumps")
    public long coreBumps;

    /** Transfers. */
    @Label("Transfers")
    public long transfers;

    /** Blocked Detections. */
    @Label("Blocked Detections")
    public long blockedDetections;

    /** Thread Start Failures. */
    @Label("Thread Start Failures")
    public long threadStartFailures;

    /** Workers running a task now. */
    @Label("Active")
    @Description("Workers running a task now")
    public int active;

    /** The cap on worker threads. */
    @Label("Max Threads")
    public int maxThreads;

    /** Submissions refused for capacity. */
    @Label("Rejected")
    @Description("Submissions refused for capacity (never for shutdown)")
    public long rejected;

    /** Submitters parked for room now. */
    @Label("Waiting Submitters")
    public int waitingSubmitters;

    /** Tasks accepted over a limit. */
    @Label("Accepted Over Limit")
    @Description("Tasks accepted over a limit: from a worker of the executor under block, or due scheduled tasks")
    public long acceptedOverLimit;

    /** How long the oldest waiting task has waited. */
    @Label("Oldest Queued Age")
    @Timespan(Timespan.NANOSECONDS)
    public long oldestQueuedAge;

    /** Scheduled tasks waiting for their due time. */
    @Label("Delayed")
    public long delayed;
}
