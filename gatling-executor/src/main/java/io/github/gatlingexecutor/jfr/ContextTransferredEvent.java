package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * {@code io.github.gatlingexecutor.ContextTransferred}: The lane of a context ran on another worker than its
 * previous batch. Frequent under load: disabled unless a settings file enables it.
 */
@Name("io.github.gatlingexecutor.ContextTransferred")
@Category("GatlingExecutor")
@Label("Context Transferred")
@Description("The lane of a context ran on another worker than its previous batch."
        + " Frequent under load: disabled unless a settings file enables it.")
@StackTrace(false)
@Enabled(false)
public final class ContextTransferredEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public ContextTransferredEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** Context. */
    @Label("Context")
    public String context;

    /** Coalescing. */
    @Label("Coalescing")
    public boolean coalescing;

    /** The id of the worker that ran the previous batch of the lane (worker ids start at 1). */
    @Label("Previous Worker")
    @Description("The id of the worker that ran the previous batch of the lane (worker ids start at 1)")
    public int previousWorker;

    /** The id of the worker that runs it now. */
    @Label("Worker")
    @Description("The id of the worker that runs it now")
    public int worker;
}
