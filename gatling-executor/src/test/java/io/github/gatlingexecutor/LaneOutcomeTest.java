package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a sequential lane's batch tells its owner ({@code Lane#runBatch}), which the worker loop acts on without
 * reading the lane again: MORE when the budget ran out with tasks left, ROUND when the lane emptied while other work
 * waits (it stays active for one more trip round the ready queue), IDLED when a visit finds nothing. One thread plays
 * submitter and owner, so each outcome is deterministic; the races around them are model-checked in
 * {@link LincheckLaneTest} and {@link LincheckReadyQueueTest}.
 */
class LaneOutcomeTest {

    private final Engine engine = LincheckLaneTest.engine();
    private final Worker worker = LincheckLaneTest.worker(engine, new Thread(() -> { }));
    private final SequentialLane lane = new SequentialLane(engine, "ctx");
    private final List<Integer> ran = new ArrayList<>();

    private void offer(int n) {
        int outcome = lane.offer(() -> ran.add(n), 0);
        assertTrue(outcome == Lane.ACTIVATED || outcome == Lane.ACCEPTED, "offer " + n + ": " + outcome);
    }

    /**
     * One visit, as a worker that has just taken the lane out of the ready queue makes it: the lane's trip round the
     * queue was short (its queue stamp is now), so an emptied lane may go round again.
     */
    private int visit(int budget) {
        lane.queuedAt = engine.stamp();
        return lane.runBatch(worker, budget);
    }

    @Test
    void fullBatchesSayMoreAnEmptiedLaneGoesRoundAndAnEmptyVisitIdlesIt() {
        engine.readyQueue.offerTask(new PlainTask(() -> { }, 0)); // other work waits
        for (int i = 0; i < 5; i++) {
            offer(i);
        }
        assertEquals(Lane.MORE, visit(2));
        assertEquals(Lane.MORE, visit(2));
        assertEquals(Lane.ROUND, visit(2), "emptied after running a task, with other work waiting");
        assertEquals(List.of(0, 1, 2, 3, 4), ran);
        assertTrue(lane.isActive(), "a lane sent round stays active, so its next task is a plain append");
        assertTrue(lane.queuedNothing());

        offer(5);
        assertEquals(Lane.ACCEPTED, lane.offer(() -> ran.add(6), 0), "appended to the active lane");
        assertEquals(Lane.ROUND, visit(64), "the next visit runs what came, and sends it round again");
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6), ran);

        assertEquals(Lane.IDLED, visit(64), "a visit that runs nothing gives the lane up");
        assertTrue(lane.isIdle());
    }

    @Test
    void aBatchThatEndsAsTheLaneEmptiesSaysRoundNotMore() {
        // The budget is checked only when a next task is there to take: a lane emptied by the batch's last task is
        // reported as emptied, so the worker sends it round at once instead of taking it for a backlog.
        engine.readyQueue.offerTask(new PlainTask(() -> { }, 0));
        for (int i = 0; i < 4; i++) {
            offer(i);
        }
        assertEquals(Lane.ROUND, visit(4));
        assertEquals(Lane.IDLED, visit(4), "nothing came: the visit runs nothing and idles the lane");
        assertEquals(List.of(0, 1, 2, 3), ran);
    }

    @Test
    void aLaneMadeIdleIsStampedWithItsOwnersClockForItsGrace() {
        // The idle ring and the checker release a lane once IDLE_GRACE_NANOS have passed since this stamp, and a
        // submit that meets a released lane judges from it whether the release came too early. Left unwritten (0),
        // every lane would look idle for ages: released at the first sweep, with no grace, and never reported early.
        offer(0);
        worker.clock = 123_456_789L;
        assertEquals(Lane.IDLED, visit(64), "nothing else waits: the emptied lane goes idle");
        assertEquals(123_456_789L, lane.idleSince);

        CoalescingLane coalescing = new CoalescingLane(engine, "ctx");
        assertEquals(Lane.ACTIVATED, coalescing.offer(() -> ran.add(1), 0));
        worker.clock = 987_654_321L;
        assertEquals(Lane.IDLED, coalescing.runBatch(worker, 64));
        assertEquals(987_654_321L, coalescing.idleSince);
        assertEquals(List.of(0, 1), ran);
    }

    @Test
    void aLaneSentRoundIsReleasedEmptyOnlyIfNothingCameSince() {
        // When no worker will come round soon, the checker takes lanes sent round empty out of the ready queue and
        // releases each from ACTIVE straight to DEAD (Lane#releaseIfEmpty). A task submitted since the lane was queued
        // appended to an active lane, which nobody else will queue: released anyway, the lane would take it along.
        engine.readyQueue.offerTask(new PlainTask(() -> { }, 0)); // other work waits
        offer(0);
        assertEquals(Lane.ROUND, visit(64));
        assertTrue(lane.queuedNothing(), "sent round with nothing queued");
        assertEquals(Lane.ACCEPTED, lane.offer(() -> ran.add(1), 0), "appended to the lane while it goes round");
        assertFalse(lane.releaseIfEmpty(), "a lane given a task since it was queued is not released");
        assertTrue(lane.isActive());
        assertEquals(Lane.ROUND, visit(64), "its next owner runs the task");
        assertEquals(List.of(0, 1), ran);
        assertTrue(lane.releaseIfEmpty(), "sent round again, and still empty: released");
        assertTrue(lane.isReleased());
    }

    @Test
    void whoeverQueuesALaneStampsItWithTheTimeItWasQueued() {
        // The next owner judges from this stamp whether the lane's trip round the ready queue was short enough to send
        // it round once more when it empties (SequentialLane#runBatch). Left as it was, a lane activated by a submit
        // would carry 0 (or a stamp of an earlier episode), its trip would always look long, and an emptied lane
        // would go idle where it should have gone round, paying an activation for its context's next task.
        offer(0);
        engine.readyQueue.offerLane(lane, 123_456_789L);
        assertEquals(123_456_789L, lane.queuedAt);
        assertSame(lane, engine.readyQueue.poll());
    }

    @Test
    void aLaneThatLeavesItsRingWhileIdleIsReleased() {
        // A lane idled while some ring still held it (its mark set) was not ringed again by the worker that idled it:
        // that ring's entry is its only claim. When the entry is given up (its worker drops it, or the checker finds
        // the lane active elsewhere), Lane#leaveRing clears the mark and looks again: idle now, the lane is released
        // there, or nothing would ever release it and its context would stay mapped for good.
        engine.lanes(false).put("ctx", lane);
        offer(0);
        assertTrue(lane.claimRing(), "a ring holds the lane");
        assertEquals(Lane.IDLED, visit(64));
        assertFalse(lane.claimRing(), "idled while marked: the idler does not ring it again");
        lane.leaveRing();
        assertTrue(lane.isReleased(), "idle when it left the ring: released");
        assertFalse(engine.lanes(false).containsKey("ctx"), "and unmapped");
    }
}
