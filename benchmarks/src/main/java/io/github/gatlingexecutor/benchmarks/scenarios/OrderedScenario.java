package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.ArrayList;
import java.util.List;

/**
 * A scenario that is one {@link OrderedWorkload}: fixed key sequences (one per producer) over {@code contexts} keys,
 * the same work in every task, run on the ordered peers plus the unordered ThreadPoolExecutor reference and, with a
 * single producer, the inline floor. Subclasses only choose the keys, the work and the labels.
 */
abstract class OrderedScenario extends Scenario {
    private static final long TIMEOUT_SECONDS = 120;

    protected final Sizes sizes;
    private final int contexts;
    private final int[][] keysByProducer;
    private final OrderedWorkload.Work work;
    private final double secondsPerTask;
    /** Also run GatlingExecutor bounded (limits never reached) and under a JFR recording: what they cost. */
    boolean withVariants;

    /**
     * @param keysByProducer producer p submits to keys {@code keysByProducer[p][0..]}, in that order
     * @param secondsPerTask rough wall time per task, for the up-front estimate only
     */
    OrderedScenario(String id, String title, String description, Sizes sizes, int contexts, int[][] keysByProducer,
                    OrderedWorkload.Work work, double secondsPerTask) {
        super(id, title, description, sizes.warmups(), sizes.repetitions());
        this.sizes = sizes;
        this.contexts = contexts;
        this.keysByProducer = keysByProducer;
        this.work = work;
        this.secondsPerTask = secondsPerTask;
    }

    /**
     * Inline ("caller runs") joins only with one producer: with several, it would run one context on several threads
     * at once.
     */
    @Override
    public List<Peer> peers() {
        List<Peer> peers = new ArrayList<>(Peer.orderedPeers(sizes.cores(), true));
        if (keysByProducer.length == 1) {
            peers.add(Peer.inline());
        }
        if (withVariants) {
            peers.addAll(Peer.gatlingVariants(sizes.cores()));
        }
        return Peer.filtered(peers);
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        return OrderedWorkload.run(peer, contexts, keysByProducer, work, TIMEOUT_SECONDS);
    }

    @Override
    public double estimatedSecondsPerRun() {
        long tasks = 0;
        for (int[] keys : keysByProducer) {
            tasks += keys.length;
        }
        return tasks * secondsPerTask;
    }
}
