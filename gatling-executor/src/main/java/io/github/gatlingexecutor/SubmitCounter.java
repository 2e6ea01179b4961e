package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.Arrays;
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
 * with an opaque load. The lock is taken by readers (statistics, and the checker once per tick) and by a thread's first
 * increment, never by the others.
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

        Cell(Thread owner) {
            super(owner);
        }
    }

    private static final VarHandle COUNT;
    /** {@code Thread::isVirtual} where the JDK has it (21+), else null; a constant, so the JIT folds the test away. */
    private static final MethodHandle IS_VIRTUAL;

    static {
        try {
            COUNT = MethodHandles.lookup().findVarHandle(Cell.class, "count", long.class);
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

    /** Counts one submit of the calling thread. */
    void increment() {
        if (IS_VIRTUAL != null && isVirtual(Thread.currentThread())) {
            virtualThreads.increment();
            return;
        }
        Cell c = mine.get();
        // Opaque: only this thread writes the cell; readers need an untorn, eventually visible value, not ordering
        // (a plain store on x86, where the adder's CAS was a locked instruction).
        COUNT.setOpaque(c, (long) COUNT.getOpaque(c) + 1);
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

    private static boolean isVirtual(Thread t) {
        try {
            return (boolean) IS_VIRTUAL.invokeExact(t);
        } catch (Throwable unexpected) {
            throw new AssertionError(unexpected); // Thread::isVirtual throws nothing
        }
    }
}
