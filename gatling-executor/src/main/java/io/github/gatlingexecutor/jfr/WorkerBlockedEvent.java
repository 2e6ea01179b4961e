package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * {@code io.github.gatlingexecutor.WorkerBlocked}: A worker has run one task for longer than blockedThreshold:
 * blocked, in I/O, or computing. Emitted once per stuck task, by the checker.
 */
@Name("io.github.gatlingexecutor.WorkerBlocked")
@Category("GatlingExecutor")
@Label("Worker Blocked")
@Description("A worker has run one task for longer than blockedThreshold: blocked, in I/O, or computing."
        + " Emitted once per stuck task, by the checker.")
@StackTrace(false)
public final class WorkerBlockedEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public WorkerBlockedEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** Worker Thread. */
    @Label("Worker Thread")
    public Thread worker;

    /** The context of the task, or empty for an unordered task. */
    @Label("Context")
    @Description("The context of the task, or empty for an unordered task")
    public String context;

    /** Task Class. */
    @Label("Task Class")
    public Class<?> taskClass;

    /**
     * How long the task had run when the checker found it stuck, timed from the latest moment the checker knows it had
     * not yet started (its worker taking its lane or task, or the check before): never less than it ran.
     */
    @Label("Running For")
    @Description("How long the task had run when the checker found it stuck (an upper bound: from when its worker took"
            + " its lane or task, or from the check before, whichever was later)")
    @Timespan(Timespan.NANOSECONDS)
    public long runningFor;
}
