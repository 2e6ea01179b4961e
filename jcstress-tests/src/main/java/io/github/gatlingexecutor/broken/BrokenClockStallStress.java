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
import org.openjdk.jcstress.infra.results.ZZZ_Result;

/**
 * Deliberately broken: a copy of the checker's clock stall ({@code ClockStallStress}) in which the checker writes its
 * flag with a release store and reads the clock back with an acquire load. Release/acquire orders neither the store
 * before the load nor, on the submitter's side, its CAS before its read of the flag being observed first: both sides
 * may miss each other (store buffering), and the restart's wake-up is lost: the forbidden "true, true, true". Run
 * with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "true, true, true", expect = FORBIDDEN, desc = "the restart's wake-up was lost")
@Outcome(expect = ACCEPTABLE, desc = "one side saw the other, or the submitter came first")
@State
public class BrokenClockStallStress {
    static final long STALE = Long.MIN_VALUE;
    static final VarHandle CLOCK;
    static final VarHandle STALLED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            CLOCK = l.findVarHandle(BrokenClockStallStress.class, "clock", long.class);
            STALLED = l.findVarHandle(BrokenClockStallStress.class, "stalled", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    long clock = System.nanoTime();
    boolean stalled;

    @Actor
    public void checker(ZZZ_Result r) {
        CLOCK.setOpaque(this, STALE);
        STALLED.setRelease(this, true);                         // BUG: not a volatile store
        if ((long) CLOCK.getAcquire(this) != STALE) {           // BUG: not a volatile load
            STALLED.setRelease(this, false);
            r.r1 = false;
            return;
        }
        r.r1 = true;
    }

    @Actor
    public void submitter() {
        long t = (long) CLOCK.getOpaque(this);
        if (t == STALE) {
            CLOCK.setRelease(this, System.nanoTime());          // BUG: a plain store where the real one CASes
            if ((boolean) STALLED.getAcquire(this)) {
                STALLED.setRelease(this, false);                // the wake-up
            }
        }
    }

    @Arbiter
    public void arbiter(ZZZ_Result r) {
        r.r2 = (long) CLOCK.getVolatile(this) != STALE; // as in the real test: fresh iff restarted after the stall
        r.r3 = (boolean) STALLED.getVolatile(this);
    }
}
