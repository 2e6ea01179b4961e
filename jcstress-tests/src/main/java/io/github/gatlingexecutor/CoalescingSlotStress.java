package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * {@link CoalescingLane}: a submitter replaces the pending task while the lane's owner takes it, runs it and gives
 * the lane up.
 *
 * <p>The lane starts active with task A pending. The owner runs its batch to the end; the submitter offers B; if B
 * re-activated an idle lane, the arbiter plays its new owner. Result: (runs, A counting 1 a run and B 10, so a task
 * run twice shows; the offer's
 * outcome, 0 accepted, 1 activated or 5 replaced; the engine's coalesced count).
 *
 * <p>Catches a take that reads the slot and then marks it BUSY in two steps: the copy with that bug,
 * {@code broken.BrokenCoalescingSlotStress} (a model of the slot, with its own encoding), was seen failing with its
 * forbidden "1, 0, 1" (B accepted and A counted as coalesced, yet A ran and B never did: "1, 5, 1" here, a replacing
 * offer reporting 5, REPLACED).
 */
@JCStressTest
@Description("Coalescing lane: replace racing with take and idle")
@Outcome(id = "11, 0, 0", expect = ACCEPTABLE, desc = "A was taken first; B arrived while A ran and ran after it")
@Outcome(id = "10, 5, 1", expect = ACCEPTABLE, desc = "B replaced A before it started; only B ran; A coalesced")
@Outcome(id = "11, 1, 0", expect = ACCEPTABLE, desc = "A ran and the owner went idle; B re-activated the lane")
@Outcome(id = "1, 5, 1", expect = FORBIDDEN, desc = "LOST: B accepted but never ran, and A ran although replaced")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class CoalescingSlotStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, null);
    final CoalescingLane lane = new CoalescingLane(engine, "ctx");
    int ran;

    public CoalescingSlotStress() {
        if (lane.offer(() -> ran += 1, 0) != Lane.ACTIVATED) {
            throw new IllegalStateException("a new lane must activate on its first offer");
        }
    }

    @Actor
    public void owner() {
        lane.runBatch(worker, 64);
    }

    @Actor
    public void submitter(III_Result r) {
        r.r2 = lane.offer(() -> ran += 10, 0);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r2 == Lane.ACTIVATED) {
            lane.runBatch(worker, 64);
        }
        r.r1 = ran;
        r.r3 = (int) engine.coalescedCount();
    }
}
