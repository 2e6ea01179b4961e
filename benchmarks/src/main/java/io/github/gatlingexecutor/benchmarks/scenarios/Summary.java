package io.github.gatlingexecutor.benchmarks.scenarios;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The medians of one peer's measured runs in one scenario. */
public final class Summary {
    public final String peer;
    public final boolean ordered;
    public final int runs;
    public final double medianNanos;
    public final long tasks;
    /** Most threads created / alive at once in any run (threads are a cost, so report the worst). */
    public final int threadsCreated;
    public final int peakThreads;
    public final String failure;
    public final Map<String, Double> extra;

    private Summary(String peer, boolean ordered, int runs, double medianNanos, long tasks, int threadsCreated,
                    int peakThreads, String failure, Map<String, Double> extra) {
        this.peer = peer;
        this.ordered = ordered;
        this.runs = runs;
        this.medianNanos = medianNanos;
        this.tasks = tasks;
        this.threadsCreated = threadsCreated;
        this.peakThreads = peakThreads;
        this.failure = failure;
        this.extra = extra;
    }

    public boolean failed() {
        return failure != null;
    }

    /** Tasks per second at the median time. */
    public double throughput() {
        return medianNanos <= 0 ? 0 : tasks * 1e9 / medianNanos;
    }

    public static Summary of(String peer, boolean ordered, List<RunResult> runs) {
        String failure = null;
        for (RunResult r : runs) {
            if (r.failure != null) {
                failure = r.failure;
                break;
            }
        }
        if (failure != null || runs.isEmpty()) {
            return new Summary(peer, ordered, runs.size(), 0, 0, 0, 0, failure == null ? "no runs" : failure,
                    new LinkedHashMap<>());
        }
        double[] nanos = runs.stream().mapToDouble(r -> r.nanos).toArray();
        int threads = runs.stream().mapToInt(r -> r.threadsCreated).max().orElse(0);
        int peak = runs.stream().mapToInt(r -> r.peakThreads).max().orElse(0);
        Map<String, Double> extra = new LinkedHashMap<>();
        for (String key : runs.get(0).extra.keySet()) {
            List<Double> values = new ArrayList<>();
            for (RunResult r : runs) {
                Double v = r.extra.get(key);
                if (v != null) {
                    values.add(v);
                }
            }
            extra.put(key, median(values.stream().mapToDouble(Double::doubleValue).toArray()));
        }
        return new Summary(peer, ordered, runs.size(), median(nanos), runs.get(0).tasks, threads, peak, null, extra);
    }

    public static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] v = values.clone();
        Arrays.sort(v);
        int m = v.length / 2;
        return v.length % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
    }
}
