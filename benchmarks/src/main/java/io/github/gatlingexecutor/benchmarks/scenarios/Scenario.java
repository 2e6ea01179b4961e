package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

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

    /**
     * Measured runs for a scenario whose figure moves a lot from run to run (a tail latency): odd, so the median is
     * one run's figure and not the mean of two, and at least three.
     */
    protected static int oddAtLeast3(int repetitions) {
        int n = Math.max(3, repetitions);
        return n % 2 == 0 ? n + 1 : n;
    }

    /**
     * Runs one empty task on each of keys {@code 0 .. keys-1}, one per {@code intervalNanos} (the scenario's own
     * pace), and waits for them, before a latency scenario's clock starts: whatever a peer makes for a key on its
     * first use (a lane object, an executor and its thread) is then made, for every peer alike, and the first task of
     * each key does not time it. Paced, not in one burst: a burst of a thousand contexts followed by a trickle is a
     * load of its own (in one quick run GatlingExecutor's low-load row then read p50 18 us and p99 1.2 ms, against
     * 8 us and 0.1 ms paced; docs/hand-off-experiments.md, thirty-sixth set), not the steady low load these scenarios
     * measure. Empty tasks are not order-checked.
     */
    protected static void touchEveryKey(OrderedExecutorAdapter adapter, int keys, long intervalNanos)
            throws InterruptedException {
        CountDownLatch ran = new CountDownLatch(keys);
        long due = System.nanoTime();
        for (int k = 0; k < keys; k++) {
            due += intervalNanos;
            parkUntil(due);
            adapter.execute(k, ran::countDown);
        }
        if (!ran.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the first task of " + ran.getCount() + " keys did not run in 30 s");
        }
    }

    /**
     * Parks until {@code System.nanoTime()} reaches {@code due}: the pacing of the producers that submit on a schedule.
     * A park may end early (spuriously, or by the timer's slack), so it parks again for what is left.
     */
    public static void parkUntil(long due) {
        long wait;
        while ((wait = due - System.nanoTime()) > 0) {
            LockSupport.parkNanos(wait);
        }
    }

    public double estimatedSeconds() {
        // + ~0.15 s per run for the GC and the adapter start/stop between runs
        return peers().size() * (warmups + repetitions) * (estimatedSecondsPerRun() + 0.15);
    }
}
