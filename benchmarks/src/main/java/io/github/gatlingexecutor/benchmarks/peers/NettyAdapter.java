package io.github.gatlingexecutor.benchmarks.peers;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.NonStickyEventExecutorGroup;
import io.netty.util.concurrent.UnorderedThreadPoolEventExecutor;

import java.util.concurrent.TimeUnit;

/**
 * Netty's {@code NonStickyEventExecutorGroup} over an {@code UnorderedThreadPoolEventExecutor}: each {@code next()}
 * is an ordered executor that hops between the pool's threads (at most 1024 tasks per hop, Netty's default). One is
 * kept per key.
 */
public final class NettyAdapter extends LanePerKeyAdapter<EventExecutor> {
    private final UnorderedThreadPoolEventExecutor pool;
    private final NonStickyEventExecutorGroup group;

    public NettyAdapter(int keys, int threadCount) {
        super("Netty NonStickyEventExecutorGroup", "netty", keys);
        this.pool = new UnorderedThreadPoolEventExecutor(threadCount, threads);
        this.group = new NonStickyEventExecutorGroup(pool);
    }

    @Override
    protected EventExecutor newLane(int key) {
        return group.next();
    }

    @Override
    public void execute(int key, Runnable task) {
        lane(key).execute(task);
    }

    @Override
    protected void shutdown() {
        pool.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    }
}
