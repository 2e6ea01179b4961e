package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * The real {@code shutdownNow} closing a {@link CoalescingLane} while its owner takes the pending task. No hand-shake
 * guards a coalescing take: the owner's CAS of the slot to BUSY and the drain's CAS of it to CLOSED are the only
 * claims, so each accepted task must end exactly one way: run, returned, or coalesced (then replaced by the other,
 * which must itself end one way).
 *
 * <p>The lane starts active with task A pending. The owner runs its batch; the other actor offers B and then stops
 * the engine (jcstress runs at most as many actors as there are CPUs, two here; {@code CoalescingSlotStress} races
 * the offer with the take alone). Result: (runs, A counting 1 a run and B 10, so a task run twice shows; tasks
 * returned by {@code shutdownNow}, A = 1 and B = 2, 8 for one returned twice; the outcome of B's offer: 0 accepted
 * behind a running A, 1 activated the lane A's owner had given up, 5 replaced A).
 *
 * <p>Catches a take that reads the slot and then writes BUSY in two steps: in
 * {@code broken.BrokenCoalescingShutdownNowStress}, a copy of the slot protocol with that take, the owner runs a task
 * the drain returned ("2, 2, 5" in the copy's encoding) or one that B replaced, and B is lost ("1, 0, 5").
 */
@JCStressTest
@Description("Coalescing lane: shutdownNow racing with take and replace")
@Outcome(id = "11, 0, 0", expect = ACCEPTABLE, desc = "A ran; B arrived while it ran and ran after it")
@Outcome(id = "1, 2, 0", expect = ACCEPTABLE, desc = "A ran; B arrived while it ran and was returned")
@Outcome(id = "1, 2, 1", expect = ACCEPTABLE,
        desc = "A ran, the owner went idle; B re-activated the lane and was returned")
@Outcome(id = "10, 0, 5", expect = ACCEPTABLE, desc = "B replaced A and ran")
@Outcome(id = "0, 2, 5", expect = ACCEPTABLE, desc = "B replaced A and was returned")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, run although replaced, or lost")
@State
public class CoalescingShutdownNowStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, new Thread(() -> { }));
    final CoalescingLane lane = new CoalescingLane(engine, "ctx");
    int ran;
    final Runnable a = () -> ran += 1;
    final Runnable b = () -> ran += 10;

    public CoalescingShutdownNowStress() {
        LaneFixtures.fillCore(engine.pool);
        LaneFixtures.register(engine.pool, worker);
        engine.lanes(true).put("ctx", lane);
        if (lane.offer(a, 0) != Lane.ACTIVATED) {
            throw new IllegalStateException("a new lane must activate on its first offer");
        }
    }

    @Actor
    public void owner() {
        lane.runBatch(worker, 64);
        Thread.interrupted(); // shutdownNow interrupts the worker's stand-in thread only; clear ours regardless
    }

    @Actor
    public void submitterThenStopper(III_Result r) {
        r.r3 = lane.offer(b, 0);
        List<Runnable> returned = engine.shutdownNow();
        int bits = 0;
        for (Runnable t : returned) {
            int bit = t == a ? 1 : t == b ? 2 : 4;
            bits |= (bits & bit) != 0 ? 8 : bit; // 8: a task returned twice
        }
        r.r2 = bits;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r1 = ran;
    }
}
