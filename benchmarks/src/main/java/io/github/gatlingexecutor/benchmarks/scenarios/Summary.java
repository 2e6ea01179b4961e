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
    /** The median of the runs' own rates where their task counts differ; NaN where they are all the same. */
    private final double medianRate;

    private Summary(String peer, boolean ordered, int runs, double medianNanos, long tasks, int threadsCreated,
                    int peakThreads, String failure, Map<String, Double> extra, double medianRate) {
        this.peer = peer;
        this.ordered = ordered;
        this.runs = runs;
        this.medianNanos = medianNanos;
        this.tasks = tasks;
        this.threadsCreated = threadsCreated;
        this.peakThreads = peakThreads;
        this.failure = failure;
        this.extra = extra;
        this.medianRate = medianRate;
    }

    public boolean failed() {
        return failure != null;
    }

    /**
     * Tasks per second: at the median time where every run did the same number of tasks; else (a run for a fixed time,
     * as coalescing's and overload's, does as many as it can) the median of the runs' own rates, where the first run's
     * count over the median time was off by a few percent.
     */
    public double throughput() {
        if (!Double.isNaN(medianRate)) {
            return medianRate;
        }
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
                    new LinkedHashMap<>(), Double.NaN);
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
        double medianRate = runs.stream().mapToLong(r -> r.tasks).distinct().count() > 1
                ? median(runs.stream().mapToDouble(r -> r.nanos <= 0 ? 0 : r.tasks * 1e9 / r.nanos).toArray())
                : Double.NaN;
        return new Summary(peer, ordered, runs.size(), median(nanos), runs.get(0).tasks, threads, peak, null, extra,
                medianRate);
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
