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
 * Deliberately broken copy of {@code CoalescingReleaseStress}: the release checks IDLE and then writes DEAD, in two
 * steps. Same actors and outcomes; the forbidden "1, 1, 0" shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "1, 2, 0", expect = ACCEPTABLE, desc = "released first; the offer saw DEAD")
@Outcome(id = "0, 1, 1", expect = ACCEPTABLE, desc = "the offer activated the lane first; the release failed")
@Outcome(expect = FORBIDDEN, desc = "both won (a task accepted into a released lane), or anything else")
@State
public class BrokenCoalescingReleaseStress {
    static final Runnable IDLE = () -> { };
    static final Runnable BUSY = () -> { };
    static final Runnable DEAD = () -> { };
    static final VarHandle SLOT;

    static {
        try {
            SLOT = MethodHandles.lookup().findVarHandle(BrokenCoalescingReleaseStress.class, "slot", Runnable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    volatile Runnable slot = IDLE;
    int ran;

    @Actor
    public void releaser(III_Result r) {
        if (slot == IDLE) {
            slot = DEAD;   // BUG: an activation since the check is lost
            r.r1 = 1;
        }
    }

    @Actor
    public void submitter(III_Result r) {
        Runnable task = () -> ran++;
        for (;;) {
            Runnable s = slot;
            if (s == DEAD) {
                r.r2 = 2;
                return;
            }
            if (SLOT.compareAndSet(this, s, task)) {
                r.r2 = s == IDLE ? 1 : 0;
                return;
            }
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r2 == 1 && r.r1 == 0) {
            Runnable s = slot;
            if (s != DEAD && SLOT.compareAndSet(this, s, BUSY)) {
                s.run();
            }
        }
        r.r3 = ran;
    }
}
