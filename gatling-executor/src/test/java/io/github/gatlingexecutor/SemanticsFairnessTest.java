package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.millisSince;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.Seq;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** SPEC semantics 5: the barrel (bounded batches) and idle workers taking queued work at once. */
class SemanticsFairnessTest {

    private static final int BUSY_TASKS = 100_000;

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    /**
     * With one worker (no other thread may help), a context with 100,000 queued tasks must not delay a fresh task by
     * more than a few turns: measured in busy-context tasks run between the fresh submit and the fresh run. A turn is
     * whole batches until it has lasted {@code minTurn}; the busy tasks take at least 10 us each, so a turn holds at
     * most {@code batchSize + minTurn / 10 us} of them.
     */
    @ParameterizedTest(name = "batchSize={0}, minTurn={1} us")
    @CsvSource({"64, 100", "8, 100", "8, 0"})
    void aBusyContextDoesNotStarveAFreshOne(int batchSize, int minTurnMicros) {
        GatlingExecutor e = cleanup.track(gatling("fair").coreThreads(1).maxThreads(1).batchSize(batchSize)
                .minTurn(Duration.ofNanos(minTurnMicros * 1_000L)).build());
        AtomicInteger busyRuns = new AtomicInteger();
        CountDownLatch gate = queueBehindABlockedTask(e, BUSY_TASKS, () -> {
            TestSupport.spin(10);
            busyRuns.incrementAndGet();
        });
        gate.countDown();
        long limit = 4L * (batchSize + minTurnMicros / 10);
        measure(e, busyRuns, limit, "fresh sequential", body -> e.execute(new Seq("fresh", body)));
        measure(e, busyRuns, limit, "fresh coalescing", body -> e.execute(new Coal("fresh", body)));
        measure(e, busyRuns, limit, "fresh plain", e::execute);
        measure(e, busyRuns, limit, "fresh submit", e::submit);
    }

    /**
     * A turn shorter than {@code minTurn} goes on past its batch even while other work waits: with a turn longer than
     * the test, a busy context's 2,000 tiny tasks all run before a fresh context queued behind it, in batches of 8.
     * A worker that rotated after each batch ran the fresh task after 7 of them (the first batch holds the blocking
     * task).
     */
    @Test
    void aTurnShorterThanMinTurnGoesOnPastItsBatch() {
        GatlingExecutor e = cleanup.track(gatling("fair").coreThreads(1).maxThreads(1).batchSize(8)
                .minTurn(Duration.ofHours(1)).build());
        int busyTasks = 2_000;
        AtomicInteger busyRuns = new AtomicInteger();
        CountDownLatch gate = queueBehindABlockedTask(e, busyTasks, busyRuns::incrementAndGet);
        CountDownLatch ran = new CountDownLatch(1);
        int[] atRun = new int[1];
        e.execute(new Seq("fresh", () -> {
            atRun[0] = busyRuns.get();
            ran.countDown();
        }));
        gate.countDown();
        await(ran, "the fresh task");
        assertEquals(busyTasks, atRun[0], "the fresh task ran after " + atRun[0] + " of the busy context's "
                + busyTasks + " tasks: the busy lane was rotated inside its turn");
    }

    /**
     * Starts the context "busy" on a task that blocks until the returned gate opens, then queues {@code tasks} runs of
     * {@code each} behind it.
     */
    private CountDownLatch queueBehindABlockedTask(GatlingExecutor e, int tasks, Runnable each) {
        Executor busy = e.sequential("busy");
        CountDownLatch gate = cleanup.occupy(busy);
        for (int i = 0; i < tasks; i++) {
            busy.execute(each);
        }
        return gate;
    }

    private static void measure(GatlingExecutor e, AtomicInteger busyRuns, long limit, String what,
                                Consumer<Runnable> submit) {
        int startAt = busyRuns.get() + 500;
        waitUntil("the busy context to be running", () -> busyRuns.get() >= startAt);
        CountDownLatch ran = new CountDownLatch(1);
        int[] atRun = new int[1];
        submit.accept(() -> {
            atRun[0] = busyRuns.get();
            ran.countDown();
        });
        // Read after the submit returned: the fresh task waits only from there, and a submitter descheduled before
        // its submit must not count busy tasks that ran before the fresh one existed.
        int atSubmit = busyRuns.get();
        await(ran, what);
        assertTrue(atRun[0] < BUSY_TASKS, what + ": the busy context drained before the measurement meant anything");
        long delay = atRun[0] - atSubmit;
        assertTrue(delay <= limit, what + " task waited for " + delay + " tasks of the busy context (limit "
                + limit + "): " + TestSupport.describe(e));
    }

    /**
     * A worker stuck in one task holds work it took (tasks submitted from inside that task); an idle worker must
     * take it at once, without waiting for the checker (whose period here is far longer than the test's bound).
     */
    @Test
    void idleWorkersTakeWorkQueuedBehindABusyOneAtOnce() {
        GatlingExecutor e = cleanup.track(gatling("fair").coreThreads(2).maxThreads(2)
                .checkPeriod(Duration.ofSeconds(30)).blockedThreshold(Duration.ofSeconds(30)).build());
        CountDownLatch gate = cleanup.gate();
        int others = 20;
        CountDownLatch othersRan = new CountDownLatch(others);
        CountDownLatch submittedInside = new CountDownLatch(1);
        e.execute(new Seq("stuck", () -> {
            for (int i = 0; i < others; i++) {
                if (i % 2 == 0) {
                    e.execute(new Seq("other-" + i, othersRan::countDown));
                } else {
                    e.execute(othersRan::countDown);
                }
            }
            submittedInside.countDown();
            blockQuietly(gate);
        }));
        await(submittedInside, "the stuck task to submit");
        long start = System.nanoTime();
        await(othersRan, "tasks queued behind a stuck worker (" + TestSupport.describe(e) + ")");
        long took = millisSince(start);
        assertTrue(took < 3_000, "the idle worker needed " + took + " ms to take queued work");
    }

    @Test
    void idleWorkersTakeExternallySubmittedWorkAtOnce() {
        GatlingExecutor e = cleanup.track(gatling("fair").coreThreads(2).maxThreads(2)
                .checkPeriod(Duration.ofSeconds(30)).blockedThreshold(Duration.ofSeconds(30)).build());
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Seq("stuck", blocker)));
        for (int round = 0; round < 20; round++) {
            CountDownLatch ran = new CountDownLatch(1);
            long start = System.nanoTime();
            e.execute(new Seq("other-" + round, ran::countDown));
            await(ran, "a task while one worker is stuck");
            long took = millisSince(start);
            assertTrue(took < 1_000, "round " + round + ": the idle worker needed " + took + " ms");
        }
    }
}
