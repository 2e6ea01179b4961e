package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.benchmarks.peers.GatlingAdapter;
import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Each side of the hand-off of one hot key (or of {@code KEYS} keys) on its own: what a submit costs while nothing
 * drains, and what a drain costs per task while nothing is submitted.
 *
 * <p>A round makes a fresh executor, submits a task that holds key 0's thread on a latch, then submits {@code N}
 * tiny tasks (timed: the submit side alone, the queues growing), to key 0 or to keys drawn uniformly from {@code KEYS},
 * opens the latch, and times until the last task has run (the drain side alone, from full queues). Each tiny task is
 * a fresh object, as a real producer's are, and checks it runs in its key's submission order, as the comparison
 * runner's do. Rounds alternate the peers in one JVM; the first third warm up. With many keys, run every peer on one
 * thread ({@code -XX:ActiveProcessorCount=1}, and {@code gatling-1}): the held thread then holds every key, and the
 * drain reads the order in which a peer runs a backlog spread over many keys (by key, or as submitted), which decides
 * how many of the tasks' first touches miss one by one (docs/hand-off-experiments.md, twenty-fifth set).
 *
 * <p>Why: with one producer and one hot key both sides run at once on this 2-core machine, each slowed by the other
 * (shared lines, and the host's cores), and the rate alone cannot say which side bounds a peer, or by how much. Alone,
 * each side's cost per task is steady to a nanosecond or two, and a change to one side can be read on that side.
 * Run with a young generation large enough that no collection falls in a round (the line says how many did):
 *
 * <pre>
 * java -Xms3g -Xmx3g -Xmn2g -XX:+AlwaysPreTouch -cp benchmarks/target/benchmarks.jar \
 *     io.github.gatlingexecutor.benchmarks.ab.SideCosts \
 *     2000000 12 gatling,netty,jraft
 * java -XX:ActiveProcessorCount=1 -Xms3g -Xmx3g -Xmn2g -XX:+AlwaysPreTouch -cp benchmarks/target/benchmarks.jar \
 *     io.github.gatlingexecutor.benchmarks.ab.SideCosts \
 *     2000000 12 gatling-1,jraft 1024
 * </pre>
 * Peers: the short names of {@link Peer#byShortName}, and {@code gatling-1} ({@link #oneWorker}). To read a change
 * of the core, compile it to a directory and put that directory ahead of the jar on the class path.
 */
public final class SideCosts {
    private SideCosts() {
    }

    /** A tiny ordered task: the comparison runner's, with one counter for the whole round. */
    private static final class Tiny implements Runnable {
        private final Round round;
        private final int key;
        private final int seq;

        Tiny(Round round, int key, int seq) {
            this.round = round;
            this.key = key;
            this.seq = seq;
        }

        @Override
        public void run() {
            Round r = round;
            if (r.next[key] != seq) {
                r.violations.incrementAndGet(); // rare: an atomic costs nothing here, and no count is lost
            }
            r.next[key] = seq + 1;
            if (r.done.incrementAndGet() == r.tasks) {
                r.finished.countDown();
            }
        }
    }

    /** One round's state; {@code next[key]} is touched only by the running task of that key. */
    private static final class Round {
        final int tasks;
        final AtomicLong done = new AtomicLong();
        final CountDownLatch finished = new CountDownLatch(1);
        final int[] next;
        final AtomicInteger violations = new AtomicInteger();

        Round(int tasks, int keys) {
            this.tasks = tasks;
            this.next = new int[keys];
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3 && args.length != 4) {
            throw new IllegalArgumentException("usage: SideCosts TASKS_PER_ROUND ROUNDS PEERS (short names, or "
                    + ONE_WORKER + ") [KEYS]");
        }
        int tasks = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        String[] peers = args[2].split(",");
        int keys = args.length == 4 ? Integer.parseInt(args[3]) : 1;
        if (keys < 1) {
            throw new IllegalArgumentException("KEYS must be at least 1: " + keys);
        }
        int[] keyOf = new int[tasks]; // drawn before any round: the submit side times the submits alone
        SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < tasks; i++) {
            keyOf[i] = keys == 1 ? 0 : random.nextInt(keys);
        }
        int cores = Runtime.getRuntime().availableProcessors();
        Map<String, List<double[]>> results = new LinkedHashMap<>();
        Map<String, String> names = new LinkedHashMap<>();
        int collected = 0;
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < peers.length; j++) {
                String name = peers[(j + r) % peers.length]; // who goes first rotates
                Peer peer = name.equals(ONE_WORKER) ? oneWorker() : Peer.byShortName(name, cores);
                System.gc(); // no peer pays for another's garbage
                long gcBefore = collections();
                double[] costs = round(peer, tasks, keyOf, keys, names, name);
                boolean clean = collections() == gcBefore;
                collected += clean ? 0 : 1;
                if (r >= rounds / 3 && clean) { // the first third warms up; a round with a collection is left out
                    results.computeIfAbsent(name, p -> new ArrayList<>()).add(costs);
                }
            }
        }
        System.out.printf("%s, %,d tasks a round, %d rounds (a third warm-up), %d cores; %d rounds had a"
                + " collection and are left out%n", keys == 1 ? "one hot key" : String.format("%,d keys", keys), tasks,
                rounds, cores, collected);
        System.out.println("peer (ns per task)                         submit median  (min)   drain median  (min)");
        for (Map.Entry<String, List<double[]>> e : results.entrySet()) {
            List<double[]> l = e.getValue();
            double[] submit = new double[l.size()];
            double[] drain = new double[l.size()];
            for (int i = 0; i < l.size(); i++) {
                submit[i] = l.get(i)[0];
                drain[i] = l.get(i)[1];
            }
            System.out.printf("%-42s %13.1f %7.1f %14.1f %6.1f   (%d rounds)%n", names.get(e.getKey()),
                    Summary.median(submit), Arrays.stream(submit).min().orElse(Double.NaN), Summary.median(drain),
                    Arrays.stream(drain).min().orElse(Double.NaN), l.size());
        }
    }

    /** The short name of {@link #oneWorker}. */
    private static final String ONE_WORKER = "gatling-1";

    /**
     * GatlingExecutor with one worker and no room for another: the drain runs on one worker, to be compared with a
     * peer run on one thread too ({@code -XX:ActiveProcessorCount=1} gives every peer one).
     */
    private static Peer oneWorker() {
        return new Peer("GatlingExecutor, one worker", true, keys -> new GatlingAdapter("GatlingExecutor, one worker",
                keys, 1, false, b -> b.maxThreads(1).blockedThreshold(Duration.ofHours(1))));
    }

    private static double[] round(Peer peer, int tasks, int[] keyOf, int keys, Map<String, String> names,
            String name) throws InterruptedException {
        OrderedExecutorAdapter adapter = peer.create(keys);
        names.put(name, adapter.name());
        try {
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch open = new CountDownLatch(1);
            adapter.execute(0, () -> {
                held.countDown();
                try {
                    open.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            if (!held.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": the holding task did not start");
            }
            Round round = new Round(tasks, keys);
            int[] seqs = new int[keys];
            long t0 = System.nanoTime();
            for (int i = 0; i < tasks; i++) {
                int key = keyOf[i];
                adapter.execute(key, new Tiny(round, key, seqs[key]++));
            }
            long t1 = System.nanoTime();
            open.countDown();
            if (!round.finished.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": " + round.done.get() + " of " + tasks + " tasks ran");
            }
            long t2 = System.nanoTime();
            if (round.violations.get() > 0) {
                throw new IllegalStateException(name + ": " + round.violations.get() + " tasks ran out of order");
            }
            return new double[] {(t1 - t0) / (double) tasks, (t2 - t1) / (double) tasks};
        } finally {
            adapter.close();
        }
    }

    private static long collections() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }
}
