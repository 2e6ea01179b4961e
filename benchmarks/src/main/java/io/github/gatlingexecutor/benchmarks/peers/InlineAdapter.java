package io.github.gatlingexecutor.benchmarks.peers;

/**
 * Runs every task on the calling thread at once: no hand-off at all. The floor for single-producer scenarios, and
 * (divided by the cores) the ideal bound for CPU-bound ones.
 */
public final class InlineAdapter implements OrderedExecutorAdapter {
    @Override
    public String name() {
        return "inline (caller runs)";
    }

    @Override
    public boolean ordered() {
        return true;
    }

    @Override
    public void execute(int key, Runnable task) {
        task.run();
    }

    @Override
    public int threadsCreated() {
        return 0;
    }

    @Override
    public int peakThreads() {
        return 0;
    }

    @Override
    public String threadCountSource() {
        return "none: runs on the caller";
    }

    @Override
    public void close() {
    }
}
