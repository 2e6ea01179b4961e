package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.List;

/**
 * Many threads submitting tiny tasks into few contexts, as in SOFAJRaft's MpscSingleThreadExecutor benchmark: the
 * cost measured is contention on the submit path. Order is checked per (producer, context).
 */
public final class ManyProducers extends Scenario {
    public static final int CONTEXTS = 8;
    private final Sizes sizes;
    private final int[][] keys;

    public ManyProducers(Sizes sizes, int producers) {
        super("producers-" + producers, "3. " + producers + " producers into " + CONTEXTS + " contexts ("
                        + sizes.producerTasks() + " tiny tasks in all)",
                "Submit-path contention; each producer spreads its tasks over the contexts at random.",
                sizes.warmups(), sizes.repetitions());
        this.sizes = sizes;
        this.keys = new int[producers][];
        for (int p = 0; p < producers; p++) {
            keys[p] = Keys.uniform(CONTEXTS, sizes.producerTasks() / producers, 100 + p);
        }
    }

    @Override
    public List<Peer> peers() {
        // No inline: with several producers, "caller runs" would run one context on several threads at once.
        return Peer.filtered(Peer.orderedPeers(sizes.cores(), true));
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        return OrderedWorkload.run(peer, CONTEXTS, keys, OrderedWorkload.TINY, 120);
    }

    @Override
    public double estimatedSecondsPerRun() {
        return sizes.producerTasks() * 0.6e-6;
    }
}
