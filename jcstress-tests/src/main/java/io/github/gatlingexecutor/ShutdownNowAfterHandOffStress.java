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
 * {@code shutdownNow} draining a sequential lane that its owner hands back to the ready queue: a batch budget of one
 * task and an unordered task waiting in the queue make the owner write the lane's head after its first task, queue
 * the lane and clear its hand-shake word ({@link Worker#leaveLane}), all outside any take. The drain then has only the
 * head to start from, so the head must be visible to whoever reads the cleared word. Result: (runs, returns) of the
 * lane's tasks, each weighed apart (1 for the first, 10 for the second); the unordered task must be returned as well
 * (else the second figure is off by 100).
 */
@JCStressTest
@Description("shutdownNow draining a lane its owner has just handed back")
@Outcome(id = "0, 11", expect = ACCEPTABLE, desc = "stopped before the first take; both returned")
@Outcome(id = "1, 10", expect = ACCEPTABLE, desc = "the first ran, the second was returned")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, or lost, or the unordered task lost")
@State
public class ShutdownNowAfterHandOffStress {
    final Engine engine = LaneFixtures.engine(1);
    final Worker worker = LaneFixtures.worker(engine, new Thread(() -> { }));
    final SequentialLane lane = new SequentialLane(engine, "ctx");
    final Runnable plain = () -> { };
    int ran;
    final Runnable a = () -> ran += 1;
    final Runnable b = () -> ran += 10;

    public ShutdownNowAfterHandOffStress() {
        LaneFixtures.fillCore(engine.pool);
        LaneFixtures.register(engine.pool, worker);
        engine.lanes(false).put("ctx", lane);
        engine.readyQueue.offerTask(new PlainTask(plain, 0));
        lane.offer(a, 0);
        lane.offer(b, 0);
    }

    @Actor
    public void owner() {
        worker.runLane(lane);
        Thread.interrupted(); // shutdownNow interrupts the worker's stand-in thread only; clear ours regardless
    }

    @Actor
    public void stopper(II_Result r) {
        List<Runnable> returned = engine.shutdownNow();
        boolean plainBack = returned.remove(plain);
        r.r2 = LaneFixtures.weigh(returned, a, b) + (plainBack ? 0 : 100);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
