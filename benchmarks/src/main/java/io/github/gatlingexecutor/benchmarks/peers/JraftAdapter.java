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
public final class JraftAdapter extends CountingAdapter {
    /** Unbounded in practice: the scenarios queue up to a few million tasks before the workers catch up. */
    private static final int MAX_PENDING = 1 << 30;

    private final FixedThreadsExecutorGroup group;

    public JraftAdapter(int threadCount) {
        super("SOFAJRaft MpscSingleThreadExecutor group", "jraft");
        SingleThreadExecutor[] children = new SingleThreadExecutor[threadCount];
        for (int i = 0; i < threadCount; i++) {
            children[i] = new MpscSingleThreadExecutor(MAX_PENDING, threads);
        }
        this.group = DefaultFixedThreadsExecutorGroupFactory.INSTANCE.newExecutorGroup(children);
    }

    @Override
    public void execute(int key, Runnable task) {
        group.execute(key, task);
    }

    @Override
    protected void shutdown() {
        group.shutdownGracefully(10, TimeUnit.SECONDS);
    }
}
