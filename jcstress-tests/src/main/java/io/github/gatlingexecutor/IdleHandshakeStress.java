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
 * <p>The worker starts with no search budget (as a worker at low load does), so every sample goes through the
 * registration, the second look and, when the submitter is late, the park: with the budget of a new worker, the search
 * found the item in all but about 100 of 25,600 samples (an outside probe of this loop), and the hand-shake was
 * hardly reached.
 *
 * <p>How it fails: a lost wake-up leaves the worker actor parked for ever; jcstress 0.16 then ends the test as a
 * TIMEOUT_ERROR (after at least 30 s), a failed run like a forbidden outcome. The copy of the hand-shake without the
 * second look at the queue, {@code broken.BrokenIdleHandshakeStress}, gives up after 100 ms instead and was seen
 * failing with the forbidden "false, true". {@code LincheckWorkerPoolTest} model-checks the same real hand-shake and
 * reports such a hang directly.
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
        w.searchBudget = 0; // no search: straight to the hand-shake (see the class comment)
        r.r1 = engine.pool.awaitWork(w) == item;
    }

    @Actor
    public void submitter(ZZ_Result r) {
        engine.readyQueue.offerTask(item);
        engine.pool.signalWork();
        r.r2 = true;
    }
}
