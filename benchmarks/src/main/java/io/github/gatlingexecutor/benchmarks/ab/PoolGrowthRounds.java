package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Blocking;
import io.github.gatlingexecutor.benchmarks.scenarios.Sizes;

import java.util.Locale;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The comparison runner's blocking row ({@link Blocking}, full size), for one build, round after round, with how the
 * pool grew in each: one producer submits 40,000 tasks over 1,024 contexts as fast as it can, every tenth task of a
 * context parks for 1 ms, and a round ends when all have run. A sampler reads {@code statistics().threads()} every
 * 0.2 ms and the round prints when the pool first reached 2, 3, 4, 10, 20... threads. The build is whatever comes first
 * on the class path:
 *
 * <pre>
 * java -cp /tmp/a:benchmarks/target/benchmarks.jar io.github.gatlingexecutor.benchmarks.ab.PoolGrowthRounds 12
 * </pre>
 * A fresh executor each round, after a collection, as the runner makes one per run.
 */
public final class PoolGrowthRounds {
    private static final int CONTEXTS = Blocking.CONTEXTS;
    private static final int TASKS = Sizes.full(Runtime.getRuntime().availableProcessors()).blockingTasks();
    private static final long SAMPLE_NANOS = 200_000;

    private PoolGrowthRounds() {
    }

    public static void main(String[] args) throws InterruptedException {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 12;
        int[] keys = Blocking.keys(TASKS);
        for (int r = 0; r < rounds; r++) {
            System.gc();
            round(r, keys);
        }
    }

    private static void round(int round, int[] keys) throws InterruptedException {
        GatlingExecutor executor = GatlingExecutor.builder().name("growth").build();
        Executor[] lanes = new Executor[CONTEXTS];
        for (int k = 0; k < CONTEXTS; k++) {
            lanes[k] = executor.sequential(k);
        }
        int[] perKey = new int[CONTEXTS];
        AtomicInteger done = new AtomicInteger();
        StringBuilder growth = new StringBuilder();
        long t0 = System.nanoTime();
        Thread sampler = new Thread(() -> {
            int reported = 1;
            while (!Thread.currentThread().isInterrupted()) {
                int threads = executor.statistics().threads();
                while (reported < threads) {
                    reported++;
                    if (reported <= 4 || reported % 10 == 0) {
                        growth.append(String.format(Locale.ROOT, " %d@%dms", reported,
                                (System.nanoTime() - t0) / 1_000_000));
                    }
                }
                LockSupport.parkNanos(SAMPLE_NANOS);
            }
        }, "growth-sampler");
        sampler.setDaemon(true);
        sampler.start();
        for (int k : keys) {
            int index = perKey[k]++;
            lanes[k].execute(() -> {
                Blocking.runTask(index);
                done.incrementAndGet();
            });
        }
        long submitted = System.nanoTime() - t0;
        while (done.get() < TASKS) {
            LockSupport.parkNanos(100_000);
        }
        long took = System.nanoTime() - t0;
        sampler.interrupt();
        sampler.join();
        ExecutorStatistics s = executor.statistics();
        executor.close();
        System.out.printf(Locale.ROOT, "round %2d: %6.1f ms (submits %5.1f ms), peak %d threads; threads reached:%s%n",
                round, took / 1e6, submitted / 1e6, s.peakThreads(), growth);
    }
}
