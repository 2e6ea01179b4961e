package io.github.gatlingexecutor.benchmarks;

import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.report.Table;
import io.github.gatlingexecutor.benchmarks.scenarios.Scenario;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;

import java.util.ArrayList;
import java.util.List;

/** Turns a scenario's summaries into a table: medians, threads, and each peer's ratio to GatlingExecutor. */
final class Tables {
    static final String INLINE = "inline (caller runs)";

    private Tables() {
    }

    static Summary find(List<Summary> summaries, String prefix) {
        for (Summary s : summaries) {
            if (s.peer.startsWith(prefix)) {
                return s;
            }
        }
        return null;
    }

    static Table of(Scenario scenario, List<Summary> summaries, int cores) {
        boolean latency = scenario.id.equals("latency") || scenario.id.equals("slow-key");
        List<String> extras = new ArrayList<>();
        for (Summary s : summaries) {
            if (!s.failed()) {
                extras.addAll(s.extra.keySet());
                break;
            }
        }
        List<String> headers = new ArrayList<>(List.of("peer", "time ms", "tasks/s", "threads created",
                "peak threads", latency ? "p99 vs Gatling" : "time vs Gatling"));
        headers.addAll(extras);
        Table t = new Table(scenario.title, scenario.description, headers);
        Summary g = find(summaries, Peer.GATLING);
        double gTime = g == null || g.failed() ? Double.NaN : g.medianNanos;
        double gP99 = g == null || g.failed() ? Double.NaN : g.extra.getOrDefault("p99 us", Double.NaN);
        for (Summary s : summaries) {
            List<String> row = new ArrayList<>();
            row.add(s.peer);
            if (s.failed()) {
                row.add("FAILED: " + s.failure);
                t.row(row);
                continue;
            }
            row.add(Table.num(s.medianNanos / 1e6));
            row.add(Table.num(s.throughput()));
            row.add(String.valueOf(s.threadsCreated));
            row.add(String.valueOf(s.peakThreads));
            double ratio = latency ? s.extra.getOrDefault("p99 us", Double.NaN) / gP99 : s.medianNanos / gTime;
            row.add(Table.num(ratio) + "x");
            for (String e : extras) {
                row.add(Table.num(s.extra.getOrDefault(e, Double.NaN)));
            }
            t.row(row);
            if (latency) {
                t.chart("submit-to-start p99", s.peer, s.extra.getOrDefault("p99 us", Double.NaN));
                t.chart("submit-to-start p50", s.peer, s.extra.getOrDefault("p50 us", Double.NaN));
            } else if (scenario.id.equals("coalescing")) {
                t.chart("age of value when processed, p99", s.peer, s.extra.getOrDefault("age p99 us", Double.NaN));
                t.chart("CPU (cores busy)", s.peer, s.extra.getOrDefault("CPU (cores busy)", Double.NaN));
            } else {
                t.chart("median time", s.peer, s.medianNanos / 1e6);
            }
        }
        t.chartUnit = latency ? "us" : scenario.id.equals("coalescing") ? "" : "ms";
        if (scenario.id.equals("seed")) {
            Summary inline = find(summaries, INLINE);
            if (inline != null && !inline.failed()) {
                double ideal = inline.medianNanos / cores;
                t.row(List.of("ideal bound (inline / " + cores + " cores)", Table.num(ideal / 1e6),
                        Table.num(inline.tasks * 1e9 / ideal), "-", "-", Table.num(ideal / gTime) + "x"));
                t.chart("median time", "ideal bound", ideal / 1e6);
            }
        }
        t.notes.add("time vs Gatling: the peer's median divided by GatlingExecutor's; above 1 means GatlingExecutor"
                + " was faster. 'no order' peers are unordered references, not checked for order.");
        t.notes.add("threads created: counted by a ThreadFactory given to each peer (GatlingExecutor: its workers"
                + " plus its checker thread); the worst of the measured runs.");
        if (scenario.id.equals("coalescing")) {
            t.notes.add("time = update phase + drain until every key's last update has run; tasks/s = updates"
                    + " submitted per second of that time.");
        }
        return t;
    }
}
