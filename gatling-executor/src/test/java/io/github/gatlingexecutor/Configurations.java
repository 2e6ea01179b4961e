package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.gatling;

import java.time.Duration;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The executor configurations the parameterized concurrency tests run against, in one place: a suite written once
 * runs on each ({@code @MethodSource("io.github.gatlingexecutor.Configurations#builders")}). Each is a builder
 * supplier, so every test gets a fresh executor with a unique name.
 */
final class Configurations {
    private Configurations() {
    }

    /** Large enough that no test here reaches it: the bounded submit path, with admission never refusing. */
    private static final int NEVER_REACHED = 1 << 24;

    static Stream<Arguments> builders() {
        return Stream.of(
                config("core=2", () -> gatling("cfg").coreThreads(2)),
                // One task per batch: a lane goes round the ready queue after every task.
                config("core=4 batch=1", () -> gatling("cfg").coreThreads(4).batchSize(1).minTurn(Duration.ZERO)),
                // One core worker, a fast checker and a short keep-alive: a task that parks past 20 ms (the ordering
                // suite has some) has the contexts behind it moved to auxiliary workers, which retire 30 ms later.
                config("core=1 max=4 check=20ms", () -> gatling("cfg").coreThreads(1).maxThreads(4)
                        .checkPeriod(Duration.ofMillis(20)).blockedThreshold(Duration.ofMillis(20))
                        .auxiliaryKeepAlive(Duration.ofMillis(30))),
                // Capacity limits set: every submit takes the bounded path (places counted, lane heads per task).
                config("core=2 limits never reached", () -> gatling("cfg").coreThreads(2).maxQueued(NEVER_REACHED)
                        .maxQueuedPerContext(NEVER_REACHED)));
    }

    private static Arguments config(String label, Supplier<GatlingExecutor.Builder> builder) {
        return Arguments.of(label, builder);
    }
}
