package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.benchmarks.scenarios.Scenario;

import java.util.Arrays;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A paced producer and the waits it sees, for the workloads of {@link ClassLoaderAb} that measure latency
 * ({@link LowLoadRounds}, {@link SlowKeyRounds}): one task per interval, the producer parked between them (as the
 * comparison runner's latency scenarios pace theirs), each recording its submit-to-start wait.
 */
final class PacedWaits {
    private static final Runnable EMPTY = () -> { };

    private final long[] waits;
    private double median;
    private double p99;

    PacedWaits(int tasks) {
        waits = new long[tasks];
    }

    /**
     * Submits task {@code i} to {@code lanes[offset + order[i]]} at its turn, one per {@code intervalNanos}, then waits
     * until {@code done} reaches {@code total}: the paced tasks count themselves in it, and so may the caller's own.
     * Afterwards {@link #median} and {@link #p99} hold the paced tasks' waits, in microseconds.
     */
    void run(Executor[] lanes, int offset, int[] order, long intervalNanos, AtomicInteger done, int total) {
        run(lanes, offset, order, intervalNanos, done, total, 0);
    }

    /**
     * As {@link #run(Executor[], int, int[], long, AtomicInteger, int)}, but every {@code burstEvery} paced tasks (none
     * when 0) the producer first sends one empty task to every lane at once: a burst over all contexts, then the
     * trickle again. Only the paced tasks' waits are recorded.
     */
    void run(Executor[] lanes, int offset, int[] order, long intervalNanos, AtomicInteger done, int total,
             int burstEvery) {
        if (order.length != waits.length) {
            throw new IllegalArgumentException(order.length + " tasks for " + waits.length + " waits");
        }
        long due = System.nanoTime();
        for (int i = 0; i < order.length; i++) {
            due += intervalNanos;
            Scenario.parkUntil(due);
            if (burstEvery > 0 && i % burstEvery == 0) {
                for (int k = offset; k < lanes.length; k++) {
                    lanes[k].execute(EMPTY);
                }
            }
            int slot = i;
            long submitted = System.nanoTime();
            lanes[offset + order[i]].execute(() -> {
                waits[slot] = System.nanoTime() - submitted;
                done.incrementAndGet(); // after the wait's store: the reader below sees it once it counts this task
            });
        }
        while (done.get() < total) {
            LockSupport.parkNanos(1_000_000);
        }
        long[] sorted = waits.clone();
        Arrays.sort(sorted);
        median = sorted[sorted.length / 2] / 1e3;
        p99 = sorted[(int) (sorted.length * 0.99)] / 1e3;
    }

    double median() {
        return median;
    }

    double p99() {
        return p99;
    }
}
