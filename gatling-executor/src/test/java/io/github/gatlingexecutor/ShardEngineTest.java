package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Seq;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The shard engine's own paths (docs/next-engine.md), which the rest of the suite reaches only when run with
 * {@code -Dtest.jvmArgs=-Dio.github.gatlingexecutor.shards=true}: the steal from an owner stuck in a task and the
 * lane it leaves that owner, fairness by diversion, and shutdownNow across both.
 */
class ShardEngineTest {
    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();

    private GatlingExecutor shardExecutor(int core) {
        return cleanup.track(gatling("shards").coreThreads(core).maxThreads(core).shardEngine(true)
                .checkPeriod(Duration.ofSeconds(30)).blockedThreshold(Duration.ofSeconds(30)).build());
    }

    /**
     * One shard (a single context's tasks and others of the same shard) behind an owner stuck in a task: the checker
     * steals the shard, the stuck context's later tasks wait in the lane left for the stuck worker, and shutdownNow
     * returns exactly those, the caller's own Runnables, while the other contexts ran.
     */
    @Test
    void aStolenShardsStuckContextIsReturnedByShutdownNow() {
        GatlingExecutor e = shardExecutor(2);
        AtomicInteger ranAfter = new AtomicInteger();
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Seq("stuck", blocker)));
        List<Runnable> mine = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Runnable r = new Seq("stuck", ranAfter::incrementAndGet);
            mine.add(r);
            e.execute(r);
        }
        // Other contexts of every shard: each runs although one shard's owner is stuck.
        CountDownLatch othersRan = new CountDownLatch(64);
        for (int i = 0; i < 64; i++) {
            e.execute(new Seq("other-" + i, othersRan::countDown));
        }
        await(othersRan, "other contexts while one owner is stuck (" + TestSupport.describe(e) + ")");
        waitUntil("the stuck owner's shard to be stolen", () -> e.statistics().transfers() > 0,
                () -> TestSupport.describe(e));
        List<Runnable> returned = e.shutdownNow();
        Set<Runnable> returnedSet = Collections.newSetFromMap(new IdentityHashMap<>());
        returnedSet.addAll(returned);
        assertEquals(mine.size(), returned.size(), "returned: " + returned);
        assertTrue(returnedSet.containsAll(mine), "not the caller's own Runnables: " + returned);
        assertEquals(0, ranAfter.get(), "a task of the stuck context ran beside its stuck task");
    }

    /** The same steal, then the stuck task ends: its context's later tasks run after it, in order, on some worker. */
    @Test
    void aStuckContextRunsOnAfterItsTaskEnds() {
        GatlingExecutor e = shardExecutor(2);
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger running = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        CountDownLatch gate = cleanup.occupy(blocker -> e.execute(new Seq("stuck", blocker)));
        int n = 1000;
        CountDownLatch done = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            int k = i;
            e.execute(new Seq("stuck", () -> {
                if (running.incrementAndGet() != 1) {
                    overlaps.incrementAndGet();
                }
                order.add(k);
                running.decrementAndGet();
                done.countDown();
            }));
        }
        CountDownLatch other = new CountDownLatch(1);
        e.execute(new Seq("other", other::countDown));
        await(other, "another context while the owner is stuck");
        waitUntil("the steal", () -> e.statistics().transfers() > 0, () -> TestSupport.describe(e));
        assertTrue(order.isEmpty(), "a task of the stuck context ran beside its stuck task: " + order.size());
        gate.countDown();
        await(done, "the stuck context's tasks");
        assertEquals(0, overlaps.get(), "two tasks of one context overlapped");
        for (int i = 0; i < n; i++) {
            assertEquals(i, order.get(i), "out of order at " + i);
        }
        TestSupport.awaitQuiescent(e);
    }

    /**
     * A context flooding its shard is moved aside into its lane: a task of another context of the same shard,
     * submitted after the flood, runs long before the flood has drained, on one worker.
     */
    @Test
    void aFloodingContextIsDivertedSoOthersInItsShardRun() {
        GatlingExecutor e = cleanup.track(gatling("shards").coreThreads(1).maxThreads(1).shardEngine(true).build());
        CountDownLatch gate = cleanup.occupy(e); // holds the only worker while the flood is submitted
        int flood = 20_000;
        AtomicInteger floodRan = new AtomicInteger();
        Object floodKey = 0;
        for (int i = 0; i < flood; i++) {
            e.execute(new Seq(floodKey, floodRan::incrementAndGet));
        }
        // Another context hashing to the flood's shard: what ran of the flood before it is what it waited for.
        Object other = sameShardAs(e, floodKey);
        int[] atRun = new int[1];
        CountDownLatch ran = new CountDownLatch(1);
        e.execute(new Seq(other, () -> {
            atRun[0] = floodRan.get();
            ran.countDown();
        }));
        gate.countDown();
        await(ran, "the other context");
        assertTrue(atRun[0] < flood / 4, "the other context waited for " + atRun[0] + " of " + flood
                + " flood tasks");
        TestSupport.awaitQuiescent(e);
        assertEquals(flood, floodRan.get());
    }

    /**
     * Tasks that each block for a millisecond, spread over many contexts so that no context floods its shard: an owner
     * is never in one task long enough to be robbed, yet once the checker has seen owners blocked, their contexts go
     * to lanes and the pool grows past the two owners, as it does for lanes. Without that, the two owners ran every
     * task between them, two at a time (the comparison runner's blocking scenario: the fixed pool's rate).
     */
    @Test
    void tasksThatBlockBrieflyRunOnLanesSoMoreThanTheOwnersRunAtOnce() {
        GatlingExecutor e = cleanup.track(gatling("shards-blocking").coreThreads(2).maxThreads(32).shardEngine(true)
                .build());
        int contexts = 64;
        int perContext = 16;
        ParkingTasks tasks = new ParkingTasks(contexts, 1_000_000L);
        CountDownLatch done = new CountDownLatch(contexts * perContext);
        for (int seq = 1; seq <= perContext; seq++) {
            for (int c = 0; c < contexts; c++) {
                e.execute(tasks.task("blocking-", c, seq, done::countDown));
            }
        }
        await(done, "the blocking tasks (" + TestSupport.describe(e) + ")");
        tasks.order.assertClean("the blocking tasks");
        assertTrue(tasks.mostAtOnce.get() > 2, "never more than " + tasks.mostAtOnce.get() + " tasks at once ("
                + TestSupport.describe(e) + ")");
    }

    /**
     * {@code shutdownNow} while owners seen blocked divert every context: entries are claimed and moved into lanes
     * under the take bracket as the stop comes. Each task that was accepted ran once or was returned once, never both;
     * per context the ones that ran are a prefix of its sequence, in order, and the returned ones the rest.
     */
    @Test
    void shutdownNowWhileEveryContextIsDivertedRunsOrReturnsEachTaskOnce() throws Exception {
        int contexts = 64;
        int perContext = 100;
        int mostAtOnceSeen = 0;
        for (int round = 0; round < 5; round++) {
            GatlingExecutor e = cleanup.track(gatling("shards-stop").coreThreads(2).maxThreads(16).shardEngine(true)
                    .build());
            ParkingTasks tasks = new ParkingTasks(contexts, 200_000L);
            IdentityHashMap<Runnable, int[]> submitted = new IdentityHashMap<>();
            for (int seq = 1; seq <= perContext; seq++) {
                for (int c = 0; c < contexts; c++) {
                    Runnable r = tasks.task("stop-", c, seq, () -> { });
                    submitted.put(r, new int[] {c, seq});
                    e.execute(r);
                }
            }
            Thread.sleep(40 + 20 * round); // some of it runs, diverted once the checker sees owners blocked
            List<Runnable> returned = e.shutdownNow();
            assertTrue(e.awaitTermination(20, TimeUnit.SECONDS), TestSupport.describe(e));
            int[] firstReturned = new int[contexts];
            Arrays.fill(firstReturned, Integer.MAX_VALUE);
            int[] returnedCount = new int[contexts];
            Set<Runnable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
            for (Runnable r : returned) {
                int[] cs = submitted.get(r);
                assertTrue(cs != null, "returned a task never submitted: " + r);
                assertTrue(seen.add(r), "returned twice: " + cs[0] + ":" + cs[1]);
                firstReturned[cs[0]] = Math.min(firstReturned[cs[0]], cs[1]);
                returnedCount[cs[0]]++;
            }
            tasks.order.assertClean("round " + round);
            for (int c = 0; c < contexts; c++) {
                // Tasks 1..ran ran, in order (checked above); the returned ones must be exactly the rest.
                long ran = tasks.order.runs(c);
                assertEquals(perContext - ran, returnedCount[c], "context " + c + ": ran " + ran
                        + ", returned " + returnedCount[c] + " of " + perContext);
                if (returnedCount[c] > 0) {
                    assertEquals(ran + 1, firstReturned[c], "context " + c + ": a returned task before one that ran");
                }
            }
            mostAtOnceSeen = Math.max(mostAtOnceSeen, tasks.mostAtOnce.get());
        }
        // The path under test was taken: more tasks ran at once than the two owners can hold.
        assertTrue(mostAtOnceSeen > 2, "never more than " + mostAtOnceSeen + " tasks at once");
    }

    /**
     * {@code busiestContexts(k)} on shards reads each shard's waiting entries only until it has its {@code k} oldest
     * contexts: behind a context with a thousand entries at the front it must still find the next ones, oldest first,
     * each with all of its waiting entries counted, and it stops short of none.
     */
    @Test
    void busiestContextsFindsTheOldestContextsBehindOneWithManyEntries() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("shards-busiest").coreThreads(1).maxThreads(1).shardEngine(true)
                .build());
        CountDownLatch gate = cleanup.occupy(e); // the only worker, in a plain task: the shards' entries wait
        for (int i = 0; i < 1_000; i++) {
            e.execute(new Seq("hot", () -> { }));
        }
        int others = 20;
        for (int c = 0; c < others; c++) {
            TestSupport.nextStampLater(e); // a later stamp than the context before
            for (int i = 0; i < 3; i++) {
                e.execute(new Seq("c" + c, () -> { }));
            }
        }
        List<ContextStatistics> top = e.busiestContexts(5);
        List<Object> names = new ArrayList<>();
        for (ContextStatistics cs : top) {
            names.add(cs.context());
        }
        assertEquals(List.of("hot", "c0", "c1", "c2", "c3"), names);
        assertEquals(1_000, top.get(0).queued());
        for (int i = 1; i < 5; i++) {
            assertEquals(3, top.get(i).queued(), "queued of " + top.get(i).context());
        }
        assertEquals(others + 1, e.busiestContexts(100).size());
        gate.countDown();
        TestSupport.awaitQuiescent(e);
        assertTrue(e.busiestContexts(5).isEmpty());
    }

    /**
     * The checker tidies a quiet shard's records as its owner for a moment. A shutdown whose quiescence check came in
     * that moment found the shard owned, so the idle worker that made the check parked for good, and termination
     * never came (seen now and then in SemanticsThreadsTest and StressTest on this engine): the let-go must make the
     * workers look again. Here the test thread holds the shard as the checker's tidy does.
     */
    @Test
    void shutdownWhileTheCheckerHoldsAQuietShardStillTerminates() throws Exception {
        GatlingExecutor e = shardExecutor(1);
        ShardThief tidy = new ShardThief(e.engine());
        Shard shard = holdQuietShard(e, "c", tidy);
        Worker worker = e.engine().pool.workers()[0];
        int parksBefore = worker.parks;
        e.shutdown();
        // The worker wakes to the shutdown, finds the held shard not quiescent, and parks again.
        waitUntil("the worker to look and park again", () -> worker.parks > parksBefore
                && worker.parkState() == Worker.PARKED, () -> TestSupport.describe(e));
        assertFalse(e.isTerminated());
        tidy.letGoHeld(shard);
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS),
                "no termination after the held shard was let go: " + TestSupport.describe(e));
    }

    /**
     * Chunks are linked forward, so a cursor left holding one keeps every later chunk reachable, and with them the
     * entries the owner passed there (it clears only its last chunk's slots). The checker's cursor held the chunk of
     * its last tidy of a quiet shard: a shard that then ran hot kept every task since reachable while it ran. Here the
     * test holds and lets go the quiet shard as the tidy does, then runs tasks over three chunks of it: once they have
     * run, none of them may stay reachable.
     */
    @Test
    void aCursorBetweenVisitsKeepsNoChunkAndSoNoFinishedTaskReachable() throws Exception {
        GatlingExecutor e = shardExecutor(1);
        ShardThief tidy = new ShardThief(e.engine());
        tidy.letGoHeld(holdQuietShard(e, "c", tidy));
        Worker worker = e.engine().pool.workers()[0];
        int n = 3 * Shard.CHUNK + 1;
        List<WeakReference<Runnable>> ran = new ArrayList<>();
        CountDownLatch all = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            Runnable task = new Seq("c", all::countDown);
            ran.add(new WeakReference<>(task));
            e.execute(task);
        }
        await(all, "the tasks");
        waitUntil("the worker to park", () -> worker.parkState() == Worker.PARKED, () -> TestSupport.describe(e));
        waitUntil("the finished tasks to be collected", () -> {
            System.gc();
            return ran.stream().allMatch(r -> r.get() == null);
        }, () -> ran.stream().filter(r -> r.get() != null).count() + " of " + n
                + " finished tasks still reachable from the shard's chunks");
    }

    /**
     * Runs a task of {@code context} on the only worker of {@code e}, waits for that worker to park, and has
     * {@code tidy} hold the quiet shard of {@code context} as the checker's tidy does. Returns the shard.
     */
    private static Shard holdQuietShard(GatlingExecutor e, Object context, ShardThief tidy) {
        CountDownLatch ran = new CountDownLatch(1);
        e.execute(new Seq(context, ran::countDown));
        await(ran, "the task");
        Worker worker = e.engine().pool.workers()[0];
        waitUntil("the worker to park", () -> worker.parkState() == Worker.PARKED, () -> TestSupport.describe(e));
        Shard shard = e.engine().shardOf(context);
        assertTrue(tidy.hold(shard), "the quiet shard could not be held");
        return shard;
    }

    /** A context whose hash is the same for every name: distinct contexts of one shard that collide in every table. */
    private static final class Colliding {
        final String name;

        Colliding(String name) {
            this.name = name;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Colliding && ((Colliding) o).name.equals(name);
        }

        @Override
        public int hashCode() {
            return 42;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /**
     * The owner tells contexts apart by the hash their submitter stored, then by identity, then with {@code equals}
     * (SPEC point 4): contexts that share a hash keep their own order and figures, and a context passed as a new,
     * equal object with each task is one context.
     */
    @Test
    void contextsThatShareAHashOrAreEqualCopiesKeepTheirOwnOrderAndFigures() {
        GatlingExecutor e = shardExecutor(1); // one worker, one shard: every context below is in it
        // The only worker waits until every task is in: the shard never empties, so the contexts stay live throughout
        // (a shard found empty ends its contexts' lives, and their figures start again).
        CountDownLatch hold = cleanup.occupy(e);
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(1);
        int perContext = 100;
        int stopAt = 50;
        String[] names = {"a", "b", "c"};
        List<List<Integer>> seen = new ArrayList<>();
        for (int k = 0; k < names.length; k++) {
            seen.add(Collections.synchronizedList(new ArrayList<>()));
        }
        for (int i = 0; i < perContext; i++) {
            for (int k = 0; k < names.length; k++) {
                int seq = i;
                List<Integer> mine = seen.get(k);
                boolean stop = k == 0 && i == stopAt;
                // A new object each time: equal to the others of its name, the same hash as every name's.
                e.execute(new Seq(new Colliding(names[k]), () -> {
                    mine.add(seq);
                    if (stop) {
                        started.countDown();
                        blockQuietly(gate);
                    }
                }));
            }
        }
        hold.countDown();
        await(started, "a's task " + stopAt);
        // Entries go a, b, c, a, b, c...: a's task 50 runs, so 50 of b's and of c's have run, none after it.
        List<ContextStatistics> now = e.contextStatistics();
        long[][] expected = {{stopAt + 1, perContext - stopAt - 1}, {stopAt, perContext - stopAt},
                {stopAt, perContext - stopAt}};
        for (int k = 0; k < names.length; k++) {
            Colliding key = new Colliding(names[k]);
            ContextStatistics c = now.stream().filter(s -> s.context().equals(key)).findFirst()
                    .orElseThrow(() -> new AssertionError("no figures for " + key + ": " + now));
            assertEquals(perContext, c.submitted(), key + ": " + c);
            assertEquals(expected[k][0], c.executed(), key + " (its running task counts): " + c);
            assertEquals(expected[k][1], c.queued(), key + ": " + c);
        }
        assertEquals(names.length, now.size(), "one entry per context: " + now);
        gate.countDown();
        TestSupport.awaitQuiescent(e);
        for (int k = 0; k < names.length; k++) {
            List<Integer> inOrder = new ArrayList<>();
            for (int i = 0; i < perContext; i++) {
                inOrder.add(i);
            }
            assertEquals(inOrder, seen.get(k), "order of " + names[k]);
        }
    }

    private static Object sameShardAs(GatlingExecutor e, Object key) {
        Shard target = e.engine().shardOf(key);
        for (int i = 1; ; i++) {
            if (e.engine().shardOf(i) == target) {
                return i;
            }
        }
    }

    /**
     * Sequential tasks that each park for a while, checked for order and overlap by an {@link OrderChecker}, counting
     * how many ran at once.
     */
    private static final class ParkingTasks {
        final OrderChecker order;
        final AtomicInteger mostAtOnce = new AtomicInteger();
        private final AtomicInteger inTask = new AtomicInteger();
        private final long parkNanos;

        ParkingTasks(int contexts, long parkNanos) {
            this.order = new OrderChecker(contexts);
            this.parkNanos = parkNanos;
        }

        /** Task {@code seq} (1-based) of context {@code prefix + context}; runs {@code then} last. */
        Seq task(String prefix, int context, int seq, Runnable then) {
            return new Seq(prefix + context, () -> {
                order.enter(context, seq);
                mostAtOnce.accumulateAndGet(inTask.incrementAndGet(), Math::max);
                LockSupport.parkNanos(parkNanos);
                inTask.decrementAndGet();
                order.exit(context);
                then.run();
            });
        }
    }
}
