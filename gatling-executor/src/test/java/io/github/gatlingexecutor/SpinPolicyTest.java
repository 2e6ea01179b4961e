package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.LincheckLaneTest.set;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link PoolPolicy#spinningPays}, the rule for when an idle worker may spin: only while the workers in long items and
 * the spinners leave a core for threads outside the pool. Deterministic: no thread runs, two workers are set up as
 * the rule reads them (busy or not, when their item started by the coarse clock). The expectations depend on the
 * machine's core count, as the rule does. Also the search budget: how failed searches end spinning altogether while
 * work is sparse, and what brings it back. And the retirement rule, which the same pool applies to idle auxiliary
 * workers.
 */
class SpinPolicyTest {
    private static final int CORES = PoolPolicy.CORES; // the count the rule reads
    private static final long MS = 1_000_000L;

    private final Engine engine = LincheckLaneTest.engine();
    private final Worker self = LincheckLaneTest.worker(engine, new Thread(() -> { }));
    private final Worker other = new Worker(engine, engine.pool, true, 2);

    SpinPolicyTest() {
        set(engine.pool, "workers", new Worker[] {self, other});
    }

    private void otherRuns(boolean busy, long itemStartedNanosAgo, long now) {
        set(other, "busy", busy);
        set(other, "itemStamp", now - itemStartedNanosAgo);
    }

    @Test
    void spinsWhileNoWorkerIsInALongItem() {
        long now = System.nanoTime();
        engine.tick(now);
        otherRuns(false, 0, now);
        assertEquals(CORES > 1, engine.pool.policy.spinningPays(self, 0), "nobody busy");
        otherRuns(true, 0, now);
        assertEquals(CORES > 1, engine.pool.policy.spinningPays(self, 0), "the other worker's item just started");
    }

    @Test
    void parksNextToAWorkerInALongItemWhenNoCoreIsLeft() {
        long now = System.nanoTime();
        engine.tick(now);
        otherRuns(true, 2 * MS, now);
        // The long item takes a core, and one is kept for producers: a spinner needs a third.
        assertEquals(CORES > 2, engine.pool.policy.spinningPays(self, 0));
        otherRuns(false, 2 * MS, now); // it finished that item: its old stamp no longer counts
        assertEquals(CORES > 1, engine.pool.policy.spinningPays(self, 0));
    }

    @Test
    void countsTheSpinnersAlready() {
        long now = System.nanoTime();
        engine.tick(now);
        otherRuns(false, 0, now);
        assertEquals(false, engine.pool.policy.spinningPays(self, Math.max(0, CORES - 1)),
                "every spare core has a spinner");
    }

    @Test
    void aStaleClockTellsNothing() {
        long now = System.nanoTime();
        otherRuns(true, 2 * MS, now);
        engine.markClockStaleOpaque(); // every worker parked: how long the item has run is unknown,
                                       // so it does not count
        assertEquals(CORES > 1, engine.pool.policy.spinningPays(self, 0));
    }

    @Test
    void failedSearchesHalveTheBudgetAndEndSearchingBelowTheShortest() {
        long min = PoolPolicy.MIN_SEARCH_NANOS;
        assertEquals(4 * min, PoolPolicy.nextSearchBudget(8 * min, false));
        assertEquals(min, PoolPolicy.nextSearchBudget(2 * min, false));
        assertEquals(0, PoolPolicy.nextSearchBudget(min, false), "below the shortest budget: no search at all");
        assertEquals(0, PoolPolicy.nextSearchBudget(0, false));
        assertEquals(min, PoolPolicy.nextSearchBudget(0, true), "a search that found work starts from the shortest");
        assertEquals(PoolPolicy.MAX_SEARCH_NANOS, PoolPolicy.nextSearchBudget(PoolPolicy.MAX_SEARCH_NANOS, true));
    }

    @Test
    void onlyAQuickWakeUpBringsSearchingBack() {
        long min = PoolPolicy.MIN_SEARCH_NANOS;
        assertEquals(min, PoolPolicy.budgetAfterWake(0, min), "woken within a short search's reach");
        assertEquals(0, PoolPolicy.budgetAfterWake(0, 100 * min), "work is sparse: parking at once pays");
        assertEquals(8 * min, PoolPolicy.budgetAfterWake(8 * min, 100 * min), "a searching worker keeps its budget");
    }

