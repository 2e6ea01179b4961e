package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * {@link SequentialLane}: a producer appends while the lane's owner drains it and gives it up (one CAS of the state
 * from (taken, ACTIVE) to (taken, IDLE), which fails if a submitter claimed a slot since the owner looked).
 *
 * <p>The lane starts active with one task. The owner runs its batch to the end; the producer's offer either lands
 * before the owner gives up (the owner must run it: ACCEPTED) or finds the lane idle and re-activates it (ACTIVATED:
 * the producer is the new owner; the arbiter plays it and runs that batch). Result: (tasks run in the end, the offer's
 * outcome: 0 accepted, 1 activated).
 *
 * <p>Catches an owner that goes idle by checking "seq is the last slot I took" and then storing (taken, IDLE), in two
 * steps: the copy with that bug, {@code broken.BrokenSequentialLaneIdleStress}, was seen failing with the forbidden
 * "1, 0".
 */
@JCStressTest
@Description("Sequential lane: offer racing with the owner going idle")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "the offer landed first; the owner ran both tasks")
@Outcome(id = "2, 1", expect = ACCEPTABLE, desc = "the owner went idle first; the offer re-activated the lane")
@Outcome(id = "1, 0", expect = FORBIDDEN, desc = "LOST: accepted into a lane whose owner left without it")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class SequentialLaneIdleStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, null);
    final SequentialLane lane = new SequentialLane(engine, "ctx");
    int ran; // written by whoever owns the lane, read by the arbiter after both actors

    public SequentialLaneIdleStress() {
        if (lane.offer(() -> ran++, 0) != Lane.ACTIVATED) {
            throw new IllegalStateException("a new lane must activate on its first offer");
        }
    }

    @Actor
    public void owner() {
        lane.runBatch(worker, 64);
    }

    @Actor
    public void producer(II_Result r) {
        r.r2 = lane.offer(() -> ran++, 0);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        if (r.r2 == Lane.ACTIVATED) {
            lane.runBatch(worker, 64);
        }
        r.r1 = ran;
    }
}
