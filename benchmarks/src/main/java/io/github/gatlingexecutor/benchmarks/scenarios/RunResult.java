package io.github.gatlingexecutor.benchmarks.scenarios;

import java.util.LinkedHashMap;
import java.util.Map;

/** One measured run of one peer in one scenario. */
public final class RunResult {
    public final String peer;
    public final long nanos;
    public final long tasks;
    public final int threadsCreated;
    public final int peakThreads;
    /** Why the run does not count (order lost, tasks lost, timed out); null when it passed. */
    public final String failure;
    /** Scenario-specific numbers (percentiles, CPU, coalesced counts...), in display order. */
    public final Map<String, Double> extra;

    public RunResult(String peer, long nanos, long tasks, int threadsCreated, int peakThreads, String failure,
                     Map<String, Double> extra) {
        this.peer = peer;
        this.nanos = nanos;
        this.tasks = tasks;
        this.threadsCreated = threadsCreated;
        this.peakThreads = peakThreads;
        this.failure = failure;
        this.extra = extra == null ? new LinkedHashMap<>() : extra;
    }

    public static RunResult failed(String peer, String why) {
        return new RunResult(peer, 0, 0, 0, 0, why, null);
    }
}