    @Test
    void aSparseWorkerNeitherSearchesNorLingers() {
        long now = System.nanoTime();
        engine.tick(now);
        otherRuns(false, 0, now);
        self.searchBudget = 0;
        assertEquals(false, engine.pool.policy.maySearch(self, 0));
        assertEquals(false, engine.pool.policy.lingerPays(self));
        self.searchBudget = PoolPolicy.MIN_SEARCH_NANOS;
        assertEquals(CORES > 1, engine.pool.policy.maySearch(self, 0));
        assertEquals(CORES > 1, engine.pool.policy.lingerPays(self));
    }

    @Test
    void aWorkerDoesNotCountItself() {
        long now = System.nanoTime();
        engine.tick(now);
        otherRuns(false, 0, now);
        set(self, "busy", true);
        set(self, "itemStamp", now - 2 * MS);
        assertEquals(CORES > 1, engine.pool.policy.spinningPays(self, 0),
                "its own long item does not count (it lingers at the end of it)");
    }

    /**
     * A lane of a context whose submit finds it released, at {@code now} by the test's own clock,
     * {@code idleNanosAgo} after it went idle. The rule reads times only as differences, and the tests pass them in:
     * read from System.nanoTime as the release happens, a test thread descheduled for 100 us between two releases
     * broke the dense run (the first test failed so in the 29th of 50 repeated rounds).
     */
    private Lane releasedLane(long idleNanosAgo, long now) {
        Lane lane = new CoalescingLane(engine, "context");
        lane.idleSince = now - idleNanosAgo;
        return lane;
    }

    @Test
    void aDenseRunOfEarlyReleasesKeepsYoungLanesThroughSparseParks() {
        long t = System.nanoTime();
        self.searchBudget = 0;
        assertEquals(true, engine.pool.policy.releasesAllAtPark(self, t), "sparse, and no lane came back early");
        for (int i = 0; i < 7; i++) {
            t += 99_000; // 99 us apart: a dense run needs less than 100
            engine.noteRelease(releasedLane(0, t), t);
        }
        assertEquals(true, engine.pool.policy.releasesAllAtPark(self, t), "seven in a row are not yet a dense run");
        t += 99_000;
        engine.noteRelease(releasedLane(0, t), t);
        assertEquals(false, engine.pool.policy.releasesAllAtPark(self, t), "the eighth makes it one");
        assertEquals(false, engine.pool.policy.releasesAllAtPark(self, t + 999_000_000L), "for a second");
        assertEquals(true, engine.pool.policy.releasesAllAtPark(self, t + 1_000_000_000L), "not longer");
        self.searchBudget = PoolPolicy.MIN_SEARCH_NANOS;
        assertEquals(false, engine.pool.policy.releasesAllAtPark(self, t),
                "a searching worker never releases them all");
    }

    @Test
    void releasesAfterTheGraceOrFarApartDoNotCount() {
        long t = System.nanoTime();
        self.searchBudget = 0;
        for (int i = 0; i < 100; i++) {
            t += 1_000;
            engine.noteRelease(releasedLane(Worker.IDLE_GRACE_NANOS, t), t); // its grace just over
        }
        assertEquals(true, engine.pool.policy.releasesAllAtPark(self, t),
                "released after their grace, as they should be");
        for (int i = 0; i < 20; i++) {
            t += 100_000; // exactly 100 us apart: one too many for a dense run
            engine.noteRelease(releasedLane(0, t), t);
        }
        assertEquals(true, engine.pool.policy.releasesAllAtPark(self, t), "early, but fewer than 10,000 a second");
    }

    /**
     * An idle auxiliary worker may retire only while the pool stays at its core size without it and without the
     * workers already allowed to retire, whose slots are given back only as their threads end. Two workers whose
     * keep-alives ran out together after a core bump (three threads, core size two) must not both go: judged by the
     * slots alone, the second saw three threads over a core of two, and the pool fell below its core size for good
     * (a core worker never retires, and nothing restarts one without work).
     */
    @Test
    void retirementCountsTheWorkersAlreadyRetiring() {
        assertTrue(PoolPolicy.mayRetire(3, 0, 2), "one thread over the core size");
        assertFalse(PoolPolicy.mayRetire(3, 1, 2), "that one is already retiring");
        assertFalse(PoolPolicy.mayRetire(2, 0, 2), "at the core size");
        assertTrue(PoolPolicy.mayRetire(5, 2, 2), "one more over the core size than those retiring");
    }
}
