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
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * {@code shutdownNow} draining a sequential lane while its owner takes tasks out of it: the
 * {@link Worker#beginTake()} / {@link Worker#awaitNotTaking()} hand-shake keeps the lane single-consumer, so each of
 * the two queued tasks is either run or returned, never both, never neither. Result: (runs, returns), each task
 * weighed apart: 1 for the first, 10 for the second (so one task run or returned twice cannot stand for two).
 *
 * <p>Catches a take that does not announce itself before reading the executor state: with the announcement (the
 * hand-shake word's TAKING mark) moved after the state check, {@code broken.BrokenTakeHandshakeStress} (a model of
 * the hand-shake, not the lane) was seen failing with a task both run and returned; and a drain that starts from the
 * stale head without reading the owner's word, {@code broken.BrokenStaleHeadDrainStress}.
 */
@JCStressTest
@Description("shutdownNow draining a lane racing with its owner's takes")
@Outcome(id = "0, 11", expect = ACCEPTABLE, desc = "stopped before the first take; both returned")
@Outcome(id = "1, 10", expect = ACCEPTABLE, desc = "the first ran, the second was returned")
@Outcome(id = "11, 0", expect = ACCEPTABLE, desc = "both were taken before the stop")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, or lost")
@State
public class ShutdownNowDrainStress {
    final Engine engine = LaneFixtures.engine();
    final Worker worker = LaneFixtures.worker(engine, new Thread(() -> { }));
    final SequentialLane lane = new SequentialLane(engine, "ctx");
    int ran;
    final Runnable a = () -> ran += 1;
    final Runnable b = () -> ran += 10;

    public ShutdownNowDrainStress() {
        LaneFixtures.fillCore(engine.pool);
        LaneFixtures.register(engine.pool, worker);
        engine.lanes(false).put("ctx", lane);
        lane.offer(a, 0);
        lane.offer(b, 0);
    }

    @Actor
    public void owner() {
        lane.runBatch(worker, 64);
        Thread.interrupted(); // shutdownNow interrupts the worker's stand-in thread only; clear ours regardless
    }

    @Actor
    public void stopper(II_Result r) {
        List<Runnable> returned = engine.shutdownNow();
        r.r2 = LaneFixtures.weigh(returned, a, b);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
