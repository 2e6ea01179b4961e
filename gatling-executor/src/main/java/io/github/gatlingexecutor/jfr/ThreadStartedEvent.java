package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * {@code io.github.gatlingexecutor.ThreadStarted}: A worker thread of the executor started.
 */
@Name("io.github.gatlingexecutor.ThreadStarted")
@Category("GatlingExecutor")
@Label("Thread Started")
@Description("A worker thread of the executor started.")
@StackTrace(false)
public final class ThreadStartedEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public ThreadStartedEvent() {
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
