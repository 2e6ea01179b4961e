package io.github.gatlingexecutor.benchmarks.peers;

import com.google.common.util.concurrent.MoreExecutors;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Guava's {@code MoreExecutors.newSequentialExecutor} per key over one pool: keys float over the pool's threads, and
 * a key's queue is drained to empty each time it gets a thread. The pool is fixed (as many threads as cores), or
 * cached, the elastic pool such a sequential executor is also commonly layered over, where tasks block.
 */
public final class GuavaAdapter extends LanePerKeyAdapter<Executor> {
    private final ExecutorService pool;

    /** Over a fixed pool of {@code threadCount} threads. */
    public GuavaAdapter(int keys, int threadCount) {
        super("Guava SequentialExecutor", "guava", keys);
        this.pool = Executors.newFixedThreadPool(threadCount, threads);
    }

    /** Over a cached pool: a thread per task that finds none idle, each ending after 60 s idle. */
    public static GuavaAdapter overCachedPool(int keys) {
        return new GuavaAdapter(keys);
    }

    private GuavaAdapter(int keys) {
        super("Guava SequentialExecutor (cached pool)", "guava-cached", keys);
        this.pool = Executors.newCachedThreadPool(threads);
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
