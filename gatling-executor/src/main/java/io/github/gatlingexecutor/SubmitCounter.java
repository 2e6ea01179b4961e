package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The count of accepted submits: one cell per submitting platform thread, which only that thread writes.
 *
 * <p>Why not a {@link LongAdder}: every increment of an adder is a CAS, a locked instruction, even on a cell no other
 * thread touches. On one hot key it was the largest single cost of a submit: 11 to 14 ns of the producer's 45
 * (docs/hand-off-experiments.md, sixteenth set), as much as the lane's own CAS. Here a thread finds its cell through a
 * {@link ThreadLocal} and adds with an opaque load and an opaque store.
 *
 * <p>Cells of ended threads are folded into {@link #ended} when the count is read or a new thread registers, at most
 * once per {@code foldEveryNanos}, and at the executor's termination, so the cells follow the threads that are alive,
 * not every thread that ever submitted; a live thread has one cell, taken back if its thread locals were erased. Not at
 * every read: the checker reads the count once a tick to see whether work flows, and on JDK 17 {@code Thread.isAlive}
 * is a native call per cell. A virtual thread (JDK 21+) counts in a shared adder instead: a service may start one per
 * request, and a cell each would cost more than the adder's CAS.
 *
 * <p>Reads are exact once the submitters are done, and otherwise a moment old, as an adder's sum is: a cell is read
 * with an opaque load. The lock is taken by readers (statistics, and the checker once per tick, and a claim of
 * termination) and by a thread's first submit, never by the others.
 *
 * <p>A cell also marks its thread's submit in flight, from just before the offer that may let a worker see the task
 * to the count ({@link #begin}, then {@link #commit} or {@link #abort}), so that termination can wait for the count
 * ({@link #othersSettled}): two more stores to a line the thread already owns, where a shared count of submits in
 * flight would be two atomics on a line every submitter writes.
 */
final class SubmitCounter {

    /**
     * One submitting thread's count, and its thread, weakly: between folds the cells of threads that have ended stay
     * here (a burst of short-lived submitters under a second apart is folded only at the next read or registration,
     * and an idle executor may see neither for good), and a strong reference kept each such thread, and its context
     * class loader, reachable. The count lives in the cell, so losing the thread loses nothing. Not padded: a padded
     * cell read the same as a plain one (three pairs of runs, docs/hand-off-experiments.md, sixteenth set).
     */
    static final class Cell extends WeakReference<Thread> {
        @SuppressWarnings("unused") // accessed through COUNT
        private long count;
        /**
         * Submits of the owner between {@link #begin} and {@link #commit} or {@link #abort}: more than one when a
         * caller's code run inside that span (a replaced future's {@code done()}) submits again.
         */
        @SuppressWarnings("unused") // accessed through IN_FLIGHT
        private int inFlight;
        /**
         * Set by the owner when it found itself in flight as it was about to claim termination (see
         * {@link #othersSettled}); its commit or abort then says so to its caller, which claims it. Only the owner
         * reads or writes it.
         */
        private boolean claimSkipped;

        Cell(Thread owner) {
            super(owner);
        }
    }

    private static final VarHandle COUNT;
    private static final VarHandle IN_FLIGHT;
    /** {@code Thread::isVirtual} where the JDK has it (21+), else null; a constant, so the JIT folds the test away. */
    private static final MethodHandle IS_VIRTUAL;

    static {
        try {
            COUNT = MethodHandles.lookup().findVarHandle(Cell.class, "count", long.class);
            IN_FLIGHT = MethodHandles.lookup().findVarHandle(Cell.class, "inFlight", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        MethodHandle isVirtual;
        try {
            isVirtual = MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual",
                    MethodType.methodType(boolean.class));
        } catch (NoSuchMethodException | IllegalAccessException beforeJdk21) {
            isVirtual = null;
        }
        IS_VIRTUAL = isVirtual;
    }

    private final ThreadLocal<Cell> mine = ThreadLocal.withInitial(this::register);
    private final LongAdder virtualThreads = new LongAdder();
    /** Virtual threads between {@link #begin} and {@link #commit} or {@link #abort}. */
    private final AtomicInteger virtualInFlight = new AtomicInteger();
    private final long foldEveryNanos;

    // Guarded by this.
    private Cell[] cells = new Cell[4];
    private int size;
    private long ended;
    private long lastFold = System.nanoTime();

    /** @param foldEveryNanos how often a read may fold the cells of ended threads (0: at every read) */
    SubmitCounter(long foldEveryNanos) {
        this.foldEveryNanos = foldEveryNanos;
    }

    /**
     * The calling thread is about to make a task visible to the workers (the offer to its lane or to the ready queue)
     * and has not yet decided whether it was accepted: until its {@link #commit} or {@link #abort},
     * {@link #othersSettled} waits for it. Returns the thread's cell, or null for a virtual thread, to pass to either.
     *
     * <p>Why: the count used to come after the offer. The task could run, or be returned by {@code shutdownNow}, and
     * the executor terminate between the two, so a thread that had seen termination read {@code submitted()} (and,
     * for a replacement, {@code coalesced()}) one lower than a moment later.
     */
    Cell begin() {
        if (IS_VIRTUAL != null && isVirtual(Thread.currentThread())) {
            virtualInFlight.getAndIncrement();
            return null;
        }
        Cell c = mine.get();
        // Opaque is enough: no ordering is needed before the offer that follows, because what termination must see is
        // this mark only when the task got through, and then it sees it by happens-before: the offer's release (the
        // lane's CAS or the queue's) is acquired by the worker that takes the task, or by the shutdownNow that drains
        // it, and termination comes after both.
        IN_FLIGHT.setOpaque(c, (int) IN_FLIGHT.getOpaque(c) + 1);
        return c;
    }

    /**
     * The submit {@link #begin} marked was accepted: counted, then no longer in flight. Returns true if the caller
     * must look for termination: its thread put a claim off while it was in flight, or, a virtual thread, termination
     * may have looked while it was.
     */
    boolean commit(Cell c) {
        if (c == null) {
            virtualThreads.increment();
            virtualInFlight.getAndDecrement(); // after the count; a full fence, so the caller's read of the state after
            return true;                       // it cannot miss a shutdown that missed this (see othersSettled)
        }
        // Opaque: only this thread writes the cell; readers need an untorn, eventually visible value, not ordering
        // (a plain store on x86, where an adder's CAS is a locked instruction).
        COUNT.setOpaque(c, (long) COUNT.getOpaque(c) + 1);
        return settled(c);
    }

    /** The submit {@link #begin} marked was not accepted: no longer in flight, not counted. As {@link #commit}. */
    boolean abort(Cell c) {
        if (c == null) {
            virtualInFlight.getAndDecrement();
            return true;
        }
        return settled(c);
    }

    private static boolean settled(Cell c) {
        // Release: a waiter that reads the mark cleared (acquire) then reads the count made before it.
        IN_FLIGHT.setRelease(c, (int) IN_FLIGHT.getOpaque(c) - 1);
        if (c.claimSkipped) {
            c.claimSkipped = false;
            return true;
        }
        return false;
    }

    /**
     * Called by a thread about to claim termination, once nothing else holds it back: waits until no other platform
     * thread is between {@link #begin} and {@link #commit} or {@link #abort}, then returns true. Returns false, at
     * once, if the calling thread is itself in flight (it claims at its own commit instead: its call tells it to), or
     * if a virtual thread is (each one looks for termination after its commit, behind a full fence).
     *
     * <p>Spinning is safe here: once the executor is otherwise ready to terminate, every lane is closed, so what a
     * thread in flight has left to do is a few instructions of a lock-free step, with none of the caller's code and
     * nothing to wait for from us (a replacement that got in before the close, and runs a replaced future's
     * {@code done()}, is waited for apart, by {@code Engine#completionBegins}). The thread that claims is the checker,
     * which never submits at that point, or, when it has no thread, any thread that found the executor ready; one
     * that is in flight itself does not wait, so two such threads cannot wait for each other. The cells are read with
     * acquire, so a cleared mark brings the count made before it.
     */
    boolean othersSettled() {
        if (virtualInFlight.get() != 0) {
            return false;
        }
        Thread me = Thread.currentThread();
        for (int waits = 0;;) {
            Cell busy = othersInFlight(me);
            if (busy == null) {
                return true;
            }
            if (busy.get() == me) {
                busy.claimSkipped = true; // our own mark: the commit or abort that clears it says to claim
                return false;
            }
            while ((int) IN_FLIGHT.getAcquire(busy) != 0 && isAlive(busy)) {
                waits = Waiting.pause(waits);
            }
        }
    }

    /** A cell in flight: the caller's own if it is, else another live thread's; null if none. */
    private synchronized Cell othersInFlight(Thread me) {
        Cell found = null;
        for (int i = 0; i < size; i++) {
            Cell c = cells[i];
            if ((int) IN_FLIGHT.getAcquire(c) != 0) {
                if (c.get() == me) {
                    return c;
                }
                if (found == null && isAlive(c)) {
                    found = c; // a thread that died in flight (killed between two instructions) holds nothing back
                }
            }
        }
        return found;
    }

    private static boolean isAlive(Cell c) {
        Thread owner = c.get();
        return owner != null && owner.isAlive();
    }

    /** Submits counted so far; first folds the cells of threads that have ended, if the last fold is old enough. */
    synchronized long sum() {
        foldIfDue();
        long sum = ended + virtualThreads.sum();
        for (int i = 0; i < size; i++) {
            sum += (long) COUNT.getOpaque(cells[i]);
        }
        return sum;
    }

    /** Folds the cells of ended threads if the last fold is at least {@code foldEveryNanos} old. Under the lock. */
    private void foldIfDue() {
        long now = System.nanoTime();
        if (now - lastFold >= foldEveryNanos) {
            lastFold = now;
            foldEnded();
        }
    }

    /** Moves the counts of threads that have ended into {@link #ended}, and drops their cells. */
    private void foldEnded() {
        int kept = 0;
        for (int i = 0; i < size; i++) {
            Cell c = cells[i];
            // isAlive first: a thread seen ended has made its last increment visible to us (its termination
            // synchronizes-with our detecting it, JLS 17.4.4), so what is folded is its final count. A cell whose
            // thread was collected is folded too. The JLS gives a collection no such edge; but a live thread is
            // reachable, so that one had ended (its exit fences its stores), and a collector clears a reference only
            // after every thread has synchronized with it (a safepoint or handshake), so its count is final too.
            Thread owner = c.get();
            if (owner != null && owner.isAlive()) {
                cells[kept++] = c;
            } else {
                ended += (long) COUNT.getOpaque(c);
            }
        }
        Arrays.fill(cells, kept, size, null);
        size = kept;
        if (kept < cells.length / 4 && cells.length > 4) {
            cells = Arrays.copyOf(cells, Math.max(4, cells.length / 2)); // after a crowd of threads has come and gone
        }
    }

    /**
     * Folds the cells of ended threads now, whenever the last fold was: at termination, after which only a read of the
     * statistics would fold again, and a terminated executor may never be read, so that one still referenced keeps no
     * ended submitter's thread (nor, through it, its context class loader). A submitter still alive then (the thread
     * that closes the executor, say) keeps its cell until such a read: its thread may yet count a submit accepted
     * before the shutdown, and only a thread seen ended has made its last count visible.
     */
    synchronized void foldEndedNow() {
        lastFold = System.nanoTime();
        foldEnded();
    }

    /** Cells held now (for tests: ended threads' cells go at the next {@link #sum} that folds). */
    synchronized int cells() {
        return size;
    }

    private synchronized Cell register() {
        // Each new submitting thread may fold too, as a read does: where threads come and go (a thread per
        // connection) and nothing reads the count (an idle checker dozes, no statistics are taken), the cells of ended
        // threads, and through them the threads and their context class loaders, piled up (3,000 in an audit's probe).
        foldIfDue();
        Thread me = Thread.currentThread();
        // A thread registers again when its thread locals were erased: the common pool's workers erase theirs each
        // time they go idle (JDK 17 and 25), so a task submitting from it registered anew at nearly every submit, and
        // the live thread's old cells, never folded, piled up (thousands in an audit's probe), each read walking them
        // all. Its cell is still here: it takes it back. The scan is as rare as the registrations.
        for (int i = 0; i < size; i++) {
            if (cells[i].get() == me) {
                return cells[i];
            }
        }
        Cell c = new Cell(me);
        if (size == cells.length) {
            cells = Arrays.copyOf(cells, size * 2);
        }
        cells[size++] = c;
        return c;
    }

    /** Whether {@code t} is a virtual thread (JDK 21+); false before JDK 21, which has none. */
    static boolean isVirtual(Thread t) {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (boolean) IS_VIRTUAL.invokeExact(t);
        } catch (Throwable unexpected) {
            throw new AssertionError(unexpected); // Thread::isVirtual throws nothing
        }
    }
}
