package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.peers.ShardProbeAdapter;
import io.github.gatlingexecutor.benchmarks.scenarios.Cpu;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where a peer's time goes on tiny ordered tasks from one producer: rounds alternate between the peers in one JVM, a
 * fresh executor each round as in the comparison runner, and each round records the rate, the producer thread's own
 * CPU time and the process's CPU time. Per peer it prints the median rate, the median of its per-round ratio to the
 * last peer named, and both CPU times per task.
 *
 * <p>Why the CPU times: this machine gives no hardware counters ({@code perf stat} reports cycles as not supported),
 * and on 2 shared cores single rates spread 1.5x between runs. With one producer the producer is the bottleneck of
 * every fast peer, so its CPU time per task (from {@link ThreadMXBean}, which counts a thread only while it runs) is
 * the cost of a submit, steadier than the rate, and the process's CPU time per task is what the whole hand-off costs.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.github.gatlingexecutor.benchmarks.ab.PeerRounds \
 *     uniform 1024 1000000 15 gatling,probe,jraft
 * </pre>
 * Distributions: {@code uniform}, {@code zipf} (s = 1), {@code hot} (one key). Peers: the short names of
 * {@link Peer#byShortName}, and {@code probe} for the bare shard design probe.
 */
public final class PeerRounds {
    private PeerRounds() {
    }

    private static final class KeyState {
        int next; // only the key's running task touches it
        final AtomicLong done = new AtomicLong();
        long expected;
    }

    private static final class Task implements Runnable {
        private final KeyState key;
        private final int seq;
        private final CountDownLatch finished;

        Task(KeyState key, int seq, CountDownLatch finished) {
            this.key = key;
            this.seq = seq;
            this.finished = finished;
        }

        @Override
        public void run() {
            if (key.next != seq) {
                throw new AssertionError("task " + seq + " ran when " + key.next + " was due");
            }
            key.next = seq + 1;
            if (key.done.incrementAndGet() == key.expected) {
                finished.countDown();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException("usage: PeerRounds uniform|zipf|hot KEYS TASKS_PER_ROUND ROUNDS PEERS");
        }
        int keys = Integer.parseInt(args[1]);
        int tasks = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        String[] peers = args[4].split(",");
        int cores = Runtime.getRuntime().availableProcessors();
        int[] order = switch (args[0]) {
            case "uniform" -> Keys.uniform(keys, tasks, 42);
            case "zipf" -> Keys.zipf(keys, 1.0, tasks, 43);
            case "hot" -> Keys.single(0, tasks);
            default -> throw new IllegalArgumentException("unknown distribution " + args[0]);
        };
        long[] perKey = new long[keys];
        for (int k : order) {
            perKey[k]++;
        }
        int used = (int) Arrays.stream(perKey).filter(n -> n > 0).count();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        // per peer, per measured round: {wall ns, producer CPU ns, process CPU ns}
        Map<String, List<long[]>> results = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < peers.length; j++) {
                String peer = peers[(j + r) % peers.length]; // who goes first rotates
                OrderedExecutorAdapter adapter = peer.equals("probe")
                        ? new ShardProbeAdapter("Shard probe", keys, cores, false)
                        : Peer.byShortName(peer, cores).create(keys);
                CountDownLatch finished = new CountDownLatch(used);
                KeyState[] states = new KeyState[keys];
                for (int k = 0; k < keys; k++) {
                    states[k] = new KeyState();
                    states[k].expected = perKey[k];
                }
                System.gc(); // as the comparison runner does before each run: no peer pays for another's garbage
                long[] producerCpu = new long[1];
                Thread producer = new Thread(() -> {
                    int[] seqs = new int[keys];
                    long cpu0 = mx.getCurrentThreadCpuTime();
                    for (int k : order) {
                        adapter.execute(k, new Task(states[k], seqs[k]++, finished));
                    }
                    producerCpu[0] = mx.getCurrentThreadCpuTime() - cpu0;
                }, "producer");
                long cpu0 = Cpu.processNanos();
                long t0 = System.nanoTime();
                producer.start();
                if (!finished.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(peer + ": round " + r + " did not finish in 60 s");
                }
                long wall = System.nanoTime() - t0;
                long cpu = Cpu.processNanos() - cpu0;
                producer.join();
                adapter.close();
                if (r >= rounds / 3) { // the first third warms up
                    results.computeIfAbsent(peer, p -> new ArrayList<>()).add(new long[] {wall, producerCpu[0], cpu});
                }
            }
        }
        String ref = peers[peers.length - 1];
        List<long[]> refRounds = results.get(ref);
        System.out.printf("%s keys over %d contexts, %,d tasks a round, %d rounds (a third warm-up), %d cores%n",
                args[0], keys, tasks, rounds, cores);
        for (Map.Entry<String, List<long[]>> e : results.entrySet()) {
            List<long[]> l = e.getValue();
            double[] rate = new double[l.size()];
            double[] ratio = new double[l.size()];
            double[] producer = new double[l.size()];
            double[] process = new double[l.size()];
            for (int i = 0; i < l.size(); i++) {
                rate[i] = tasks / (l.get(i)[0] / 1e3);
                ratio[i] = (double) refRounds.get(i)[0] / l.get(i)[0];
                producer[i] = (double) l.get(i)[1] / tasks;
                process[i] = (double) l.get(i)[2] / tasks;
            }
            System.out.printf("%-10s %6.2f M tasks/s  x%.3f of %s  producer CPU %5.1f ns/task"
                            + "  process CPU %5.1f ns/task%n", e.getKey(), Summary.median(rate),
                    Summary.median(ratio), ref, Summary.median(producer), Summary.median(process));
        }
    }
}
