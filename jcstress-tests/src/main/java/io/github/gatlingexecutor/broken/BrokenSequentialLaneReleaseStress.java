package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Deliberately broken copy of {@code SequentialLaneReleaseStress}: the release checks "idle" and then stores
 * (seq, DEAD), in two steps, instead of one CAS from (seq, IDLE). An activating claim in between is overwritten. Same
 * actors and outcomes; the forbidden "1, 1, 0" shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "1, 2, 0", expect = ACCEPTABLE, desc = "released first; the offer saw DEAD")
@Outcome(id = "0, 1, 1", expect = ACCEPTABLE, desc = "the offer activated the lane first; the release failed")
@Outcome(expect = FORBIDDEN, desc = "both won (a task accepted into a released lane), or anything else")
@State
public class BrokenSequentialLaneReleaseStress {
    final BrokenSeqLane lane = new BrokenSeqLane(false, true);
    int ran;

    @Actor
    public void releaser(III_Result r) {
        r.r1 = lane.releaseIfIdle() ? 1 : 0;
    }

    @Actor
    public void producer(III_Result r) {
        r.r2 = lane.offer(() -> ran++);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r2 == BrokenSeqLane.ACTIVATED && r.r1 == 0) {
            lane.runBatch();
        }
        r.r3 = ran;
    }
}
