package io.github.gatlingexecutor.benchmarks.scenarios;

/** Keeps computed values observable so the JIT cannot drop the work that produced them. */
public final class Blackhole {
    private static volatile long sink;

    private Blackhole() {
    }

    public static void consume(long value) {
        sink ^= value;
    }
}
