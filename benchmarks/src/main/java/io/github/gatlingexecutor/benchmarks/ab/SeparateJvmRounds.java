package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.benchmarks.scenarios.Summary;
import java.util.Arrays;

/**
 * One build per JVM, for the cases where {@link ClassLoaderAb} cannot tell two builds apart: with one hot key its
 * rounds swing between two rates (a build against itself read 0.83 there), as the worker falls behind the producer
 * or keeps catching up with it, and the other build's executor in the same JVM adds to that. Run it once per build,
 * alternating builds, several JVMs each, and compare the medians it prints:
 *
 * <pre>
 *   java -Xms3g -Xmx3g -Xmn2g -XX:+AlwaysPreTouch -cp /tmp/a:benchmarks/target/benchmarks.jar \
 *       io.github.gatlingexecutor.benchmarks.ab.SeparateJvmRounds 1 1000000 30
 *   java -Xms3g -Xmx3g -Xmn2g -XX:+AlwaysPreTouch -cp /tmp/b:benchmarks/target/benchmarks.jar \
 *       io.github.gatlingexecutor.benchmarks.ab.SeparateJvmRounds 1 1000000 30
 * </pre>
 *
 * (a build's classes first on the class path take precedence over the copy in the jar). Each round is a round of
 * {@link HotPathRounds}, the workload {@code ClassLoaderAb} runs, from the calling thread. With {@code -Dab.fresh=true}
 * every round gets a new executor, as each run of the comparison runner does. Prints the mean and the median of the
 * rounds after the first third (warm-up), in millions of tasks per second, then every round. The heap is touched
 * before the run: with a young generation of 2 GB and no collection, later rounds allocate into pages never touched
 * before, and on this VM those page faults halved one hot key's rate from round 15 or so on
 * (docs/hand-off-experiments.md, eighteenth set).
 */
public final class SeparateJvmRounds {

    private SeparateJvmRounds() {
    }

    public static void main(String[] args) {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: SeparateJvmRounds KEYS TASKS_PER_ROUND ROUNDS");
        }
        int keys = Integer.parseInt(args[0]);
        int tasks = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        boolean fresh = Boolean.getBoolean("ab.fresh");
        double[] rates = new double[rounds];
        HotPathRounds build = null;
        for (int r = 0; r < rounds; r++) {
            if (build == null || fresh) {
                if (build != null) {
                    build.close();
                    System.gc();
                }
                build = new HotPathRounds(keys, tasks);
            }
            rates[r] = build.round();
        }
        build.close();
        double[] measured = Arrays.copyOfRange(rates, rounds / 3, rounds);
        StringBuilder all = new StringBuilder();
        for (double x : rates) {
            all.append(String.format(" %.1f", x));
        }
        System.out.printf("mean %.2f median %.2f M tasks/s after warm-up; rounds:%s%n",
                Arrays.stream(measured).average().orElse(Double.NaN), Summary.median(measured), all);
    }
}
