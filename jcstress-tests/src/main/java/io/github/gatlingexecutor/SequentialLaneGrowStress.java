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
 * {@link SequentialLane}: submits racing across the end of the lane's first chunk while its owner drains it. The
 * submitter that claims the first slot past a chunk links the next one in GROWING; a submitter that comes after it
 * must wait that out and use the new chunk, and the owner must wait for the link before it reads past the end.
 *
 * <p>The lane starts active with {@code FIRST_CHUNK - 1} = 3 tasks (seq 1 to 3). Producer A offers a1, then a2;
 * the other actor offers b and then plays the owner (the test's state owns the lane until then), running batches
 * while it keeps the lane. The three claims are seq 4 (the first chunk's last slot), 5 (the first slot of a new chunk:
 * its claimer grows the lane) and 6 (the slot after, whose claimer may find the lane GROWING), in any order that
 * keeps a1 before a2; the owner may cross the chunk's end while the grower links it, or go idle between the claims,
 * in which case A's next offer activates the lane and the arbiter plays the new owner. Two actors, not one per
 * submitter plus an owner: jcstress runs no test with more actors than the machine has CPUs, and this one must run on
 * two.
 *
 * <p>Result: (tasks run, the order a1, a2, b ran in as digits 1, 2, 3, which of A's offers activated the lane:
 * 0 none, 1 a1, 2 a2). The order names who claimed seq 5 and grew the lane: a2 in 123, b in 132, a1 in 312. A task
 * lost, run twice or run out of its submitter's order, or two activations, is forbidden.
 *
 * <p>Catches a grower that claims its slot with (seq + 1, ACTIVE) instead of GROWING and installs the chunk after: a
 * submitter claiming seq 6 in between reads the old chunk, grows a second one and links it from the same place. The
 * copy with that bug, {@code broken.BrokenSequentialLaneGrowStress}, was seen failing with the forbidden "5, 12, 0"
 * and "5, 13, 0" (the grower's task or the next one, whichever chunk's link was overwritten, lost).
 */
@JCStressTest
@Description("Sequential lane: submits racing across a chunk's end while the owner drains")
@Outcome(id = "6, 123, 0", expect = ACCEPTABLE, desc = "a1, a2 (grew the lane), then b; the owner ran all")
@Outcome(id = "6, 132, 0", expect = ACCEPTABLE, desc = "a1, b (grew the lane), a2; the owner ran all")
@Outcome(id = "6, 132, 2", expect = ACCEPTABLE, desc = "a1, b (grew the lane); the owner went idle, a2 activated")
@Outcome(id = "6, 312, 0", expect = ACCEPTABLE, desc = "b, a1 (grew the lane), a2; the owner ran all")
@Outcome(id = "6, 312, 1", expect = ACCEPTABLE, desc = "b; the owner went idle; a1 activated and grew the lane")
@Outcome(id = "6, 312, 2", expect = ACCEPTABLE, desc = "b, a1 (grew the lane); the owner went idle, a2 activated")
@Outcome(id = "[0-5], .*", expect = FORBIDDEN, desc = "LOST: a task accepted that nobody ran")
@Outcome(expect = FORBIDDEN, desc = "run twice, out of order, two activations, or anything else")
@State
public class SequentialLaneGrowStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, null);
    final SequentialLane lane = new SequentialLane(engine, "ctx");
    int ran;   // written by whoever owns the lane, read by the arbiter after both actors
    int order; // the tracked tasks' digits, in the order they ran

    public SequentialLaneGrowStress() {
        if (SequentialLane.FIRST_CHUNK != 4) {
            throw new IllegalStateException("the outcomes count on a first chunk of 4 slots");
        }
        for (int i = 1; i < SequentialLane.FIRST_CHUNK; i++) {
            int outcome = lane.offer(() -> ran++, 0);
            if (outcome != (i == 1 ? Lane.ACTIVATED : Lane.ACCEPTED)) {
                throw new IllegalStateException("a new lane activates on its first offer, and only then");
            }
        }
    }

    private void track(int digit) {
        ran++;
        order = order * 10 + digit;
    }

    @Actor
    public void producer(III_Result r) {
        int a1 = lane.offer(() -> track(1), 0);
        int a2 = lane.offer(() -> track(2), 0);
        r.r3 = a1 == Lane.ACCEPTED && a2 == Lane.ACCEPTED ? 0
                : a1 == Lane.ACTIVATED && a2 == Lane.ACCEPTED ? 1
                : a1 == Lane.ACCEPTED && a2 == Lane.ACTIVATED ? 2
                : 9;
    }

    @Actor
    public void producerThenOwner() {
        // The state owns the lane and nothing has run: b is appended to an active lane, never an activation.
        if (lane.offer(() -> track(3), 0) != Lane.ACCEPTED) {
            throw new IllegalStateException("an offer to an active lane must be accepted");
        }
        LaneFixtures.runWhileOwned(lane, worker);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r3 == 1 || r.r3 == 2) {
            LaneFixtures.runWhileOwned(lane, worker);
        }
        r.r1 = ran;
        r.r2 = order;
    }
}
