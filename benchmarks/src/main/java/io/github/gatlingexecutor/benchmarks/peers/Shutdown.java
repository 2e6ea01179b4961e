package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/** Bounded shutdown: a peer that hangs must not hang the whole comparison. */
final class Shutdown {
    private static final long LIMIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private Shutdown() {
    }

    /**
     * Shuts down and waits up to 10 s for termination. The result of {@code awaitTermination} is ignored: whether the
     * peer has stopped is judged afterwards by its live threads ({@link #awaitThreads}), because BookKeeper 4.17's
     * SingleThreadExecutor returns {@code runner.isAlive()} from awaitTermination (false once it has terminated) and
     * never reports itself terminated after a plain shutdown.
     */
    static void terminate(ExecutorService executor) {
        executor.shutdown();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            executor.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    /** Waits up to 10 s until none of the factory's threads is alive; warns if some still are. */
    static void awaitThreads(CountingThreadFactory threads) {
        long deadline = System.nanoTime() + LIMIT_NANOS;
        while (threads.alive() > 0) {
            if (System.nanoTime() - deadline > 0) {
                System.err.println("  (warning: " + threads.alive() + " threads still alive 10 s after shutdown)");
                return;
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
