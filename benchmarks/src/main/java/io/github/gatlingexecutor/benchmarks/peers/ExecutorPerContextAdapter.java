package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;

/**
 * The seed design's baseline: one {@code Executors.newSingleThreadExecutor()} per context, created lazily the first
 * time a key is used. With a virtual-thread factory it becomes "a virtual thread per context".
 */
public final class ExecutorPerContextAdapter implements OrderedExecutorAdapter {
    private final String name;
    private final CountingThreadFactory threads;
    private final PerKey<ExecutorService> executors;

    public ExecutorPerContextAdapter(int keys) {
        this("executor per context", keys, null);
    }

    ExecutorPerContextAdapter(String name, int keys, ThreadFactory delegate) {
        this.name = name;
        this.threads = new CountingThreadFactory("per-context", delegate);
        this.executors = new PerKey<>(keys, k -> Executors.newSingleThreadExecutor(threads), ExecutorService::shutdown);
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
    public void execute(int key, Runnable task) {
        executors.get(key).execute(task);
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
        executors.forEach(ExecutorService::shutdown);
        executors.forEach(e -> Shutdown.await(e, null));
        Shutdown.awaitThreads(threads);
    }
}
