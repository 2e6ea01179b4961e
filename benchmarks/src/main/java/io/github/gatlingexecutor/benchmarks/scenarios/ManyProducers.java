package io.github.gatlingexecutor.benchmarks.scenarios;

/**
 * Many threads submitting tiny tasks into few contexts, as in SOFAJRaft's MpscSingleThreadExecutor benchmark: the
 * cost measured is contention on the submit path. Order is checked per (producer, context). No inline peer (see
 * {@link OrderedScenario#peers()}).
 */
public final class ManyProducers extends OrderedScenario {
    public static final int CONTEXTS = 8;

    public ManyProducers(Sizes sizes, int producers) {
        super("producers-" + producers, "3. " + producers + " producers into " + CONTEXTS + " contexts ("
                        + sizes.producerTasks() + " tiny tasks in all)",
                "Submit-path contention; each producer spreads its tasks over the contexts at random.",
                sizes, CONTEXTS, keys(sizes, producers), OrderedWorkload.TINY, 0.6e-6);
    }

    private static int[][] keys(Sizes sizes, int producers) {
        int[][] keys = new int[producers][];
        for (int p = 0; p < producers; p++) {
            keys[p] = Keys.uniform(CONTEXTS, sizes.producerTasks() / producers, 100 + p);
        }
        return keys;
    }
}
