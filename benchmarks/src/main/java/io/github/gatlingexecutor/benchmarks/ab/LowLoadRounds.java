package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;

import java.util.Arrays;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The low-load workload for {@link ClassLoaderAb} ({@code -Dab.workload=lowload}): one producer paced at one task per
 * 100 us (parked between submissions, as the comparison runner's latency scenario) over {@code keys} contexts; a round
 * returns the median submit-to-start wait in microseconds, and {@link #lastP99} the round's 99th percentile. A wait
 * this short is mostly the cost of waking a parked worker, which the runner's single round per peer cannot resolve
 * on a shared machine; rounds alternated between two builds in one JVM can. Public members are called reflectively.
 */
public final class LowLoadRounds {
    private static final long INTERVAL_NANOS = 100_000;

    private final GatlingExecutor executor;
    private final Executor[] lanes;
    private final int[] order;
    private final long[] waits;
    private double lastP99;

    public LowLoadRounds(int keys, int tasksPerRound) {
        executor = GatlingExecutor.builder().name("ab").build();
        lanes = new Executor[keys];
        for (int k = 0; k < keys; k++) {
            lanes[k] = executor.sequential(k);
        }
        order = Keys.uniform(keys, tasksPerRound, 45);
        waits = new long[tasksPerRound];
    }

    /** Runs one round; returns the median wait in microseconds. */
    public double round() {
        AtomicInteger done = new AtomicInteger();
        long due = System.nanoTime();
        for (int i = 0; i < order.length; i++) {
            due += INTERVAL_NANOS;
            long wait;
            while ((wait = due - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            int slot = i;
            long submitted = System.nanoTime();
            lanes[order[i]].execute(() -> {
                waits[slot] = System.nanoTime() - submitted;
                done.incrementAndGet();
            });
        }
        while (done.get() < order.length) {
            LockSupport.parkNanos(1_000_000);
        }
        long[] sorted = waits.clone();
        Arrays.sort(sorted);
        lastP99 = sorted[(int) (sorted.length * 0.99)] / 1e3;
        return sorted[sorted.length / 2] / 1e3;
    }

    /** The 99th percentile of the last round, in microseconds. */
    public double lastP99() {
        return lastP99;
    }

    public void close() {
        executor.close();
    }
}
