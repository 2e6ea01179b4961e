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
 * {@link SequentialLane}: the end of an idle lane's grace (release: a CAS of the state from (seq, IDLE) to
 * (seq, DEAD)) racing with a submit that would re-activate it (a CAS from (seq, IDLE) to (seq + 1, ACTIVE)). Both
 * CAS from the same state, so exactly one wins: either the lane is released and the offer is refused (RELEASED, the
 * engine looks the context up again), or the offer activates the lane and the release fails. Result: (released,
 * offer outcome: 1 activated, 2 released, tasks run in the end).
 *
 * <p>Catches a release that checks "idle" and then writes DEAD, in two steps: the copy with that bug,
 * {@code broken.BrokenSequentialLaneReleaseStress}, was seen failing with the forbidden "1, 1, 0" (a task accepted
 * into a lane that was released and unmapped, so nobody ever runs it).
 */
@JCStressTest
@Description("Sequential lane: release of an idle lane racing with an offer")
@Outcome(id = "1, 2, 0", expect = ACCEPTABLE, desc = "released first; the offer saw DEAD")
@Outcome(id = "0, 1, 1", expect = ACCEPTABLE, desc = "the offer activated the lane first; the release failed")
@Outcome(expect = FORBIDDEN, desc = "both won (a task accepted into a released lane), or anything else")
@State
public class SequentialLaneReleaseStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, null);
    final SequentialLane lane = new SequentialLane(engine, "ctx");   // new lanes start idle
    int ran;

    @Actor
    public void releaser(III_Result r) {
        r.r1 = lane.releaseIfIdle() ? 1 : 0;
    }

    @Actor
    public void producer(III_Result r) {
        r.r2 = lane.offer(() -> ran++, 0);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r2 == Lane.ACTIVATED && r.r1 == 0) {
            lane.runBatch(worker, 64);
        }
        r.r3 = ran;
    }
}
