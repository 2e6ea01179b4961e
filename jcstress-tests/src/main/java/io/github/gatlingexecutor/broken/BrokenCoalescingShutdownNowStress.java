package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Deliberately broken copy of {@code CoalescingShutdownNowStress}'s slot protocol: the owner takes the pending task
 * by reading the slot and then writing BUSY, in two steps, instead of one CAS, so a drain that closes the slot in
 * between returns the task the owner goes on to run, and a replacement written in between is lost. Same actors and
 * outcomes; the forbidden "2, 2, 5" and "1, 0, 5" show up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "3, 0, 0", expect = ACCEPTABLE, desc = "A ran; B arrived while it ran and ran after it")
@Outcome(id = "1, 2, 0", expect = ACCEPTABLE, desc = "A ran; B arrived while it ran and was returned")
@Outcome(id = "1, 2, 1", expect = ACCEPTABLE,
        desc = "A ran, the owner went idle; B re-activated the lane and was returned")
@Outcome(id = "2, 0, 5", expect = ACCEPTABLE, desc = "B replaced A and ran")
@Outcome(id = "0, 2, 5", expect = ACCEPTABLE, desc = "B replaced A and was returned")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, run although replaced, or lost")
@State
public class BrokenCoalescingShutdownNowStress {
    static final Runnable IDLE = () -> { };
    static final Runnable BUSY = () -> { };
    static final Runnable CLOSED = () -> { };
    static final VarHandle SLOT;

    static {
        try {
            SLOT = MethodHandles.lookup().findVarHandle(BrokenCoalescingShutdownNowStress.class, "slot",
                    Runnable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    int ran;
    final Runnable a = () -> ran |= 1;
    final Runnable b = () -> ran |= 2;
    volatile Runnable slot = a; // active, A pending
    volatile boolean stopped;

    @Actor
    public void owner() {
        for (;;) {
            Runnable s = slot;
            if (s == BUSY) {
                if (SLOT.compareAndSet(this, BUSY, IDLE)) {
                    return;
                }
                continue;
            }
            if (s == IDLE || s == CLOSED || stopped) {
                return;
            }
            slot = BUSY; // BUG: not a CAS from s; a close (or a replacement) since the read is overwritten
            s.run();
        }
    }

    @Actor
    public void submitterThenStopper(III_Result r) {
        for (;;) {
            Runnable s = slot;
            if (SLOT.compareAndSet(this, s, b)) {
                r.r3 = s == IDLE ? 1 : s == BUSY ? 0 : 5;
                break;
            }
        }
        stopped = true;
        for (;;) {
            Runnable s = slot;
            if (SLOT.compareAndSet(this, s, CLOSED)) {
                r.r2 = s == a ? 1 : s == b ? 2 : 0;
                return;
            }
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r1 = ran;
    }
}
