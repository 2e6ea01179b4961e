package io.github.gatlingexecutor.benchmarks.peers;

import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.GatlingExecutor;

import java.util.concurrent.Executor;

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
        super(coalescing ? "GatlingExecutor (coalescing)" : "GatlingExecutor", "gatling", keys);
        this.executor = GatlingExecutor.builder().name("gatling").coreThreads(coreThreads).threadFactory(threads)
                .build();
        this.coalescing = coalescing;
    }

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

    /** Worker threads from the factory, plus the executor's own checker thread if it is running. */
    @Override
    public int threadsCreated() {
        return super.threadsCreated() + (checkerAlive() ? 1 : 0);
    }

    @Override
    public int peakThreads() {
        return Math.max(super.peakThreads(), executor.statistics().peakThreads()) + (checkerAlive() ? 1 : 0);
    }

    @Override
    public String threadCountSource() {
        return "counting ThreadFactory for workers + 1 for the checker thread when it is alive";
    }

    @Override
    public long threadCpuNanos() {
        Thread checker = checker();
        long checkerCpu = checker == null ? 0
                : java.lang.management.ManagementFactory.getThreadMXBean().getThreadCpuTime(checker.getId());
        return super.threadCpuNanos() + Math.max(0, checkerCpu);
    }

    private static boolean checkerAlive() {
        return checker() != null;
    }

    private static Thread checker() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("gatling-checker") && t.isAlive()) {
                return t;
            }
        }
        return null;
    }

    @Override
    protected void shutdown() {
        executor.close();
    }
}
