package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * An A/B of two builds of the core in one JVM, for changes too small for separate runs on a shared machine (where
 * single runs of one build spread 1.5x and more). Each build gets its own class loader (the build's classes first,
 * then this jar, whose own copy of the core is shadowed) and its own executor; rounds alternate between the two, so
 * both see the same phases of the machine. Prints each build's median and the median of the per-round ratios B/A
 * after a third of the rounds as warm-up. A build compared with itself gives the method's own spread.
 *
 * <pre>
 * javac --release 17 -d /tmp/a $(find gatling-executor/src/main/java -name '*.java' ! -name module-info.java)
 * java -Xms3g -Xmx3g -Xmn2g -XX:+AlwaysPreTouch -XX:+UseParallelGC -cp benchmarks/target/benchmarks.jar \
 *     io.github.gatlingexecutor.benchmarks.ab.ClassLoaderAb 1024 3000000 30 /tmp/a /tmp/b
 * </pre>
 * With {@code -Dab.workload=lowload} each round is {@link LowLoadRounds} instead (KEYS contexts, TASKS_PER_ROUND tasks
 * at one per 100 us): the figures are then median waits in microseconds (lower is better), and each build's median
 * 99th percentile is printed as well; {@code -Dab.burstEvery=N} adds a burst over every context before each Nth paced
 * task. With {@code -Dab.workload=coalescing} each round is {@link CoalescingRounds} (KEYS coalescing contexts updated
 * by two producers for TASKS_PER_ROUND milliseconds): the figures are then millions of updates per second. With
 * {@code -Dab.workload=producers} each round is {@link ProducersRounds} (8 producers, or {@code -Dab.producers}, share
 * TASKS_PER_ROUND tiny tasks over KEYS contexts).
 */
public final class ClassLoaderAb {
    private static final boolean SLOW_KEY = "slowkey".equals(System.getProperty("ab.workload"));
    /** Rounds that return waits (median, and a 99th percentile): the low-load and slow-key workloads. */
    private static final boolean LOW_LOAD = SLOW_KEY || "lowload".equals(System.getProperty("ab.workload"));
    private static final boolean COALESCING = "coalescing".equals(System.getProperty("ab.workload"));
    private static final boolean PRODUCERS = "producers".equals(System.getProperty("ab.workload"));

    private ClassLoaderAb() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException("usage: ClassLoaderAb KEYS TASKS_PER_ROUND ROUNDS CLASSES_A CLASSES_B");
        }
        int keys = Integer.parseInt(args[0]);
        int tasks = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        URL self = ClassLoaderAb.class.getProtectionDomain().getCodeSource().getLocation();
        Object[] builds = new Object[2];
        Method[] round = new Method[2];
        Method[] p99 = new Method[2];
        for (int b = 0; b < 2; b++) {
            URLClassLoader loader = new URLClassLoader(new URL[] {Path.of(args[3 + b]).toUri().toURL(), self},
                    ClassLoader.getPlatformClassLoader());
            Class<?> c = loader.loadClass(SLOW_KEY ? SlowKeyRounds.class.getName()
                    : LOW_LOAD ? LowLoadRounds.class.getName()
                    : COALESCING ? CoalescingRounds.class.getName()
                    : PRODUCERS ? ProducersRounds.class.getName() : HotPathRounds.class.getName());
            builds[b] = c.getConstructor(int.class, int.class).newInstance(keys, tasks);
            round[b] = c.getMethod("round");
            p99[b] = LOW_LOAD ? c.getMethod("lastP99") : null;
        }
        double[][] rate = new double[2][rounds];
        double[][] tail = new double[2][rounds];
        double[] ratio = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < 2; j++) {
                int b = (j + r) % 2; // who goes first alternates
                rate[b][r] = (double) round[b].invoke(builds[b]);
                if (LOW_LOAD) {
                    tail[b][r] = (double) p99[b].invoke(builds[b]);
                }
            }
            ratio[r] = rate[1][r] / rate[0][r];
        }
        int warm = rounds / 3;
        for (int b = 0; b < 2; b++) {
            if (LOW_LOAD) {
                System.out.printf("%s: median wait p50 %.1f us, p99 %.1f us after warm-up%n", args[3 + b],
                        Summary.median(Arrays.copyOfRange(rate[b], warm, rounds)),
                        Summary.median(Arrays.copyOfRange(tail[b], warm, rounds)));
            } else {
                System.out.printf(COALESCING ? "%s: median %.2f M updates/s after warm-up%n"
                        : "%s: median %.2f M tasks/s after warm-up%n", args[3 + b],
                        Summary.median(Arrays.copyOfRange(rate[b], warm, rounds)));
            }
        }
        System.out.printf("B/A per round, median after warm-up: %.3f%n",
                Summary.median(Arrays.copyOfRange(ratio, warm, rounds)));
        System.out.println("per round: " + Arrays.toString(Arrays.stream(ratio).map(x -> Math.round(x * 100) / 100.0)
                .toArray()));
        if (LOW_LOAD) {
            double[] tailRatio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                tailRatio[r] = tail[1][r] / tail[0][r];
            }
            System.out.printf("B/A of the p99 per round, median after warm-up: %.3f%n",
                    Summary.median(Arrays.copyOfRange(tailRatio, warm, rounds)));
            for (int b = 0; b < 2; b++) {
                System.out.println(args[3 + b] + " p99 per round (us): " + Arrays.toString(
                        Arrays.stream(tail[b]).mapToLong(Math::round).toArray()));
            }
        }
        for (int b = 0; b < 2; b++) {
            builds[b].getClass().getMethod("close").invoke(builds[b]);
        }
    }
}
