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
 * Deliberately broken: a copy of the per-batch head of a sequential lane (the owner writes the lane's {@code taken}
 * only at the end of its batch, and its progress per task into its own hand-shake word, inside the take) with a
 * {@code shutdownNow} drain that starts from {@code taken} and does not read the owner's word. The take hand-shake
 * is the real one (announce, then read the state; the progress published by the release store that ends the take).
 * Same outcomes as {@code ShutdownNowDrainStress}, which runs the real lane; here the forbidden "1, 2" (a task run
 * and returned: taken since the batch began, which only the word says) shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "stopped before the first take; both returned")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "one ran, the other was returned")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "both were taken before the stop")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, or lost")
@State
public class BrokenStaleHeadDrainStress {
    static final int LAST = 2; // the last seq claimed: both slots were written before the actors start

    volatile boolean stop;
    volatile long take;   // the owner's word: last seq taken << 1 | taking
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
            take = h << 1 | 1;
            if (stop) {
                take = h << 1;
                return; // taken left a batch old (the real owner writes it here, after its take: maybe too late)
            }
            long i = h + 1;
            Object slot = i <= LAST ? tasks[(int) (i - 1)] : null;
            if (slot == null) {
                taken = h; // inside the take, as the real owner's idle transition: the drain reads it after
                take = h << 1;
                return;
            }
            take = i << 1;
            ((Runnable) slot).run();
            h = i;
        }
    }

    @Actor
    public void stopper(II_Result r) {
        stop = true;
        while ((take & 1) != 0) {
            Thread.onSpinWait();
        }
        List<Object> out = new ArrayList<>();
        for (long i = taken + 1; i <= LAST; i++) { // BUG: the owner's word says how far it went since taken
            out.add(tasks[(int) (i - 1)]);
        }
        r.r2 = out.size();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
