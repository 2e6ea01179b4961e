package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.List;

/**
 * A workload measured the same way on every peer. The runner calls {@link #runOnce} for every peer in turn, round
 * after round, so that whatever the machine does meanwhile (other builds, frequency changes, JIT) hits all peers
 * alike.
 */
public abstract class Scenario {
    public final String id;
    public final String title;
    public final String description;
    public final int warmups;
    public final int repetitions;

    protected Scenario(String id, String title, String description, int warmups, int repetitions) {
        this.id = id;
        this.title = title;
        this.description = description;
        this.warmups = warmups;
        this.repetitions = repetitions;
    }

    public abstract List<Peer> peers();

    /** Makes a fresh adapter, runs the workload once, closes the adapter. Must not throw for a peer's failure. */
    public abstract RunResult runOnce(Peer peer) throws InterruptedException;

    /** Rough seconds one run of one peer takes, for the up-front estimate. */
    public abstract double estimatedSecondsPerRun();

    /** The name of the primary measure in tables: time by default; throughput-driven scenarios may override. */
    public boolean timeMatters() {
        return true;
    }

    public double estimatedSeconds() {
        // + ~0.15 s per run for the GC and the adapter start/stop between runs
        return peers().size() * (warmups + repetitions) * (estimatedSecondsPerRun() + 0.15);
    }
}
