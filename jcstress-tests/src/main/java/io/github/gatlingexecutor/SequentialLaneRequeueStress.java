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
 * {@link SequentialLane}: a producer appends while the lane's owner drains it with other work waiting in the ready
 * queue. Then an owner that empties the lane after running a task keeps it active for one more round of the ready
 * queue (ROUND) instead of giving it up; the next visit runs what came meanwhile, or gives the lane up when nothing
 * did. The owner actor plays both visits (the round of the queue itself is not the subject here).
 *
 * <p>The producer's offer either lands while the lane is still active, on either visit (ACCEPTED: the owner must run
 * it), or finds the lane idle after the second visit and re-activates it (ACTIVATED: the arbiter plays the new owner).
 * Result: (tasks run in the end, the offer's outcome: 0 accepted, 1 activated). "1, 0" would be a task accepted into a
 * lane its owner left without it.
 */
@JCStressTest
@Description("Sequential lane: offer racing with an owner that keeps an emptied lane for one more round")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "the offer landed while the lane was active; the owner ran both")
@Outcome(id = "2, 1", expect = ACCEPTABLE, desc = "the owner gave the lane up first; the offer re-activated it")
@Outcome(id = "1, 0", expect = FORBIDDEN, desc = "LOST: accepted into a lane whose owner left without it")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class SequentialLaneRequeueStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, null);
    final SequentialLane lane = new SequentialLane(engine, "ctx");
    int ran; // written by whoever owns the lane, read by the arbiter after both actors

    public SequentialLaneRequeueStress() {
        engine.readyQueue.offerTask(new PlainTask(() -> { }, 0)); // other work waits: the owner may keep the lane
        if (lane.offer(() -> ran++, 0) != Lane.ACTIVATED) {
            throw new IllegalStateException("a new lane must activate on its first offer");
        }
        // As if it had just come off the ready queue: the owner keeps an emptied lane for a round only while a trip
        // round the queue is short (ROUND_LIMIT_NANOS from when it was queued). Left at 0, the owner never kept it,
        // and the round this test is about was never played (0 of 10,000 runs).
        lane.queuedAt = engine.stamp();
    }

    @Actor
    public void owner() {
        LaneFixtures.runWhileOwned(lane, worker);
    }

    @Actor
    public void producer(II_Result r) {
        r.r2 = lane.offer(() -> ran++, 0);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        if (r.r2 == Lane.ACTIVATED) {
            LaneFixtures.runWhileOwned(lane, worker);
        }
        r.r1 = ran;
    }
}
