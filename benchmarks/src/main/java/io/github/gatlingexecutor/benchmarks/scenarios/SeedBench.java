package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.ArrayList;
import java.util.List;

/**
 * The seed design's comparison: 16 contexts, each fed {@code n} events of ~1,000 atomic increments, submitted
 * round-robin by one thread. Unlike the seed's code, the clock stops when <em>all</em> contexts have finished.
 */
public final class SeedBench extends Scenario {
    public static final int CONTEXTS = 16;
    private final Sizes sizes;
    private final int[][] keys;

    public SeedBench(Sizes sizes) {
        super("seed", "1. Seed scenario: " + CONTEXTS + " contexts x " + sizes.seedTasksPerContext()
                        + " tasks of ~1,000 atomic increments",
                "The seed design's benchmark, waiting for every context. 'inline' runs all tasks on the submitting"
                        + " thread; inline time / cores is the ideal bound for any executor.",
                sizes.warmups(), sizes.repetitions());
        this.sizes = sizes;
        this.keys = new int[][] {Keys.roundRobin(CONTEXTS, sizes.seedTasksPerContext())};
    }

    @Override
    public List<Peer> peers() {
        List<Peer> peers = new ArrayList<>(Peer.orderedPeers(sizes.cores(), true));
        peers.add(Peer.inline());
        return Peer.filtered(peers);
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        return OrderedWorkload.run(peer, CONTEXTS, keys, OrderedWorkload.SEED, 120);
    }

    @Override
    public double estimatedSecondsPerRun() {
        // ~5 us per task on one core here, spread over the cores, plus the slowest peers
        return CONTEXTS * (double) sizes.seedTasksPerContext() * 3.5e-6;
    }
}
