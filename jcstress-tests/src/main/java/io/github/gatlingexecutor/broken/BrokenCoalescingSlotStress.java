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
 * Deliberately broken copy of {@code CoalescingSlotStress} (and, with the release variant, of
 * {@code CoalescingReleaseStress}'s protocol): the owner takes the pending task by reading the slot and then writing
 * BUSY, in two steps, instead of one CAS. Same actors and outcomes; the forbidden "1, 0, 1" shows up. Run with
 * {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "3, 0, 0", expect = ACCEPTABLE, desc = "A was taken first; B arrived while A ran and ran after it")
@Outcome(id = "2, 0, 1", expect = ACCEPTABLE, desc = "B replaced A before it started; only B ran; A coalesced")
@Outcome(id = "3, 1, 0", expect = ACCEPTABLE, desc = "A ran and the owner went idle; B re-activated the lane")
@Outcome(id = "1, 0, 1", expect = FORBIDDEN, desc = "LOST: B accepted but never ran, and A ran although replaced")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class BrokenCoalescingSlotStress {
    static final Runnable IDLE = () -> { };
    static final Runnable BUSY = () -> { };
    static final VarHandle SLOT;

    static {
        try {
            SLOT = MethodHandles.lookup().findVarHandle(BrokenCoalescingSlotStress.class, "slot", Runnable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    volatile Runnable slot;
    int ran;
    int coalesced;  // written by the submitter only

    public BrokenCoalescingSlotStress() {
        slot = () -> ran |= 1;  // active, A pending
    }

    void runBatch() {
        for (;;) {
            Runnable s = slot;
            if (s == BUSY) {
                if (SLOT.compareAndSet(this, BUSY, IDLE)) {
                    return;
                }
                continue;
            }
            if (s == IDLE) {
                return;
            }
            slot = BUSY;   // BUG: not a CAS from s; a task stored since the read is overwritten
            s.run();
        }
    }

    @Actor
    public void owner() {
        runBatch();
    }

    @Actor
    public void submitter(III_Result r) {
        Runnable b = () -> ran |= 2;
        for (;;) {
            Runnable s = slot;
            if (SLOT.compareAndSet(this, s, b)) {
                if (s != BUSY && s != IDLE) {
                    coalesced++;
                }
                r.r2 = s == IDLE ? 1 : 0;
                return;
            }
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r2 == 1) {
            runBatch();
        }
        r.r1 = ran;
        r.r3 = coalesced;
    }
}
