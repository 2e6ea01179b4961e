package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

/**
 * Tasks that do nothing but check their order, across 1,024 contexts, from one producer: the cost measured is the
 * hand-off. Three key distributions: uniform, Zipf (s = 1: a few hot keys, a long tail), and one hot key.
 */
public final class TinyTasks extends OrderedScenario {
    public static final int CONTEXTS = 1024;

    private TinyTasks(String id, String title, String description, Sizes sizes, int[] keys) {
        super(id, title, description, sizes, CONTEXTS, new int[][] {keys}, OrderedWorkload.TINY, 0.5e-6);
    }

    /** Also runs the bounded and JFR variants of GatlingExecutor (see {@link Peer#gatlingVariants}). */
    public static TinyTasks uniform(Sizes s) {
        TinyTasks t = new TinyTasks("tiny-uniform", "2a. Tiny tasks, " + CONTEXTS + " contexts, uniform keys ("
                + s.tinyTasks() + " tasks, 1 producer)", "Hand-off cost when work is spread evenly.", s,
                Keys.uniform(CONTEXTS, s.tinyTasks(), 42));
        t.withVariants = true;
        return t;
    }

    public static TinyTasks zipf(Sizes s) {
        return new TinyTasks("tiny-zipf", "2b. Tiny tasks, " + CONTEXTS + " contexts, Zipf keys s=1 ("
                + s.tinyTasks() + " tasks, 1 producer)", "A few hot keys and a long tail: fairness and batching.",
                s, Keys.zipf(CONTEXTS, 1.0, s.tinyTasks(), 43));
    }

    public static TinyTasks hotKey(Sizes s) {
        return new TinyTasks("tiny-hot", "2c. Tiny tasks, one hot key (" + s.tinyTasks() + " tasks, 1 producer)",
                "Everything in one context: at best one thread can run it; the cost is the hand-off to it.", s,
                Keys.single(0, s.tinyTasks()));
    }
}
