package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;

/**
 * The seed design's baseline: one {@code Executors.newSingleThreadExecutor()} per context, created lazily the first
 * time a key is used. With a virtual-thread factory it becomes "a virtual thread per context".
 */
public final class ExecutorPerContextAdapter extends LanePerKeyAdapter<ExecutorService> {

    public ExecutorPerContextAdapter(int keys) {
        this("executor per context", keys, null);
    }

    ExecutorPerContextAdapter(String name, int keys, ThreadFactory delegate) {
        super(name, "per-context", delegate, keys);
    }

    @Override
    protected ExecutorService newLane(int key) {
        return Executors.newSingleThreadExecutor(threads);
    }

    @Override
    protected void discard(ExecutorService lane) {
        lane.shutdown();
    }

    @Override
    public void execute(int key, Runnable task) {
        lane(key).execute(task);
    }

    /** Shuts every executor down first, then waits for each, so they stop in parallel. */
    @Override
    protected void shutdown() {
        forEachLane(ExecutorService::shutdown);
        forEachLane(Shutdown::terminate);
    }
}
