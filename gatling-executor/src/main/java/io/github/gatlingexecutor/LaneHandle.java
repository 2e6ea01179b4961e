package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * What {@code sequential(context)} and {@code coalescing(context)} return. It outlives the lanes behind it: it
 * remembers the last lane it used so a busy context skips the map lookup, and looks the context up again when that
 * lane has been released (a released lane refuses every submit, so a stale cache cannot misroute a task).
 */
final class LaneHandle implements Executor {
    final Engine engine;
    final Object context;
    final boolean coalescing;
    /**
     * The last lane used, shared by every thread that uses this handle. Racy by design (any lane read here is
     * validated by its own offer), but published with release/acquire so a reader sees the lane fully constructed.
     */
    private Lane lane;
    private static final VarHandle LANE;

    static {
        try {
            LANE = MethodHandles.lookup().findVarHandle(LaneHandle.class, "lane", Lane.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    LaneHandle(Engine engine, Object context, boolean coalescing) {
        this.engine = engine;
        this.context = context;
        this.coalescing = coalescing;
    }

    Lane cachedLaneAcquire() {
        return (Lane) LANE.getAcquire(this);
    }

    void cacheLaneRelease(Lane l) {
        LANE.setRelease(this, l);
    }

    @Override
    public void execute(Runnable command) {
        Objects.requireNonNull(command, "command");
        engine.submitToLane(coalescing, context, command, this, false);
    }

    @Override
    public String toString() {
        return (coalescing ? "coalescing(" : "sequential(") + context + ")@" + engine.settings.name;
    }
}
