package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZZ_Result;

/**
 * The checker's clock stall ({@link Checker#stallClock}) against a submitter that stamps a task ({@link Engine#stamp},
 * whose restart of a stale clock is the one a worker's tick uses too):
 * when nothing flows, the checker marks the coarse clock stale and sleeps past its tick; the next submitter reads the
 * time itself, sets the clock and must wake the checker, or the clock it set would go unrefreshed until the next look
 * and later tasks would be stamped too early. Result: (the checker chose to sleep, the clock is fresh at the end, i.e.
 * the submitter restarted it after the stall (a stamp that read the clock before the stall uses that value and leaves
 * the stall's STALE in place), the checker is still marked stalled at the end, i.e. nobody woke it).
 *
 * <p>Forbidden: the checker sleeps, the submitter restarted the clock, and nobody woke the checker. A submitter that
 * read the clock before it was marked stale stamps with a tick-old value and wakes nobody: allowed (the coarse
 * clock's promise is "a few milliseconds"). Every other outcome (a checker not asleep yet marked stalled, or a stale
 * clock with a checker that was woken) is forbidden by default. The clock's end state is read by the arbiter, not by
 * the submitter before its stamp: a read of its own, made earlier, graded a stamp that restarted the clock after the
 * stall, with its wake-up lost, as one made before it (an outside review). {@code broken.BrokenClockStallStress}
 * is the same hand-shake with release/acquire instead of volatile accesses, and shows the forbidden outcome.
 */
@JCStressTest
@Description("The checker's clock stall racing a submitter that restarts the clock")
@Outcome(id = "true, true, true", expect = FORBIDDEN, desc = "the restart's wake-up was lost")
@Outcome(id = "true, true, false", expect = ACCEPTABLE, desc = "the checker slept, the submitter woke it")
@Outcome(id = "false, true, false", expect = ACCEPTABLE, desc = "the checker saw the restart and ticks on")
@Outcome(id = "true, false, true", expect = ACCEPTABLE, desc = "the submitter stamped before the stall")
@Outcome(expect = FORBIDDEN, desc = "not a state the hand-shake can end in")
@State
public class ClockStallStress {
    final Engine engine = LaneFixtures.engine();

    public ClockStallStress() {
        engine.tick(System.nanoTime()); // a fresh clock, as while tasks flowed
    }

    @Actor
    public void checker(ZZZ_Result r) {
        r.r1 = engine.checker.stallClock();
    }

    @Actor
    public void submitter() {
        engine.stamp(); // finding the clock stale, it sets it (a CAS) and wakes a stalled checker
    }

    @Arbiter
    public void arbiter(ZZZ_Result r) {
        // Once stale, only a submitter's CAS sets the clock: fresh at the end iff the stamp came after the stall.
        r.r2 = engine.coarseNowOpaque() != Engine.STALE;
        r.r3 = engine.checker.isStalled();
    }
}
