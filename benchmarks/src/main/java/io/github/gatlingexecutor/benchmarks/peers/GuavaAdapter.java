package io.github.gatlingexecutor.benchmarks.peers;

import com.google.common.util.concurrent.MoreExecutors;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Guava's {@code MoreExecutors.newSequentialExecutor} per key over one fixed pool: keys float over the pool's
 * threads, and a key's queue is drained to empty each time it gets a thread.
 */
public final class GuavaAdapter implements OrderedExecutorAdapter {
    private final CountingThreadFactory threads = new CountingThreadFactory("guava");
    private final ExecutorService pool;
    private final PerKey<Executor> lanes;

    public GuavaAdapter(int keys, int threadCount) {
        this.pool = Executors.newFixedThreadPool(threadCount, threads);
        this.lanes = new PerKey<>(keys, k -> MoreExecutors.newSequentialExecutor(pool), l -> { });
    }

    @Override
    public String name() {
        return "Guava SequentialExecutor";
    }

    @Override
    public boolean ordered() {
        return true;
    }

    @Override
    public void execute(int key, Runnable task) {
        lanes.get(key).execute(task);
    }

    @Override
    public int threadsCreated() {
        return threads.createdCount();
    }

    @Override
    public long threadCpuNanos() {
        return threads.cpuNanos();
    }

    @Override
    public int peakThreads() {
        return threads.peak();
    }

    @Override
    public void close() {
        Shutdown.await(pool, threads);
    }
}
