package io.github.gatlingexecutor.benchmarks;

import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.report.Table;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Checks the project's performance targets against a run's medians and says plainly which were met. */
final class Targets {
    private Targets() {
    }

    static List<String> evaluate(Map<String, List<Summary>> byId, Table idleCpu, Table churn, int cores) {
        List<String> out = new ArrayList<>();
        List<Summary> seed = byId.get("seed");
        if (seed != null) {
            Summary g = Tables.find(seed, Peer.GATLING);
            Summary inline = Tables.find(seed, Tables.INLINE);
            Summary best = bestOrderedPeer(seed);
            if (ok(g) && ok(inline) && best != null) {
                double ideal = inline.medianNanos / cores;
                double vsIdeal = g.medianNanos / ideal;
                out.add(verdict(vsIdeal <= 1.10, String.format(Locale.ROOT,
                        "seed: within 10%% of the ideal bound (GatlingExecutor %.0f ms = %.2fx of ideal %.0f ms)",
                        g.medianNanos / 1e6, vsIdeal, ideal / 1e6)));
                out.add(verdict(g.medianNanos <= best.medianNanos, String.format(Locale.ROOT,
                        "seed: no slower than the best ordered peer (%s %.0f ms; GatlingExecutor %.2fx of it)",
                        best.peer, best.medianNanos / 1e6, g.medianNanos / best.medianNanos)));
                out.add(verdict(g.peakThreads <= cores + 1, String.format(Locale.ROOT,
                        "seed: at most cores+1 = %d threads (peak %d, created %d, checker included)", cores + 1,
                        g.peakThreads, g.threadsCreated)));
            } else {
                out.add("NOT MEASURED  seed targets (GatlingExecutor or inline failed or missing)");
            }
        }
        throughputTarget(out, byId.get("tiny-uniform"), 2.0, "tiny uniform: >= 2x the best ordered peer's throughput");
        throughputTarget(out, byId.get("tiny-hot"), 1.0, "one hot key: >= the best ordered peer's throughput");
        List<Summary> blocking = byId.get("blocking");
        if (blocking != null) {
            Summary g = Tables.find(blocking, Peer.GATLING);
            Summary fixed = Tables.find(blocking, "ThreadPoolExecutor");
            Summary cached = Tables.find(blocking, "cached pool");
            if (ok(g) && ok(fixed) && ok(cached)) {
                double speedup = fixed.medianNanos / g.medianNanos;
                out.add(verdict(speedup >= 5, String.format(Locale.ROOT,
                        "blocking: >= 5x the fixed pool of %d threads (%.2fx)", cores, speedup)));
                out.add(verdict(g.threadsCreated < cached.threadsCreated, String.format(Locale.ROOT,
                        "blocking: fewer threads than a cached pool (%d vs %d created; peak %d vs %d)",
                        g.threadsCreated, cached.threadsCreated, g.peakThreads, cached.peakThreads)));
            } else {
                out.add("NOT MEASURED  blocking targets (a peer failed)");
            }
        }
        List<Summary> latency = byId.get("latency");
        if (latency != null) {
            Summary g = Tables.find(latency, Peer.GATLING);
            Summary tpe = Tables.find(latency, "ThreadPoolExecutor");
            if (ok(g) && ok(tpe)) {
                double gp = g.extra.get("p99 us");
                double tp = tpe.extra.get("p99 us");
                out.add(verdict(gp <= tp, String.format(Locale.ROOT,
                        "low load: p99 no worse than ThreadPoolExecutor (%.1f us vs %.1f us)", gp, tp)));
            }
        }
        if (idleCpu != null) {
            for (List<String> row : idleCpu.rows) {
                if (row.get(0).equals(Peer.GATLING)) {
                    double ms = Double.parseDouble(row.get(1).replace(",", ""));
                    out.add(verdict(ms <= 5, String.format(Locale.ROOT,
                            "idle CPU ~0 (%.2f ms CPU per idle second above the JVM baseline; threshold 5 ms)", ms)));
                }
            }
        }
        if (churn != null) {
            for (List<String> row : churn.rows) {
                if (row.get(0).equals(Peer.GATLING)) {
                    out.add(verdict("0".equals(row.get(row.size() - 1)),
                            "1M contexts come and go: liveContexts() back to 0 (was " + row.get(row.size() - 1)
                                    + "; " + row.get(3) + " MB retained)"));
                }
            }
        }
        return out;
    }

    private static void throughputTarget(List<String> out, List<Summary> summaries, double factor, String what) {
        if (summaries == null) {
            return;
        }
        Summary g = Tables.find(summaries, Peer.GATLING);
        Summary best = bestOrderedPeer(summaries);
        if (!ok(g) || best == null) {
            out.add("NOT MEASURED  " + what);
            return;
        }
        double ratio = g.throughput() / best.throughput();
        out.add(verdict(ratio >= factor, String.format(Locale.ROOT, "%s (%.2fx of %s: %.2fM vs %.2fM tasks/s)", what,
                ratio, best.peer, g.throughput() / 1e6, best.throughput() / 1e6)));
    }

    /** Fastest peer that keeps order, other than GatlingExecutor and the inline floor. */
    static Summary bestOrderedPeer(List<Summary> summaries) {
        Summary best = null;
        for (Summary s : summaries) {
            if (!ok(s) || !s.ordered || s.peer.startsWith(Peer.GATLING) || s.peer.equals(Tables.INLINE)) {
                continue;
            }
            if (best == null || s.medianNanos < best.medianNanos) {
                best = s;
            }
        }
        return best;
    }

    private static boolean ok(Summary s) {
        return s != null && !s.failed();
    }

    private static String verdict(boolean met, String text) {
        return (met ? "MET     " : "MISSED  ") + text;
    }
}
