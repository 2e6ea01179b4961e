package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.ArrayList;
import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Deliberately broken: a copy of the per-batch head of a sequential lane (the owner marks each slot TAKEN as it takes
 * its task, inside the take hand-shake, and writes the lane's {@code taken} only at the end of its batch) with a
 * {@code shutdownNow} drain that returns every non-null slot after {@code taken} instead of skipping the TAKEN ones.
 * The take hand-shake is the real one (announce, then read the state). Same outcomes as
 * {@code ShutdownNowDrainStress}, which runs the real lane; here the forbidden "1, 2" and "2, 2" (tasks run and
 * returned: the marks of the slots taken since the batch began) show up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "stopped before the first take; both returned")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "one ran, the other was returned")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "both were taken before the stop")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, or lost")
@State
public class BrokenStaleHeadDrainStress {
    static final Object TAKEN = new Object();
    static final int LAST = 2; // the last seq claimed: both slots were written before the actors start

    volatile boolean stop;
    volatile boolean taking;
    final Object[] tasks = new Object[4]; // seq i is tasks[i - 1]
    long taken;   // the last seq taken as of the batch boundary
    int ran;

    public BrokenStaleHeadDrainStress() {
        tasks[0] = (Runnable) () -> ran++;
        tasks[1] = (Runnable) () -> ran++;
    }

    @Actor
    public void owner() {
        long h = taken; // the batch starts here; taken is written back only when the batch ends
        for (;;) {
            taking = true;
            if (stop) {
                taking = false;
                return; // taken left a batch old (the real owner writes it here, after its take: maybe too late)
            }
            long i = h + 1;
            Object slot = i <= LAST ? tasks[(int) (i - 1)] : null;
            if (slot == null) {
                taken = h; // inside the take, as the real owner's idle transition: the drain reads it after
                taking = false;
                return;
            }
            tasks[(int) (i - 1)] = TAKEN;
            taking = false;
            ((Runnable) slot).run();
            h = i;
        }
    }

    @Actor
    public void stopper(II_Result r) {
        stop = true;
        while (taking) {
            Thread.onSpinWait();
        }
        List<Object> out = new ArrayList<>();
        for (long i = taken + 1; i <= LAST; i++) {
            Object slot = tasks[(int) (i - 1)];
            if (slot != null) {
                out.add(slot); // BUG: a slot taken since the batch began holds TAKEN, and is returned as a task
            }
        }
        r.r2 = out.size();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
