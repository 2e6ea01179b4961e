package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.Future;

/**
 * The coalescing lane of one context: a single slot whose value is both the pending task and the lane's state.
 *
 * <pre>
 *   slot == IDLE     nothing pending or running (new, or emptied within the grace); the next submit activates it
 *   slot == a task   active, with that task pending (not started)
 *   slot == BUSY     active, nothing pending: the owner is running a task or about to release the lane
 *   slot == DEAD     released (terminal); the lane is no longer in the map
 *   slot == CLOSED   closed by shutdown (terminal); submits are rejected
 * </pre>
 *
 * A submit is one CAS: it installs its task and learns in the same step whether it replaced a pending task (that task
 * is coalesced: counted, and cancelled if it is a future), activated the lane, or hit a terminal state. Because the
 * state and the task are one word, a task can never be left in the slot of a lane nobody will run, and the owner takes
 * the pending task with one CAS, which also excludes {@code shutdownNow} taking it at the same time.
 */
final class CoalescingLane extends Lane {

    private static final Runnable IDLE = marker("IDLE");
    private static final Runnable BUSY = marker("BUSY");
    private static final Runnable DEAD = marker("DEAD");
    private static final Runnable CLOSED = marker("CLOSED");

    private static final VarHandle SLOT;
    private static final VarHandle SUBMITTED;
    private static final VarHandle PENDING_SINCE;
    private static final VarHandle EXECUTED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SLOT = l.findVarHandle(CoalescingLane.class, "slot", Runnable.class);
            SUBMITTED = l.findVarHandle(CoalescingLane.class, "submitted", long.class);
            PENDING_SINCE = l.findVarHandle(CoalescingLane.class, "pendingSince", long.class);
            EXECUTED = l.findVarHandle(CoalescingLane.class, "executed", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile Runnable slot = IDLE;
    private volatile long submitted; // updated with getAndAdd by submitters
    /**
     * Written by the lane's owner only, read by statistics on any thread: opaque on both sides, so a reader never sees
     * a torn value (a plain long may tear on a 32-bit JVM) and the owner pays no fence.
     */
    private long executed;
    /**
     * Engine#stamp of the oldest update not yet served: written by a submitter that finds nothing pending, before the
     * CAS that installs its task; a replacement leaves it alone, so a lane whose updates keep replacing one another
     * shows how stale it really is. Written before the CAS so that no reader sees a pending task with the stamp of an
     * earlier episode; two submitters racing to fill an empty slot may leave the later one's stamp, an error of the
     * width of that race. Opaque: the CAS that follows publishes it to whoever reads the slot first.
     */
    @SuppressWarnings("unused") // accessed through PENDING_SINCE
    private long pendingSince;

    CoalescingLane(Engine engine, Object context) {
        super(engine, context);
    }

    private static Runnable marker(String name) {
        return new Runnable() {
            @Override
            public void run() {
                throw new AssertionError("lane state marker run as a task");
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }

    @Override
    boolean coalescing() {
        return true;
    }

    @Override
    int offer(Runnable task, int limit) {
        for (;;) {
            Runnable s = slot;
            if (s == DEAD) {
                return RELEASED;
            }
            if (s == CLOSED) {
                return CLOSED_TO_SUBMITS;
            }
            boolean replacing = s != IDLE && s != BUSY;
            if (!replacing) {
                PENDING_SINCE.setOpaque(this, engine.stamp());
            }
            if (install(s, task)) {
                return s == IDLE ? ACTIVATED : replacing ? REPLACED : ACCEPTED;
            }
        }
    }

    /**
     * The one CAS of a submit: {@code task} in place of {@code s}, counted; a replaced pending task is handed to
     * {@link Engine#replaced}. A pending periodic run is announced before the CAS (see {@link Engine#skipBegins}).
     *
     * <p>A task submitted again while it is the one pending replaces itself: it was accepted twice and runs once, so
     * one acceptance counts as coalesced, but the task is not treated as replaced. Cancelling it (a future) or
     * skipping its run (a periodic task) would hit the very task that stays pending: the last submitted task would
     * then never run.
     */
    private boolean install(Runnable s, Runnable task) {
        boolean replacing = s != IDLE && s != BUSY;
        boolean itself = s == task;
        boolean skip = replacing && !itself && ScheduledTask.isPeriodic(s);
        // A replaced future is cancelled (a periodic one put back) after the CAS, on this thread: termination waits.
        boolean completes = replacing && !itself && s instanceof Future;
        if (completes) {
            engine.completionBegins();
        }
        if (skip) {
            engine.skipBegins();
        }
        try {
            if (!SLOT.compareAndSet(this, s, task)) {
                return false;
            }
            SUBMITTED.getAndAdd(this, 1L);
            if (itself) {
                engine.countCoalesced();
            } else if (replacing) {
                engine.replaced(s);
            }
            return true;
        } finally {
            if (skip) {
                engine.skipEnds();
            }
            if (completes) {
                engine.completionEnds();
            }
        }
    }

    /**
     * Replaces the pending task if there is one (the replacement takes its place under {@code maxQueued}); false,
     * with nothing done, if none is pending.
     */
    boolean replacePending(Runnable task) {
        for (;;) {
            Runnable s = slot;
            if (s == IDLE || s == BUSY || s == DEAD || s == CLOSED) {
                return false;
            }
            if (install(s, task)) {
                return true;
            }
        }
    }

    @Override
    int runBatch(Worker worker, int budget) {
        int ran = 0;
        for (;;) {
            Runnable s = slot;
            if (s == BUSY) {
                // Nothing pending. Give up ownership; a submitter that races us either installs its task first (our
                // CAS fails and we go round again) or finds IDLE and activates the lane itself.
                idleSince = worker.clock;
                if (SLOT.compareAndSet(this, BUSY, IDLE)) {
                    return IDLED;
                }
                continue;
            }
            if (s == CLOSED || s == DEAD || s == IDLE) {
                return DONE; // CLOSED: shutdownNow took what was pending. DEAD/IDLE cannot happen while we own it.
            }
            if (ran == budget) {
                return MORE;
            }
            if (worker.stopping()) {
                return DONE;
            }
            if (SLOT.compareAndSet(this, s, BUSY)) {
                EXECUTED.setOpaque(this, executed + 1); // its own last write: a plain read will do
                worker.runTask(s);
                ran++;
            }
        }
    }

    @Override
    boolean closeIfIdle() {
        for (;;) {
            Runnable s = slot;
            if (s == DEAD || s == CLOSED) {
                return true;
            }
            if (s != IDLE) {
                return false;
            }
            if (SLOT.compareAndSet(this, IDLE, CLOSED)) {
                return true;
            }
        }
    }

    @Override
    boolean releaseIfIdle() {
        return SLOT.compareAndSet(this, IDLE, DEAD);
    }

    @Override
    boolean isIdle() {
        return slot == IDLE;
    }

    /** A coalescing lane is never sent round empty: it goes idle as soon as it has nothing pending. */
    @Override
    boolean queuedNothing() {
        return false;
    }

    @Override
    boolean releaseIfEmpty() {
        return false;
    }

    @Override
    boolean isActive() {
        Runnable s = slot;
        return s != IDLE && s != DEAD && s != CLOSED;
    }

    @Override
    boolean isFinished() {
        Runnable s = slot;
        return s == DEAD || s == CLOSED;
    }

    @Override
    boolean isReleased() {
        return slot == DEAD;
    }

    @Override
    int closeAndDrain(List<Runnable> out) {
        for (;;) {
            Runnable s = slot;
            if (s == DEAD || s == CLOSED) {
                return 0;
            }
            if (SLOT.compareAndSet(this, s, CLOSED)) {
                if (s == IDLE || s == BUSY) {
                    return 0;
                }
                out.add(s);
                return 1;
            }
        }
    }

    @Override
    long submittedCount() {
        return submitted;
    }

    @Override
    long executedCount() {
        return (long) EXECUTED.getOpaque(this);
    }

    @Override
    long queuedCount() {
        return pending(slot) ? 1 : 0;
    }

    @Override
    long oldestStamp() {
        return pending(slot) ? (long) PENDING_SINCE.getOpaque(this) : NO_WAITING;
    }

    private static boolean pending(Runnable s) {
        return s != IDLE && s != BUSY && s != DEAD && s != CLOSED;
    }
}
