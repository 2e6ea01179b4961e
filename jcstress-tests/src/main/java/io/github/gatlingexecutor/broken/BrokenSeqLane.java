package io.github.gatlingexecutor.broken;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A copy of the sequential lane's state protocol (a producer index {@code seq << 2 | mode} claimed by CAS, tasks in
 * slots, idle by a CAS from (taken, ACTIVE), DEAD when released) with two switchable bugs, for the deliberately broken
 * jcstress tests. The copy marks the slots it takes (TAKEN), as the lane once did; the real lane keeps that progress
 * in its owner's hand-shake word instead, which the state protocol copied here does not depend on. One fixed array of
 * slots: the tests submit a handful of tasks, and growth is not what these copies are about
 * ({@code BrokenSequentialLaneGrowStress} has its own).
 */
final class BrokenSeqLane {
    static final int ACCEPTED = 0, ACTIVATED = 1, RELEASED = 2;

    static final int ACTIVE = 0, IDLE = 1, DEAD = 2;
    private static final int MODE_BITS = 2;
    private static final long MODE_MASK = (1 << MODE_BITS) - 1;

    /** Slots: seq {@code i} is {@code tasks[i - 1]}; more than the tests ever claim. */
    private static final int SLOTS = 16;

    /** A slot whose task the owner took. */
    static final Object TAKEN = new Object();

    private static final VarHandle STATE;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(BrokenSeqLane.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static long seq(long state) {
        return state >>> MODE_BITS;
    }

    private static int mode(long state) {
        return (int) (state & MODE_MASK);
    }

    private static long state(long seq, int mode) {
        return seq << MODE_BITS | mode;
    }

    private final boolean twoStepIdle;
    private final boolean twoStepRelease;
    private volatile long state = state(0, IDLE);
    private final Object[] tasks = new Object[SLOTS];
    private long taken; // owner's: the last seq taken, for the next owner

    BrokenSeqLane(boolean twoStepIdle, boolean twoStepRelease) {
        this.twoStepIdle = twoStepIdle;
        this.twoStepRelease = twoStepRelease;
    }

    int offer(Runnable task) {
        for (;;) {
            long s = state;
            int mode = mode(s);
            if (mode == DEAD) {
                return RELEASED;
            }
            long next = seq(s) + 1;
            if (STATE.compareAndSet(this, s, state(next, ACTIVE))) {
                SLOT.setRelease(tasks, (int) (next - 1), task);
                return mode == IDLE ? ACTIVATED : ACCEPTED;
            }
        }
    }

    void runBatch() {
        long h = taken;
        for (;;) {
            long i = h + 1;
            Object slot = SLOT.getAcquire(tasks, (int) (i - 1));
            if (slot == null) {
                long s = state;
                if (mode(s) == ACTIVE && seq(s) == h) {
                    taken = h;
                    if (twoStepIdle) {
                        state = state(h, IDLE);            // BUG: a claim since the check is lost (and its seq reused)
                        return;
                    }
                    if (STATE.compareAndSet(this, s, state(h, IDLE))) {
                        return;
                    }
                }
                Thread.onSpinWait(); // claimed, not written yet: its submitter is between its CAS and its store
                continue;
            }
            tasks[(int) (i - 1)] = TAKEN;
            ((Runnable) slot).run();
            h = i;
        }
    }

    boolean releaseIfIdle() {
        long s = state;
        if (mode(s) != IDLE) {
            return false;
        }
        if (twoStepRelease) {
            state = state(seq(s), DEAD);                   // BUG: an activation since the check is lost
            return true;
        }
        return STATE.compareAndSet(this, s, state(seq(s), DEAD));
    }
}
