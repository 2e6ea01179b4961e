package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;
import io.github.gatlingexecutor.benchmarks.scenarios.SlowKey;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The slow-key workload for {@link ClassLoaderAb} ({@code -Dab.workload=slowkey}): as the comparison runner's slow-key
 * scenario, context 0 gets a backlog of CPU-bound 200 us tasks (a second of work), then tiny tasks for the other
 * {@code keys - 1} contexts arrive one per 50 us, the producer parked between them. A round uses a fresh executor of
 * two core workers and returns the median submit-to-start wait of the tiny tasks in microseconds, {@link #lastP99}
 * the round's 99th percentile. That percentile swings from tens of microseconds to milliseconds between rounds on a
 * shared 2-core machine (it is set by where the kernel puts a woken worker), so single runs cannot compare two builds;
 * rounds alternated in one JVM can. Public members are called reflectively.
 */
public final class SlowKeyRounds {
    /** A second of the slow context's work, as the runner's full mode gives it. */
    private static final int SLOW_TASKS = (int) (1_000_000_000L / SlowKey.SLOW_TASK_NANOS);

    private final int keys;
    private final int[] order;
    private final PacedWaits waits;

    public SlowKeyRounds(int keys, int tasksPerRound) {
        if (keys < 2) {
            throw new IllegalArgumentException("keys must be at least 2 (one slow, the others tiny), was " + keys);
        }
        this.keys = keys;
        order = Keys.uniform(keys - 1, tasksPerRound, 47);
        waits = new PacedWaits(tasksPerRound);
    }

    /** Runs one round on a fresh executor; returns the median wait of the tiny tasks in microseconds. */
    public double round() {
        GatlingExecutor executor = GatlingExecutor.builder().name("ab").coreThreads(2).build();
        try {
            Executor[] lanes = new Executor[keys];
            for (int k = 0; k < keys; k++) {
                lanes[k] = executor.sequential(k);
            }
            AtomicInteger done = new AtomicInteger();
            for (int i = 0; i < SLOW_TASKS; i++) {
                lanes[0].execute(() -> {
                    long end = System.nanoTime() + SlowKey.SLOW_TASK_NANOS;
                    while (System.nanoTime() - end < 0) {
                        Thread.onSpinWait(); // CPU-bound: its worker stays busy, it does not block
                    }
                    done.incrementAndGet();
                });
            }
            waits.run(lanes, 1, order, SlowKey.INTERVAL_NANOS, done, SLOW_TASKS + order.length);
        } finally {
            executor.close();
        }
        return waits.median();
    }

    /** The 99th percentile of the last round, in microseconds. */
    public double lastP99() {
        return waits.p99();
    }

    public void close() {
        // each round closes its own executor
    }
}
