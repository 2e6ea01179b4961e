package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;

import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The low-load workload for {@link ClassLoaderAb} ({@code -Dab.workload=lowload}): one producer paced at one task per
 * 100 us (parked between submissions, as the comparison runner's latency scenario) over {@code keys} contexts; a round
 * returns the median submit-to-start wait in microseconds, and {@link #lastP99} the round's 99th percentile. A wait
 * this short is mostly the cost of waking a parked worker, which the runner's single round per peer cannot resolve
 * on a shared machine; rounds alternated between two builds in one JVM can. Public members are called reflectively.
 */
public final class LowLoadRounds {
    private static final long INTERVAL_NANOS = 100_000;
    /**
     * With {@code -Dab.burstEvery=N}, every N paced tasks the producer first sends one empty task to every context at
     * once (a service whose traffic comes in bursts over all its keys, with a trickle between them).
     */
    private static final int BURST_EVERY = Integer.getInteger("ab.burstEvery", 0);

    private final GatlingExecutor executor;
    private final Executor[] lanes;
    private final int[] order;
    private final PacedWaits waits;

    public LowLoadRounds(int keys, int tasksPerRound) {
        executor = GatlingExecutor.builder().name("ab").build();
        lanes = new Executor[keys];
        for (int k = 0; k < keys; k++) {
            lanes[k] = executor.sequential(k);
        }
        order = Keys.uniform(keys, tasksPerRound, 45);
        waits = new PacedWaits(tasksPerRound);
    }

    /** Runs one round; returns the median wait in microseconds. */
    public double round() {
        waits.run(lanes, 0, order, INTERVAL_NANOS, new AtomicInteger(), order.length, BURST_EVERY);
        return waits.median();
    }

    /** The 99th percentile of the last round, in microseconds. */
    public double lastP99() {
        return waits.p99();
    }

    public void close() {
        executor.close();
    }
}
