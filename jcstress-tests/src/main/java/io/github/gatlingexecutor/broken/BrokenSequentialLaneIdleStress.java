package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Deliberately broken copy of {@code SequentialLaneIdleStress}: the owner goes idle by a check ("seq is the last slot
 * I took") and a plain store of (taken, IDLE) instead of one CAS from (taken, ACTIVE). A submitter that claims the
 * next slot in between is overwritten: its task is accepted, and nobody owns the lane. Same actors and outcomes; the
 * forbidden "1, 0" shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "the offer landed first; the owner ran both tasks")
@Outcome(id = "2, 1", expect = ACCEPTABLE, desc = "the owner went idle first; the offer re-activated the lane")
@Outcome(id = "1, 0", expect = FORBIDDEN, desc = "LOST: accepted into a lane whose owner left without it")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class BrokenSequentialLaneIdleStress {
    final BrokenSeqLane lane = new BrokenSeqLane(true, false);
    int ran;

    public BrokenSequentialLaneIdleStress() {
        lane.offer(() -> ran++);
    }

    @Actor
    public void owner() {
        lane.runBatch();
    }

    @Actor
    public void producer(II_Result r) {
        r.r2 = lane.offer(() -> ran++);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        if (r.r2 == BrokenSeqLane.ACTIVATED) {
            lane.runBatch();
        }
        r.r1 = ran;
    }
}
