package io.github.gatlingexecutor.benchmarks.scenarios;

/**
 * The seed design's comparison: 16 contexts, each fed {@code n} events of ~1,000 atomic increments, submitted
 * round-robin by one thread. Unlike the seed's code, the clock stops when <em>all</em> contexts have finished.
 */
public final class SeedBench extends OrderedScenario {
    public static final int CONTEXTS = 16;

    public SeedBench(Sizes sizes) {
        // ~5 us per task on one core here, spread over the cores, plus the slowest peers: ~3.5 us per task
        super("seed", "1. Seed scenario: " + CONTEXTS + " contexts x " + sizes.seedTasksPerContext()
                        + " tasks of ~1,000 atomic increments",
                "The seed design's benchmark, waiting for every context. 'inline' runs all tasks on the submitting"
                        + " thread; inline time / cores is the ideal bound for any executor.",
                sizes, CONTEXTS, new int[][] {Keys.roundRobin(CONTEXTS, sizes.seedTasksPerContext())},
                OrderedWorkload.SEED, 3.5e-6);
        withVariants = true; // GatlingExecutor bounded (never reached) and under JFR too: what they cost here
    }
}
