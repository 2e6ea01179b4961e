package io.github.gatlingexecutor.benchmarks.peers;

import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.GatlingExecutor;

import java.util.concurrent.Executor;
import java.util.function.UnaryOperator;

/**
 * GatlingExecutor with one sequential lane per key. Lane handles stay valid for the executor's life, so they are
 * cached per key like every other peer's per-key state.
 */
public final class GatlingAdapter extends LanePerKeyAdapter<Executor> {
    private final GatlingExecutor executor;
    private final boolean coalescing;

    public GatlingAdapter(int keys, int coreThreads) {
        this(keys, coreThreads, false);
    }

    /** @param coalescing use coalescing lanes instead of sequential ones (the coalescing scenario) */
    public GatlingAdapter(int keys, int coreThreads, boolean coalescing) {
        this(coalescing ? "GatlingExecutor (coalescing)" : "GatlingExecutor", keys, coreThreads, coalescing,
                b -> b);
    }

    /** @param settings adds settings (limits, say) to the builder the adapter starts from */
    public GatlingAdapter(String name, int keys, int coreThreads, boolean coalescing,
                          UnaryOperator<GatlingExecutor.Builder> settings) {
        this(name, keys, coreThreads, coalescing, settings, null);
    }

    /** @param companion closed after the executor (a JFR recording kept on for this run, say); may be null */
    public GatlingAdapter(String name, int keys, int coreThreads, boolean coalescing,
                          UnaryOperator<GatlingExecutor.Builder> settings, AutoCloseable companion) {
        super(name, "gatling", keys);
        this.executor = settings.apply(GatlingExecutor.builder().name("gatling").coreThreads(coreThreads)
                .threadFactory(threads)).build();
        this.coalescing = coalescing;
        this.companion = companion;
    }

    private final AutoCloseable companion;

    @Override
    protected Executor newLane(int key) {
        return coalescing ? executor.coalescing(key) : executor.sequential(key);
    }

    @Override
    public void execute(int key, Runnable task) {
        lane(key).execute(task);
    }

    public GatlingExecutor executor() {
        return executor;
    }

    public ExecutorStatistics statistics() {
        return executor.statistics();
    }

    @Override
    public String threadCountSource() {
        return "counting ThreadFactory (it makes the workers and the checker thread)";
    }

    @Override
    protected void shutdown() {
        executor.close();
        if (companion != null) {
            try {
                companion.close();
            } catch (Exception e) {
                throw new IllegalStateException("could not close " + companion, e);
            }
        }
    }
}
