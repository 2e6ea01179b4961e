package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * {@code io.github.gatlingexecutor.CoreBump}: Auxiliary threads were needed often: the core size grew by one.
 */
@Name("io.github.gatlingexecutor.CoreBump")
@Category("GatlingExecutor")
@Label("Core Bump")
@Description("Auxiliary threads were needed often: the core size grew by one.")
@StackTrace(false)
public final class CoreBumpEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public CoreBumpEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** The core size after the bump. */
    @Label("Core Threads")
    @Description("The core size after the bump")
    public int coreThreads;

    /** Auxiliary Threads Started. */
    @Label("Auxiliary Threads Started")
    public long auxiliaryThreadsStarted;
}
