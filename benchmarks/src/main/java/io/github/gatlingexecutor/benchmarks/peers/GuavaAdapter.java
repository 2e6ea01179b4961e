package io.github.gatlingexecutor.benchmarks.peers;

import com.google.common.util.concurrent.MoreExecutors;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Guava's {@code MoreExecutors.newSequentialExecutor} per key over one fixed pool: keys float over the pool's
 * threads, and a key's queue is drained to empty each time it gets a thread.
 */
public final class GuavaAdapter extends LanePerKeyAdapter<Executor> {
    private final ExecutorService pool;

    public GuavaAdapter(int keys, int threadCount) {
        super("Guava SequentialExecutor", "guava", keys);
        this.pool = Executors.newFixedThreadPool(threadCount, threads);
    }

    @Override
    protected Executor newLane(int key) {
        return MoreExecutors.newSequentialExecutor(pool);
    }

    @Override
    public void execute(int key, Runnable task) {
        lane(key).execute(task);
    }

    @Override
    protected void shutdown() {
        Shutdown.terminate(pool);
    }
}
