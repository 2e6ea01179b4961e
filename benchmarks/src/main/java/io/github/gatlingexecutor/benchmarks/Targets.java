package io.github.gatlingexecutor.benchmarks;

import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.report.Table;
import io.github.gatlingexecutor.benchmarks.scenarios.Overload;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Checks the project's performance targets against a run's medians and says plainly which were met. */
final class Targets {
    private Targets() {
    }

    static List<String> evaluate(Map<String, List<Summary>> byId, Table idleCpu, Table churn, Table observed,
            int cores) {
        List<String> out = new ArrayList<>();
        List<Summary> seed = byId.get("seed");
        if (seed != null) {
            Summary g = Tables.find(seed, Peer.GATLING);
            Summary inline = Tables.find(seed, Tables.INLINE);
            Summary best = bestOrderedPeer(seed);
            if (ok(g) && ok(inline) && best != null) {
                double ideal = inline.medianNanos / cores;
                double vsIdeal = g.medianNanos / ideal;
                out.add(verdict(vsIdeal <= 1.05, String.format(Locale.ROOT,
                        "seed: within 5%% of the ideal bound (GatlingExecutor %.0f ms = %.2fx of ideal %.0f ms)",
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
        throughputTarget(out, byId.get("tiny-uniform"), 1.0, "tiny uniform: >= the best ordered peer's throughput"
                + " (aim: 1.5x)");
        variantTarget(out, byId.get("seed"), Peer.GATLING_LIMITS_UNREACHED, 0.95,
                "seed, limits set but never reached: within 5% of the unbounded executor");
        variantTarget(out, byId.get("tiny-uniform"), Peer.GATLING_LIMITS_UNREACHED, 0.95,
                "tiny uniform, limits set but never reached: within 5% of the unbounded executor");
        variantTarget(out, byId.get("tiny-uniform"), Peer.GATLING_JFR, 0.95,
                "tiny uniform, JFR recording on (default settings): within 5% of no recording");
        List<Summary> overload = byId.get("overload");
        if (overload != null) {
            Summary g = Tables.find(overload, Peer.GATLING);
            Summary b = Tables.find(overload, Overload.GATLING_BOUNDED);
            if (ok(g) && ok(b)) {
                double ratio = b.extra.get("completed/s") / g.extra.get("completed/s");
                out.add(verdict(ratio >= 0.9, String.format(Locale.ROOT,
                        "overload: maxQueued + block completes within 10%% of the unbounded executor (%.2fx: %.0f vs"
                                + " %.0f tasks/s)", ratio, b.extra.get("completed/s"), g.extra.get("completed/s"))));
                out.add(verdict(b.extra.get("peak heap +MB") < g.extra.get("peak heap +MB"), String.format(
                        Locale.ROOT, "overload: bounded heap growth below the unbounded one's (%.1f MB vs %.1f MB)",
                        b.extra.get("peak heap +MB"), g.extra.get("peak heap +MB"))));
            } else {
                out.add("NOT MEASURED  overload targets (a GatlingExecutor run failed)");
            }
        }
        throughputTarget(out, byId.get("tiny-zipf"), 1.0, "tiny Zipf: >= the best ordered peer's throughput");
        throughputTarget(out, byId.get("tiny-hot"), 1.0, "one hot key: >= the best ordered peer's throughput");
        throughputTarget(out, byId.get("producers-8"), 1.0, "8 producers: >= the best ordered peer's throughput");
        throughputTarget(out, byId.get("producers-32"), 1.0, "32 producers: >= the best ordered peer's throughput");
        for (String id : CPU_BOUND) {
            List<Summary> summaries = byId.get(id);
            Summary g = summaries == null ? null : Tables.find(summaries, Peer.GATLING);
            if (ok(g)) {
                out.add(verdict(g.peakThreads <= cores + 1, String.format(Locale.ROOT,
                        "%s: at most cores+1 = %d threads, checker included (peak %d)", id, cores + 1,
                        g.peakThreads)));
            }
        }
        List<Summary> slow = byId.get("slow-key");
        if (slow != null) {
            Summary g = Tables.find(slow, Peer.GATLING);
            Summary best = lowestP99(slow);
            if (ok(g) && best != null) {
                double gp = g.extra.get("p99 us");
                double bp = best.extra.get("p99 us");
                out.add(verdict(gp <= bp, String.format(Locale.ROOT,
                        "one slow key: other contexts' p99 wait <= the best peer's (%.1f us vs %s %.1f us)", gp,
                        best.peer, bp)));
                for (String pinned : PINNED) {
                    Summary p = Tables.find(slow, pinned);
                    if (ok(p)) {
                        double pp = p.extra.get("p99 us");
                        out.add(verdict(pp >= 100 * gp, String.format(Locale.ROOT,
                                "one slow key: >= 100x better p99 than pinned %s (%.1f us vs %.1f us: %.0fx)",
                                p.peer, gp, pp, pp / gp)));
                    }
                }
            } else {
                out.add("NOT MEASURED  slow key targets (GatlingExecutor or every peer failed)");
            }
        }
        List<Summary> coalescing = byId.get("coalescing");
        if (coalescing != null) {
            Summary g = Tables.find(coalescing, Peer.GATLING);
            Summary map = Tables.find(coalescing, "ConcurrentHashMap");
            if (ok(g) && ok(map)) {
                double gu = g.extra.get("updates/s (M)");
                double mu = map.extra.get("updates/s (M)");
                double ga = g.extra.get("age p99 us");
                double ma = map.extra.get("age p99 us");
                out.add(verdict(gu >= mu, String.format(Locale.ROOT,
                        "coalescing: updates/s >= the map + drain peer's (%.2fM vs %.2fM)", gu, mu)));
                out.add(verdict(ga <= ma, String.format(Locale.ROOT,
                        "coalescing: age p99 no worse than the map + drain peer's (%.1f us vs %.1f us)", ga, ma)));
            } else {
                out.add("NOT MEASURED  coalescing targets (GatlingExecutor or the map + drain peer failed)");
            }
        }
        List<Summary> blocking = byId.get("blocking");
        if (blocking != null) {
            Summary g = Tables.find(blocking, Peer.GATLING);
            Summary fixed = Tables.find(blocking, "ThreadPoolExecutor");
            Summary cached = Tables.find(blocking, "cached pool");
            if (ok(g) && ok(fixed) && ok(cached)) {
                double speedup = fixed.medianNanos / g.medianNanos;
                out.add(verdict(speedup >= 10, String.format(Locale.ROOT,
                        "blocking: >= 10x the fixed pool of %d threads (%.2fx)", cores, speedup)));
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
                for (String p : List.of("p50 us", "p99 us")) {
                    double gp = g.extra.get(p);
                    double tp = tpe.extra.get(p);
                    out.add(verdict(gp <= tp, String.format(Locale.ROOT,
                            "low load: %s no worse than ThreadPoolExecutor (%.1f us vs %.1f us)",
                            p.substring(0, 3), gp, tp)));
                }
            } else {
                out.add("NOT MEASURED  low load targets (GatlingExecutor or ThreadPoolExecutor failed)");
            }
        }
        if (idleCpu != null) {
            for (List<String> row : idleCpu.rows) {
                if (row.get(0).equals(Peer.GATLING)) {
                    double ms = Double.parseDouble(row.get(1).replace(",", ""));
                    out.add(verdict(ms <= 5, String.format(Locale.ROOT, "idle CPU ~0 (%.2f ms of CPU per idle second"
                            + " on the executor's own threads; threshold 5 ms)", ms)));
                }
            }
        }
        if (observed != null) {
            for (List<String> row : observed.rows) {
                if (row.get(0).equals("1,000,000")) {
                    double share = Double.parseDouble(row.get(2).replace(",", ""));
                    out.add(verdict(share < 1, String.format(Locale.ROOT,
                            "busiestContexts(10) with a million lanes waiting: under 1%% of a core at once a second"
                                    + " (%.2f%%)", share)));
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

    /** A variant of GatlingExecutor against the plain one, in the same run. */
    private static void variantTarget(List<String> out, List<Summary> summaries, String variant, double factor,
                                      String what) {
        if (summaries == null) {
            return;
        }
        Summary g = Tables.find(summaries, Peer.GATLING);
        Summary v = Tables.find(summaries, variant);
        if (!ok(g) || !ok(v)) {
            out.add("NOT MEASURED  " + what);
            return;
        }
        double ratio = v.throughput() / g.throughput();
        out.add(verdict(ratio >= factor, String.format(Locale.ROOT, "%s (%.2fx: %.2fM vs %.2fM tasks/s)", what, ratio,
                v.throughput() / 1e6, g.throughput() / 1e6)));
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

    /** Scenarios whose tasks only compute: the pool must not grow past the cores for them. */
    private static final List<String> CPU_BOUND = List.of("seed", "tiny-uniform", "tiny-zipf", "tiny-hot",
            "producers-8", "producers-32", "slow-key");
    /** Peers that pin each key to one thread. */
    private static final List<String> PINNED = List.of("SOFAJRaft", "BookKeeper");

    /**
     * GatlingExecutor against the best ordered peer, per scenario, as one number each: above 1 means GatlingExecutor
     * is ahead (throughput ratio, or the peer's p99 over GatlingExecutor's for the latency scenarios, or updates/s
     * for coalescing). Scenarios where either side failed are left out.
     */
    static Map<String, Double> atAGlance(Map<String, List<Summary>> byId) {
        Map<String, Double> out = new LinkedHashMap<>();
        for (Map.Entry<String, List<Summary>> e : byId.entrySet()) {
            List<Summary> summaries = e.getValue();
            Summary g = Tables.find(summaries, Peer.GATLING);
            if (!ok(g)) {
                continue;
            }
            String id = e.getKey();
            if (id.equals("overload")) {
                // Its runs last a fixed time, so a ratio of times reads 1.00x whatever happened; and its peers' rates
                // include the harness's retry after each refusal, where ours waits inside execute. Its own targets
                // compare GatlingExecutor with itself, bounded and unbounded.
                continue;
            }
            if (id.equals("latency") || id.equals("slow-key")) {
                Summary best = lowestP99(summaries);
                if (best != null) {
                    out.put(id + " (p99 vs " + best.peer + ")", best.extra.get("p99 us") / g.extra.get("p99 us"));
                }
            } else if (id.equals("coalescing")) {
                Summary map = Tables.find(summaries, "ConcurrentHashMap");
                if (ok(map)) {
                    out.put(id + " (updates/s vs map + drain)",
                            g.extra.get("updates/s (M)") / map.extra.get("updates/s (M)"));
                }
            } else {
                Summary best = bestOrderedPeer(summaries);
                if (best != null) {
                    out.put(id + " (vs " + best.peer + ")", best.medianNanos / g.medianNanos);
                }
            }
        }
        return out;
    }

    /** The ordered peer (not GatlingExecutor) whose p99 wait is lowest. */
    private static Summary lowestP99(List<Summary> summaries) {
        Summary best = null;
        for (Summary s : summaries) {
            if (!ok(s) || !s.ordered || s.peer.startsWith(Peer.GATLING) || !s.extra.containsKey("p99 us")) {
                continue;
            }
            if (best == null || s.extra.get("p99 us") < best.extra.get("p99 us")) {
                best = s;
            }
        }
        return best;
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
