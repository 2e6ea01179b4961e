package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * The idle-worker hand-shake of {@link WorkerPool}: a worker that finds the ready queue empty searches, registers as
 * idle, looks once more and parks ({@code awaitWork}); a submitter offers work and calls {@code signalWork}. The
 * worker must come back with the work. Result: (the worker returned the submitted item, the submitter finished).
 *
 * <p>How it fails: a lost wake-up leaves the worker actor parked for ever, so the run does not finish (jcstress
 * waits on the stuck actor; a run with the hanging form of the broken copy was still stuck after 9 minutes and was
 * killed). The copy of the hand-shake without the second look at the queue, {@code broken.BrokenIdleHandshakeStress},
 * gives up after 100 ms instead and was seen failing with the forbidden "false, true". {@code LincheckLaneTest}
 * model-checks the same real hand-shake and reports such a hang directly.
 */
@JCStressTest
@Description("Idle worker registration racing with a submitter's wake-up")
@Outcome(id = "true, true", expect = ACCEPTABLE, desc = "the worker took the submitted work")
@Outcome(expect = FORBIDDEN, desc = "the worker came back without the work")
@State
public class IdleHandshakeStress {
    final Engine engine = LaneFixtures.engine();
    final PlainTask item = new PlainTask(() -> { }, 0);
    volatile Worker worker;

    public IdleHandshakeStress() {
        LaneFixtures.fillCore(engine.pool);
    }

    @Actor
    public void worker(ZZ_Result r) {
        Worker w = LaneFixtures.worker(engine, Thread.currentThread());
        r.r1 = engine.pool.awaitWork(w) == item;
    }

    @Actor
    public void submitter(ZZ_Result r) {
        engine.readyQueue.offerTask(item);
        engine.pool.signalWork();
        r.r2 = true;
    }
}
