package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.awaitQuiescent;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** SPEC "Observability": queued versus running, oldest-task ages (executor and lane), busiestContexts. */
@Timeout(60)
class QueueAgeTest {

    @RegisterExtension
    final ExecutorValidation v = new ExecutorValidation();

    /** Occupies the executor's only worker until {@code gate} opens. */
    private static void holdWorker(GatlingExecutor ex, CountDownLatch gate) {
        CountDownLatch running = new CountDownLatch(1);
        ex.execute(() -> {
            running.countDown();
            TestSupport.blockQuietly(gate);
        });
        await(running, "the holding task to start");
    }

    private static GatlingExecutor.Builder oneWorker(String name) {
        return gatling(name).coreThreads(1).maxThreads(1);
    }

    @Test
    void aRunningTaskIsNotQueued() {
        GatlingExecutor ex = v.track(gatling("running").build());
        CountDownLatch gate = v.gate();
        CountDownLatch running = new CountDownLatch(1);
        ex.sequential("k").execute(() -> {
            running.countDown();
            TestSupport.blockQuietly(gate);
        });
        await(running, "the first task");
        ex.sequential("k").execute(() -> { });
        ex.sequential("k").execute(() -> { });
        assertEquals(2, ex.statistics().queued());
        assertEquals(1, ex.statistics().active());
        ContextStatistics lane = TestSupport.lane(ex, "k", false);
        assertEquals(2, lane.queued());
        gate.countDown();
        assertEquals(0, awaitQuiescent(ex).queued());
    }

    @Test
    void oldestQueuedAgeGrowsWhileHeldBackAndReturnsToZero() {
        GatlingExecutor ex = v.track(oneWorker("age").build());
        assertEquals(Duration.ZERO, ex.statistics().oldestQueuedAge());
        CountDownLatch gate = v.gate();
        holdWorker(ex, gate);
        long before = System.nanoTime();
        ex.sequential("k").execute(() -> { });
        ex.execute(() -> { });
        TestSupport.sleep(60);
        long waitedAtLeast = System.nanoTime() - before;
        Duration first = ex.statistics().oldestQueuedAge();
        // Stamps come from a coarse clock refreshed every few ms, so the age may read a little more than the wait.
        assertTrue(first.toNanos() >= Duration.ofMillis(50).toNanos(), first.toString());
        assertTrue(first.toNanos() <= waitedAtLeast + Duration.ofMillis(500).toNanos(), first.toString());
        Duration laneAge = TestSupport.lane(ex, "k", false).oldestQueuedAge();
        assertTrue(laneAge.toMillis() >= 50, laneAge.toString());
        TestSupport.sleep(30);
        Duration later = ex.statistics().oldestQueuedAge();
        assertTrue(later.compareTo(first) > 0, "the age keeps growing while every worker is stuck: " + later);
        gate.countDown();
        awaitQuiescent(ex);
        assertEquals(Duration.ZERO, ex.statistics().oldestQueuedAge());
    }

    @Test
    void aTaskAcceptedAfterAQuietSpellIsNotStampedWithAnOldTime() {
        GatlingExecutor ex = v.track(oneWorker("quiet").build());
        ex.execute(() -> { });
        awaitQuiescent(ex);
        TestSupport.sleep(300); // every worker parks: nobody refreshes the coarse clock
        CountDownLatch gate = v.gate();
        holdWorker(ex, gate);
        ex.execute(() -> { });
        Duration age = ex.statistics().oldestQueuedAge();
        assertTrue(age.toMillis() < 200, "stamped with a stale clock: " + age);
        gate.countDown();
        awaitQuiescent(ex);
    }

    @Test
    void aCoalescingReplacementKeepsTheStampOfWhatItReplaced() {
        GatlingExecutor ex = v.track(oneWorker("stale").build());
        CountDownLatch gate = v.gate();
        holdWorker(ex, gate);
        ex.coalescing("price").execute(() -> { });
        TestSupport.sleep(60);
        ex.coalescing("price").execute(() -> { }); // replaces: the lane is as stale as its oldest unserved update
        ContextStatistics lane = TestSupport.lane(ex, "price", true);
        assertEquals(1, lane.queued());
        assertTrue(lane.oldestQueuedAge().toMillis() >= 50, lane.toString());
        gate.countDown();
        awaitQuiescent(ex);
    }

    @Test
    void busiestContextsAreTheLanesWithTheOldestWaitingTasks() {
        GatlingExecutor ex = v.track(oneWorker("busiest").build());
        CountDownLatch gate = v.gate();
        holdWorker(ex, gate);
        ex.sequential("a").execute(() -> { });
        TestSupport.sleep(30);
        ex.sequential("b").execute(() -> { });
        ex.sequential("b").execute(() -> { });
        TestSupport.sleep(30);
        ex.coalescing("c").execute(() -> { });
        ex.execute(() -> { }); // an unordered task is no lane: never listed
        waitUntil("three lanes listed", () -> ex.busiestContexts(10).size() == 3);
        List<Object> top2 = ex.busiestContexts(2).stream().map(ContextStatistics::context)
                .collect(Collectors.toList());
        assertEquals(List.of("a", "b"), top2);
        List<ContextStatistics> all = ex.busiestContexts(10);
        assertEquals(List.of("a", "b", "c"), all.stream().map(ContextStatistics::context).collect(Collectors.toList()));
        assertEquals(2, all.get(1).queued());
        assertTrue(all.get(2).coalescing());
        assertTrue(ex.busiestContexts(0).isEmpty());
        gate.countDown();
        awaitQuiescent(ex);
        assertTrue(ex.busiestContexts(10).isEmpty());
    }
}
