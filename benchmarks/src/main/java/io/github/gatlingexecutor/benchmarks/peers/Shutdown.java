package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/** Bounded shutdown: a peer that hangs must not hang the whole comparison. */
final class Shutdown {
    private static final long LIMIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private Shutdown() {
    }

    /**
     * Shuts down, then waits for the peer's threads to end. Termination is judged by the counting factory's live
     * threads, not by {@code awaitTermination}'s result or {@code isTerminated()}: BookKeeper 4.17's
     * SingleThreadExecutor returns {@code runner.isAlive()} from awaitTermination (false once it has terminated) and
     * never reports itself terminated after a plain shutdown.
     */
    static void await(ExecutorService executor, CountingThreadFactory threads) {
        executor.shutdown();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            executor.shutdownNow();
            Thread.currentThread().interrupt();
            return;
        }
        if (threads != null) {
            awaitThreads(threads);
        }
    }

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
