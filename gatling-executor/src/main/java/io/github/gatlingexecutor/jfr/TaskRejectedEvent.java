package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * {@code io.github.gatlingexecutor.TaskRejected}: a submission was refused for capacity (a limit was reached under
 * the reject policy, a blocked submitter timed out or was interrupted, or an {@code offer} returned false). The stack
 * trace is the submitter's.
 */
@Name("io.github.gatlingexecutor.TaskRejected")
@Category("GatlingExecutor")
@Label("Task Rejected")
@Description("A submission was refused for capacity")
@StackTrace(true)
public final class TaskRejectedEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public TaskRejectedEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** The task's context, or empty for an unordered task. */
    @Label("Context")
    @Description("The task's context (its toString), empty for an unordered task")
    public String context;

    /** Which limit refused the task, with its value, and why the submitter gave up. */
    @Label("Limit")
    @Description("Which limit refused the task, its value, and why the submitter gave up")
    public String limit;
}
