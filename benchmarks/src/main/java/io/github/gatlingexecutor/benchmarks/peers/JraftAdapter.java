package io.github.gatlingexecutor.benchmarks.peers;

import com.alipay.sofa.jraft.util.concurrent.DefaultFixedThreadsExecutorGroupFactory;
import com.alipay.sofa.jraft.util.concurrent.FixedThreadsExecutorGroup;
import com.alipay.sofa.jraft.util.concurrent.MpscSingleThreadExecutor;
import com.alipay.sofa.jraft.util.concurrent.SingleThreadExecutor;

import java.util.concurrent.TimeUnit;

/**
 * SOFAJRaft's fixed-threads executor group of {@code MpscSingleThreadExecutor}s (an MPSC queue drained by one thread
 * each); a key picks its executor by index, so it is pinned like BookKeeper's.
 */
public final class JraftAdapter implements OrderedExecutorAdapter {
    /** Unbounded in practice: the scenarios queue up to a few million tasks before the workers catch up. */
    private static final int MAX_PENDING = 1 << 30;

    private final CountingThreadFactory threads = new CountingThreadFactory("jraft");
    private final FixedThreadsExecutorGroup group;

    public JraftAdapter(int threadCount) {
        SingleThreadExecutor[] children = new SingleThreadExecutor[threadCount];
        for (int i = 0; i < threadCount; i++) {
            children[i] = new MpscSingleThreadExecutor(MAX_PENDING, threads);
        }
        this.group = DefaultFixedThreadsExecutorGroupFactory.INSTANCE.newExecutorGroup(children);
    }

    @Override
    public String name() {
        return "SOFAJRaft MpscSingleThreadExecutor group";
    }

    @Override
    public boolean ordered() {
        return true;
    }

    @Override
    public void execute(int key, Runnable task) {
        group.execute(key, task);
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
        group.shutdownGracefully(10, TimeUnit.SECONDS);
        Shutdown.awaitThreads(threads);
    }
}
