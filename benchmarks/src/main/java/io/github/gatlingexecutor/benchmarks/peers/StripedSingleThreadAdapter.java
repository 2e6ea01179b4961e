package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code n} JDK single-thread executors, key {@code k} always on executor {@code k % n}: the plainest striped
 * ordered executor. The coalescing scenario's map-and-drain peer schedules its drains on it.
 */
public final class StripedSingleThreadAdapter extends CountingAdapter {
    private final ExecutorService[] stripes;

    public StripedSingleThreadAdapter(String name, String threadPrefix, int stripeCount) {
        super(name, threadPrefix);
        this.stripes = new ExecutorService[stripeCount];
        for (int i = 0; i < stripeCount; i++) {
            stripes[i] = Executors.newSingleThreadExecutor(threads);
        }
    }

    @Override
    public void execute(int key, Runnable task) {
        stripes[key % stripes.length].execute(task);
    }

    /** Shuts every executor down first, then waits for each, so they stop in parallel. */
    @Override
    protected void shutdown() {
        for (ExecutorService s : stripes) {
            s.shutdown();
        }
        for (ExecutorService s : stripes) {
            Shutdown.terminate(s);
        }
    }
}
