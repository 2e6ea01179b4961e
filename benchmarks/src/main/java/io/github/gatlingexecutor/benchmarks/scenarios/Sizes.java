package io.github.gatlingexecutor.benchmarks.scenarios;

/** Workload sizes for a quick look (about four minutes) or a full run (about twenty minutes on 2 cores). */
public record Sizes(boolean quick, int cores,
                    int seedTasksPerContext, int tinyTasks, int producerTasks, double coalescingSeconds,
                    int blockingTasks, double latencySeconds, int memoryContexts, int memoryThreadContexts,
                    int churnContexts, double idleSeconds, double slowKeySeconds,
                    int warmups, int repetitions) {

    public static Sizes quick(int cores) {
        return new Sizes(true, cores, 10_000, 200_000, 200_000, 1.0, 10_000, 1.0, 20_000, 500, 200_000, 0.5, 0.5, 1, 3);
    }

    public static Sizes full(int cores) {
        return new Sizes(false, cores, 50_000, 1_000_000, 1_000_000, 3.0, 40_000, 3.0, 100_000, 2_000, 1_000_000,
                1.0, 1.0, 2, 5);
    }
}
