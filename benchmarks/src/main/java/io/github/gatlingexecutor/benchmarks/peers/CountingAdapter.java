package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ThreadFactory;

/**
 * A peer whose threads all come from one {@link CountingThreadFactory}: its name, its thread counts and CPU time,
 * and a bounded close (stop the executors, then wait until every counted thread has ended). A subclass builds its
 * executors with {@link #threads}, maps a key onto them in {@link #execute}, and says how to stop them in
 * {@link #shutdown()}.
 *
 * <p>{@code execute} stays in each subclass on purpose: one shared call site for every peer's per-key executor would
 * give the JIT a megamorphic profile there, and the hand-off each peer is measured on would pay for it.
 */
abstract class CountingAdapter implements OrderedExecutorAdapter {
    private final String name;
    /** Give this to every executor the peer makes. */
    protected final CountingThreadFactory threads;

    CountingAdapter(String name, String threadPrefix) {
        this(name, threadPrefix, null);
    }

    /** @param delegate makes the threads (e.g. virtual); null for daemon platform threads */
    CountingAdapter(String name, String threadPrefix, ThreadFactory delegate) {
        this.name = name;
        this.threads = new CountingThreadFactory(threadPrefix, delegate);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public boolean ordered() {
        return true;
    }

    @Override
    public int threadsCreated() {
        return threads.createdCount();
    }

    @Override
    public int peakThreads() {
        return threads.peak();
    }

    @Override
    public long threadCpuNanos() {
        return threads.cpuNanos();
    }

    /** Stops the peer's executors; may wait for them (bounded, see {@link Shutdown}). */
    protected abstract void shutdown();

    /**
     * Stops the executors, then waits (bounded) until none of the counted threads is alive, so the next run starts
     * without this one's threads.
     */
    @Override
    public final void close() {
        shutdown();
        Shutdown.awaitThreads(threads);
    }
}
