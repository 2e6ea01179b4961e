package io.github.gatlingexecutor.benchmarks.peers;

import org.apache.bookkeeper.common.util.OrderedExecutor;

/**
 * Apache BookKeeper's {@code OrderedExecutor}: keys hashed onto {@code threads} single-thread executors (each drains
 * its queue in batches). A key is pinned to one thread for life.
 */
public final class BookKeeperAdapter extends CountingAdapter {
    private final OrderedExecutor executor;

    public BookKeeperAdapter(int threadCount) {
        super("BookKeeper OrderedExecutor", "bookkeeper");
        this.executor = OrderedExecutor.newBuilder().name("bookkeeper").numThreads(threadCount)
                .threadFactory(threads).build();
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
