package io.github.gatlingexecutor.benchmarks.peers;

import org.apache.bookkeeper.common.util.OrderedExecutor;

/**
 * Apache BookKeeper's {@code OrderedExecutor}: keys hashed onto {@code threads} single-thread executors (each drains
 * its queue in batches). A key is pinned to one thread for life.
 */
public final class BookKeeperAdapter extends CountingAdapter {
    private final OrderedExecutor executor;

    public BookKeeperAdapter(int threadCount) {
        this("BookKeeper OrderedExecutor", threadCount, 0);
    }

    /** @param maxTasksInQueue BookKeeper's per-thread queue bound (0: unbounded); over it, execute throws */
    public BookKeeperAdapter(String name, int threadCount, int maxTasksInQueue) {
        super(name, "bookkeeper");
        OrderedExecutor.AbstractBuilder<OrderedExecutor> b = OrderedExecutor.newBuilder().name("bookkeeper")
                .numThreads(threadCount)
                .threadFactory(threads);
        if (maxTasksInQueue > 0) {
            b.maxTasksInQueue(maxTasksInQueue);
        }
        this.executor = b.build();
    }

    @Override
    public void execute(int key, Runnable task) {
        executor.executeOrdered(key, task);
    }

    @Override
    protected void shutdown() {
        Shutdown.terminate(executor);
    }
}
