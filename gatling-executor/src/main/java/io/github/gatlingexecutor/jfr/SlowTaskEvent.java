package io.github.gatlingexecutor.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * {@code io.github.gatlingexecutor.SlowTask}: A task that ran longer than the threshold (10 ms in the settings
 * shipped with the library). Timing every task costs tiny tasks: disabled unless a settings file enables it.
 */
@Name("io.github.gatlingexecutor.SlowTask")
@Category("GatlingExecutor")
@Label("Slow Task")
@Description("A task that ran longer than the threshold (10 ms in the settings shipped with the library)."
        + " Timing every task costs tiny tasks: disabled unless a settings file enables it.")
@StackTrace(false)
@Enabled(false)
@Threshold("10 ms")
public final class SlowTaskEvent extends Event {
    /** Made by the executor, which fills in the fields and commits the event. */
    public SlowTaskEvent() {
    }

    /** The name of the executor. */
    @Label("Executor")
    @Description("The name of the executor")
    public String executor;

    /** The context of the task, or empty for an unordered task. */
    @Label("Context")
    @Description("The context of the task, or empty for an unordered task")
    public String context;

    /** Task Class. */
    @Label("Task Class")
    public Class<?> taskClass;
}
