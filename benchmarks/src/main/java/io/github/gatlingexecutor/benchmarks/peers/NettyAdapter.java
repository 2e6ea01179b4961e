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
public final class NettyAdapter implements OrderedExecutorAdapter {
    private final CountingThreadFactory threads = new CountingThreadFactory("netty");
    private final UnorderedThreadPoolEventExecutor pool;
    private final NonStickyEventExecutorGroup group;
    private final PerKey<EventExecutor> lanes;

    public NettyAdapter(int keys, int threadCount) {
        this.pool = new UnorderedThreadPoolEventExecutor(threadCount, threads);
        this.group = new NonStickyEventExecutorGroup(pool);
        this.lanes = new PerKey<>(keys, k -> group.next(), l -> { });
    }

    @Override
    public String name() {
        return "Netty NonStickyEventExecutorGroup";
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
        pool.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
        Shutdown.awaitThreads(threads);
    }
}
