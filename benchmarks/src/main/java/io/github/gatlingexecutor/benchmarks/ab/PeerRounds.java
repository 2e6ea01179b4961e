package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;
import io.github.gatlingexecutor.benchmarks.scenarios.OrderedWorkload;
import io.github.gatlingexecutor.benchmarks.scenarios.RunResult;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a peer's time goes on tiny ordered tasks from one producer: the comparison runner's workload
 * ({@link OrderedWorkload}, a fresh executor per run, order checked), with rounds alternating between the peers in one
 * JVM and more of them than the runner's. Per peer it prints the median rate, the median of its per-round ratio to
 * the last peer named, the producer's CPU time per task and the process's.
 *
 * <p>Why the CPU times: this machine gives no hardware counters ({@code perf stat} reports cycles as not supported),
 * and on 2 shared cores single rates spread 1.5x between runs. With one producer the producer is the bottleneck of
 * every fast peer, so its CPU time per task (counted only while the thread runs) is the cost of a submit, steadier
 * than the rate, and the process's CPU time per task is what the whole hand-off costs.
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

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException("usage: PeerRounds uniform|zipf|hot KEYS TASKS_PER_ROUND ROUNDS PEERS");
        }
        int keys = Integer.parseInt(args[1]);
        int tasks = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        String[] peers = args[4].split(",");
        int cores = Runtime.getRuntime().availableProcessors();
        int[][] order = {switch (args[0]) {
            case "uniform" -> Keys.uniform(keys, tasks, 42);
            case "zipf" -> Keys.zipf(keys, 1.0, tasks, 43);
            case "hot" -> Keys.single(0, tasks);
            default -> throw new IllegalArgumentException("unknown distribution " + args[0]);
        }};
        Map<String, List<RunResult>> results = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < peers.length; j++) {
                String name = peers[(j + r) % peers.length]; // who goes first rotates
                Peer peer = name.equals("probe") ? Peer.shardProbes(cores).get(0) : Peer.byShortName(name, cores);
                System.gc(); // as the comparison runner does before each run: no peer pays for another's garbage
                RunResult result = OrderedWorkload.run(peer, keys, order, OrderedWorkload.TINY, 60);
                if (result.failure != null) {
                    throw new IllegalStateException(name + ", round " + r + ": " + result.failure);
                }
                if (r >= rounds / 3) { // the first third warms up
                    results.computeIfAbsent(name, p -> new ArrayList<>()).add(result);
                }
            }
        }
        String ref = peers[peers.length - 1];
        List<RunResult> refRounds = results.get(ref);
        System.out.printf("%s keys over %d contexts, %,d tasks a round, %d rounds (a third warm-up), %d cores%n",
                args[0], keys, tasks, rounds, cores);
        for (Map.Entry<String, List<RunResult>> e : results.entrySet()) {
            List<RunResult> l = e.getValue();
            double[] rate = new double[l.size()];
            double[] ratio = new double[l.size()];
            double[] producer = new double[l.size()];
            double[] process = new double[l.size()];
            for (int i = 0; i < l.size(); i++) {
                RunResult run = l.get(i);
                rate[i] = run.tasks / (run.nanos / 1e3);
                ratio[i] = (double) refRounds.get(i).nanos / run.nanos;
                producer[i] = run.extra.getOrDefault(OrderedWorkload.PRODUCER_CPU, Double.NaN);
                process[i] = run.extra.get(OrderedWorkload.CORES_BUSY) * run.nanos / run.tasks;
            }
            System.out.printf("%-10s %6.2f M tasks/s  x%.3f of %s  producer CPU %5.1f ns/task"
                            + "  process CPU %5.1f ns/task%n", e.getKey(), Summary.median(rate),
                    Summary.median(ratio), ref, Summary.median(producer), Summary.median(process));
        }
    }
}
