package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A context's queue of work, owned by at most one thread at a time.
 *
 * <p>Ownership is the invariant that makes lanes sequential: a lane is <em>active</em> from the submit that finds it
 * idle until the worker that empties it releases it, and while active it is in exactly one place: with the submitter
 * that activated it (until it offers the lane to the ready queue), in the ready queue, with one worker running a
 * batch of it, or with the checker, which took it out of the ready queue after it went round empty (until it
 * releases it or queues it again). Only the owner takes tasks from the lane, so no two tasks of a lane ever run at
 * once.
 *
 * <p>A lane that has nothing queued and nothing running goes IDLE and stays in the engine's map for a short grace
 * ({@link Worker#IDLE_GRACE_NANOS}), so a context that is used again soon is re-activated with one CAS and no map
 * update. Then it is released: it goes DEAD (terminal) and is removed from the map. A lane the checker holds with
 * nothing queued goes from ACTIVE straight to DEAD ({@link #releaseIfEmpty}). Every lane that is neither DEAD nor
 * CLOSED is the one in the map for its context, so a context never has two lanes that accept work; a submitter that
 * finds a DEAD lane looks the context up again. {@code shutdownNow} unmaps the lanes it closes (a worker may still run
 * a task of one); after STOP a submit that makes a new lane for the context is rejected and drops it.
 */
abstract class Lane {
    /** {@link #offer} outcomes. */
    static final int ACCEPTED = 0;
    /** Accepted, and the lane was idle: the caller now owns it and must hand it to the ready queue. */
    static final int ACTIVATED = 1;
    /** The lane was released: look the context up again. */
    static final int RELEASED = 2;
    /** The lane was closed by shutdown: reject the task. */
    static final int CLOSED_TO_SUBMITS = 3;
    /** Not accepted: the sequential lane holds {@code maxQueuedPerContext} waiting tasks. */
    static final int FULL = 4;
    /** Accepted, replacing a coalescing task that had not started (which took its place). */
    static final int REPLACED = 5;
    /** Accepted over the limit of a forced offer (a negative {@code limit}): the lane already held that many. */
    static final int ACCEPTED_OVER = 6;

    /** {@link #oldestStamp} of a lane with no waiting task. */
    static final long NO_WAITING = Long.MIN_VALUE;

    /** {@link #runBatch} outcomes. */
    static final int DONE = 0;
    /**
     * The batch budget ran out with work left: the caller still owns the lane, and either runs another batch or
     * requeues it (see {@link Worker#runLane}).
     */
    static final int MORE = 1;
    /**
     * The lane is empty and the caller has made it idle: it no longer owns it, and should remember it in its idle
     * ring (which it does only after it has stopped treating the lane as its own, see {@link Worker#runLane}).
     */
    static final int IDLED = 2;
    /**
     * A sequential lane emptied while other work waits, and stays active for one more round of the ready queue (see
     * {@link SequentialLane#runBatch}): the caller still owns it and must requeue it now. Kept apart from
     * {@link #MORE} so the caller need not read the lane's state to tell an emptied lane from a full batch.
     */
    static final int ROUND = 3;

    final Engine engine;
    final Object context;
    /**
     * The context's {@code hashCode} when the lane was made, which is the bin the map filed it in: {@link #unmap} finds
     * the entry again by it, even if the caller has changed the context since (see {@link MappedEntry}).
     */
    private final int mappedHash;
    /**
     * {@link Worker#id} of the worker that last ran a batch of this lane (0: none yet), to count transfers; written
     * only by the owner, read by the next owner. An id, not the worker: a lane handle keeps its last lane for the
     * executor's lifetime, and must not keep a retired worker (its thread and idle ring) reachable with it.
     */
    int lastWorkerId;
    /**
     * When the lane last went into the ready queue (the coarse clock, {@link Engine#stamp}). Written by whoever owns
     * the lane, just before it queues it; read by the next owner, which took it out of the queue (the queue's link
     * CAS and the poll's swap order the two). Tells the worker how long a trip round the queue takes now (see
     * SequentialLane#runBatch).
     */
    long queuedAt;
    /**
     * When the lane last went idle (System.nanoTime). Written by the owner just before the CAS that makes the lane
     * idle, so whoever reads the idle state reads this stamp or a later one; used only to decide when to release.
     */
    volatile long idleSince;
    /**
     * True while some worker's idle ring holds this lane, so a lane idled again and again takes one ring entry, not
     * one per idle episode. Claimed with a CAS after the lane went idle; cleared by the worker that drops the entry,
     * which then re-checks the idle state (see #leaveRing): both sides write, then read, so an idle lane is
     * never left out of every ring.
     */
    volatile boolean ringed;

    private static final VarHandle RINGED;

    static {
        try {
            RINGED = MethodHandles.lookup().findVarHandle(Lane.class, "ringed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Claims the single ring entry this lane may have; false if some ring already holds it. */
    final boolean claimRing() {
        return !ringed && RINGED.compareAndSet(this, false, true);
    }

    /**
     * The ring entry that holds this lane is given up (its worker drops it, or the checker finds the lane active
     * again). Clear the mark first, then look again: if the lane went idle in between, the worker that idled it may
     * have seen the mark still set and not ringed it. Release it then, rather than ring it again: releasing early is
     * always safe. Both sides write, then read (the mark here, the lane state there), so an idle lane is never left
     * out of every ring. A stale entry left behind in a ring is harmless: every release is decided by the lane's CAS.
     */
    final void leaveRing() {
        ringed = false;
        if (isIdle()) {
            release();
        }
    }

    Lane(Engine engine, Object context) {
        this.engine = engine;
        this.context = context;
        this.mappedHash = context.hashCode();
    }

    abstract boolean coalescing();

    /**
     * Accepts {@code task} unless the lane is released or closed, or (a sequential lane, {@code limit > 0}) already
     * holds {@code limit} waiting tasks. A negative {@code limit} forces the task in over {@code -limit}, and says so
     * ({@link #ACCEPTED_OVER}), judged by the CAS that accepts it. Returns {@link #ACCEPTED}, {@link #ACTIVATED} (the
     * caller now owns the lane), {@link #REPLACED} (coalescing), {@link #RELEASED}, {@link #CLOSED_TO_SUBMITS},
     * {@link #FULL} or {@link #ACCEPTED_OVER}. Lock-free: one CAS, retried only when another submitter of this context
     * won.
     */
    abstract int offer(Runnable task, int limit);

    /**
     * Runs up to {@code budget} tasks on the calling worker, which owns the lane. Returns {@link #MORE},
     * {@link #ROUND} (the caller still owns the lane), {@link #IDLED}, or {@link #DONE} (shutdownNow owns what is
     * left).
     */
    abstract int runBatch(Worker worker, int budget);

    /**
     * Shutdown: closes an idle lane to further submissions. Returns {@code false} if the lane is active (it has
     * work queued or running), {@code true} if it is closed or released.
     */
    abstract boolean closeIfIdle();

    /** IDLE to DEAD: returns whether it did. The caller then unmaps the lane. */
    abstract boolean releaseIfIdle();

    abstract boolean isIdle();

    /**
     * Racy: whether the lane is active with nothing queued (sent round once more after it emptied). A hint for
     * {@link ReadyQueue#takeEmptyRounds}; {@link #releaseIfEmpty} decides.
     */
    abstract boolean queuedNothing();

    /**
     * The owner's release of an active lane with nothing queued and nothing running (one taken out of the ready queue,
     * sent round once more after it emptied): ACTIVE to DEAD; returns whether it did. The caller then unmaps the lane,
     * or, if not, still owns it.
     */
    abstract boolean releaseIfEmpty();

    /** Released or closed: terminal, so a true answer stays true (one read of the state). */
    abstract boolean isFinished();

    /** Released (DEAD): terminal; the lane is unmapped or about to be, and a new one may serve its context. */
    abstract boolean isReleased();

    /** Active: owned, with work queued or running (neither idle, released nor closed). */
    abstract boolean isActive();

    /** Releases and unmaps the lane if it is still idle. Safe from any thread at any time. */
    final void release() {
        if (releaseIfIdle()) {
            unmap();
        }
    }

    /**
     * {@code shutdownNow}: closes the lane and moves every accepted task that has not started into {@code out}. The
     * caller must have made sure no worker takes from this lane any more (see {@link Worker#awaitNotTaking}).
     * Returns the number of tasks moved.
     */
    abstract int closeAndDrain(List<Runnable> out);

    abstract long submittedCount();

    /** Tasks accepted and not yet started (racy: for limits checked after the fact, and statistics). */
    abstract long queuedCount();

    /** The coarse stamp of the oldest task waiting to start, or {@link #NO_WAITING} (racy: for statistics). */
    abstract long oldestStamp();

    /** Tasks of this lane that started (racy, for statistics: an opaque or a plain read, by lane kind). */
    abstract long executedCount();

    /**
     * Removes this lane from the engine's map, if it is still the one there: by whoever made it DEAD, and by the drain
     * of {@code shutdownNow} for every lane it closed (a second removal finds another lane or none, and does nothing).
     */
    final void unmap() {
        ConcurrentHashMap<Object, Lane> lanes = engine.lanes(coalescing());
        try {
            if (lanes.remove(context, this)) {
                return;
            }
        } catch (RuntimeException | Error contextFailed) {
            // The context's equals/hashCode threw. A worker must not die of it; the removal below needs neither.
            engine.reportUncaught(contextFailed);
        }
        // Not found as the context hashes and compares now: removed already, or the context has changed since the
        // lane was made. Looked for once more where it was filed; a second removal finds nothing and does nothing.
        lanes.remove(new MappedEntry(context, mappedHash), this);
    }

    /**
     * The key {@link #unmap} removes with. Removed by the context itself, a lane whose context had changed its
     * {@code hashCode} in the moments between its last task and its release (a session object recycled once its work
     * was done) was looked for in the wrong bin and stayed mapped for good: counted in {@code liveContexts()}, its
     * context kept reachable. The map hashes the key it is given and asks it, not the stored key, whether the two are
     * equal: so this key gives the hash the entry was filed under and is equal to the stored context object only. The
     * lane itself is the value removed, so a newer lane of an equal context is never taken out.
     */
    private static final class MappedEntry {
        private final Object context;
        private final int hash;

        MappedEntry(Object context, int hash) {
            this.context = context;
            this.hash = hash;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object stored) {
            return stored == context;
        }
    }
}
