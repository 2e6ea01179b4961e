package io.github.gatlingexecutor.benchmarks.peers;

import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.RejectedExecutionHandlers;

import java.util.concurrent.TimeUnit;

/**
 * Netty's {@code DefaultEventExecutorGroup} with {@code maxPendingTasks}: keys hashed onto single-thread executors
 * whose queues are bounded; over the bound, {@code execute} throws {@code RejectedExecutionException}. This is how a
 * Netty user bounds an ordered executor ({@code NonStickyEventExecutorGroup} has no bound of its own).
 */
public final class NettyPinnedAdapter extends CountingAdapter {
    private final DefaultEventExecutorGroup group;
    private final EventExecutor[] executors;

    public NettyPinnedAdapter(String name, int threadCount, int maxPendingTasks) {
        super(name, "netty-pinned");
        this.group = new DefaultEventExecutorGroup(threadCount, threads, maxPendingTasks,
                RejectedExecutionHandlers.reject());
        this.executors = new EventExecutor[threadCount];
        for (int i = 0; i < threadCount; i++) {
            executors[i] = group.next();
        }
    }

    @Override
    public void execute(int key, Runnable task) {
        executors[Math.floorMod(key, executors.length)].execute(task);
    }

    @Override
    protected void shutdown() {
        group.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    }
}
