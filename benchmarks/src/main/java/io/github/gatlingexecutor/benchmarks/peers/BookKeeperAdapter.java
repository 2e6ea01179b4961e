package io.github.gatlingexecutor.benchmarks.peers;

import org.apache.bookkeeper.common.util.OrderedExecutor;

/**
 * Apache BookKeeper's {@code OrderedExecutor}: keys hashed onto {@code threads} single-thread executors (each drains
 * its queue in batches). A key is pinned to one thread for life.
 */
public final class BookKeeperAdapter implements OrderedExecutorAdapter {
    private final CountingThreadFactory threads = new CountingThreadFactory("bookkeeper");
    private final OrderedExecutor executor;

    public BookKeeperAdapter(int threadCount) {
        this.executor = OrderedExecutor.newBuilder().name("bookkeeper").numThreads(threadCount)
                .threadFactory(threads).build();
    }

    @Override
    public String name() {
        return "BookKeeper OrderedExecutor";
    }

    @Override
    public boolean ordered() {
        return true;
    }

    @Override
    public void execute(int key, Runnable task) {
        executor.executeOrdered(key, task);
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
        Shutdown.await(executor, threads);
    }
}
