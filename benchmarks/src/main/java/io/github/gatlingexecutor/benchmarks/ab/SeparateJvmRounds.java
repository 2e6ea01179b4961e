package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One build per JVM, for the cases where {@link ClassLoaderAb} cannot tell two builds apart: with one hot key its
 * rounds swing between two rates (a build against itself read 0.83 there), as the worker falls behind the producer
 * or keeps catching up with it, and the other build's executor in the same JVM adds to that. Run it once per build,
 * alternating builds, several JVMs each, and compare the medians it prints:
 *
 * <pre>
 *   java -cp /tmp/a:benchmarks/target/benchmarks.jar io.github.gatlingexecutor.benchmarks.ab.SeparateJvmRounds 1 1000000 30
 *   java -cp /tmp/b:benchmarks/target/benchmarks.jar io.github.gatlingexecutor.benchmarks.ab.SeparateJvmRounds 1 1000000 30
 * </pre>
 *
 * (a build's classes first on the class path take precedence over the copy in the jar). One producer, the calling
 * thread, submits {@code TASKS} tasks a round to {@code KEYS} contexts (uniform, fixed seed), each task allocated at its
 * submit and checking its context's order, as the comparison runner's tasks do. With {@code -Dab.fresh=true} every
 * round gets a new executor, as each run of the comparison runner does. Prints the mean and the median of the rounds
 * after the first third (warm-up), in millions of tasks per second, then every round.
 */
public final class SeparateJvmRounds {

    private SeparateJvmRounds() {
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: SeparateJvmRounds KEYS TASKS_PER_ROUND ROUNDS");
        }
        int keys = Integer.parseInt(args[0]);
        int tasks = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        boolean fresh = Boolean.getBoolean("ab.fresh");
        int[] order = new int[tasks];
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < tasks; i++) {
            order[i] = random.nextInt(keys);
        }
        double[] rates = new double[rounds];
        GatlingExecutor executor = null;
        Executor[] lanes = new Executor[keys];
        for (int r = 0; r < rounds; r++) {
            if (executor == null || fresh) {
                if (executor != null) {
                    executor.close();
                    System.gc();
                }
                executor = GatlingExecutor.builder().name("ab").build();
                for (int k = 0; k < keys; k++) {
                    lanes[k] = executor.sequential(k);
                }
            }
            // Per key, 16 longs apart: the next sequence number due, written only by the key's running task.
            AtomicLongArray next = new AtomicLongArray(keys * 16);
            long[] submitted = new long[keys];
            long t0 = System.nanoTime();
            for (int k : order) {
                long seq = submitted[k]++;
                int slot = k * 16;
                lanes[k].execute(() -> {
                    if (next.get(slot) != seq) {
                        throw new AssertionError("task " + seq + " of key " + slot / 16 + " ran out of order");
                    }
                    next.lazySet(slot, seq + 1);
                });
            }
            for (int k = 0; k < keys; k++) {
                while (next.get(k * 16) != submitted[k]) {
                    Thread.onSpinWait();
                }
            }
            rates[r] = tasks / ((System.nanoTime() - t0) / 1e3);
        }
        executor.close();
        double[] measured = Arrays.copyOfRange(rates, rounds / 3, rounds);
        double sum = 0;
        for (double x : measured) {
            sum += x;
        }
        Arrays.sort(measured);
        StringBuilder all = new StringBuilder();
        for (double x : rates) {
            all.append(String.format(" %.1f", x));
        }
        System.out.printf("mean %.2f median %.2f M tasks/s after warm-up; rounds:%s%n", sum / measured.length,
                measured[measured.length / 2], all);
    }
}
