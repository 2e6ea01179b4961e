package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * {@code io.github.gatlingexecutor.ThreadRetired}: A worker thread of the executor ended.
 */
@Name("io.github.gatlingexecutor.ThreadRetired")
@Category("GatlingExecutor")
@Label("Thread Retired")
@Description("A worker thread of the executor ended.")
@StackTrace(false)
public final class ThreadRetiredEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public ThreadRetiredEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** Worker Thread. */
    @Label("Worker Thread")
    public Thread worker;

    /** False for a core worker, true for an auxiliary one. */
    @Label("Auxiliary")
    @Description("False for a core worker, true for an auxiliary one")
    public boolean auxiliary;

    /** Reason. */
    @Label("Reason")
    public String reason;
}
