package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Set;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * What a configured {@link ThreadFactory} is given instead of a worker or the checker: the body runs only once the pool
 * has started the thread the factory returned, and then once. A factory may hand back a thread it has already started
 * (with this runnable, or another); {@code Thread.start} then fails, the pool counts a failed start and gives the slot
 * back, and without this gate the body would be running anyway, a worker or a second checker that nothing counts, caps
 * or stops (found running after termination). As {@code ThreadPoolExecutor} does, the pool refuses a thread that is
 * not {@code NEW}; the gate makes sure that refused threads run nothing of ours. Threads the executor makes itself need
 * no gate.
 *
 * <p>Once the start has succeeded, the first thread to run the gate runs the body, whichever it is: a factory may
 * return a thread that runs the runnable on a thread of its own (for a larger stack, say). Admitting only the thread
 * the pool started ran nothing then, and the worker's slot, taken and never given back, kept the executor from running
 * its tasks or terminating. The body takes the thread that runs it as its own ({@link Worker#thread},
 * {@link Checker}'s), so wake-ups and interrupts reach it.
 */
final class StartGate implements Runnable {
    private static final int PENDING = 0;
    private static final int OPEN = 1;
    private static final int REFUSED = 2;

    /**
     * How long after its start a thread found ended, with the gate still open, is left before
     * {@link #reclaimIfNeverRan} closes the gate. A factory may hand the gate to a thread of its own and let the thread
     * it returned end at once: until that thread gets to the gate, the gate is open behind an ended thread, and a
     * reclaim then refused a body that was about to run (in a test, every start of such a factory, for good, while the
     * checker looked every few milliseconds behind waiting work). A handover slower than this loses its body, and the
     * start is tried again. Counted from the start, not from the first look that found the thread ended: looks may be
     * rare (a nudge from the one submitter behind a stuck worker), and one a grace after the first may never come.
     */
    static final long NEVER_RAN_GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Runnable body;
    private volatile int verdict = PENDING;
    /** The thread that runs this gate, once it waits: the factory may run it on another thread than it returned. */
    private volatile Thread waiter;

    StartGate(Runnable body) {
        this.body = body;
    }

    /** What runs once the gate opens (a {@link Worker} or the {@link Checker}). */
    Runnable body() {
        return body;
    }

    /**
     * A thread from {@code factory} for the gate. Throws what the factory threw, or {@link IllegalStateException} if it
     * returned null; the gate is then closed for good (a factory that started a thread before failing has it run
     * nothing of ours). {@code inFactory}: the threads in the executor's factory now, this one among them while it
     * calls it (see {@link Engine#inThreadFactory}).
     */
    Thread newThread(ThreadFactory factory, String what, Set<Thread> inFactory) {
        Thread self = Thread.currentThread();
        boolean outermost = inFactory.add(self); // a factory may submit, and so start another thread, from inside
        Thread t;
        try {
            t = factory.newThread(this);
        } catch (Throwable failure) {
            decide(REFUSED, null);
            throw failure;
        } finally {
            if (outermost) {
                inFactory.remove(self);
            }
        }
        if (t == null) {
            decide(REFUSED, null);
            throw new IllegalStateException("the thread factory returned null for " + what);
        }
        return t;
    }

    /**
     * Starts {@code t} (from {@link #newThread}) and opens the gate for it. Throws
     * {@link IllegalThreadStateException} if the factory had started it already, or what {@code start} threw; the
     * body then never runs.
     */
    void start(Thread t, String what) {
        try {
            if (t.getState() != Thread.State.NEW) {
                throw new IllegalThreadStateException("the thread factory returned a thread already started ("
                        + t.getName() + ", " + t.getState() + ") for " + what);
            }
            t.start();
        } catch (Throwable failure) {
            decide(REFUSED, t);
            throw failure;
        }
        openedAt = System.nanoTime(); // before the verdict (volatile): a reader that finds OPEN reads it after
        decide(OPEN, t);
    }

    /** When {@link #start} opened the gate ({@code System.nanoTime}); see {@link #NEVER_RAN_GRACE_NANOS}. */
    private volatile long openedAt;

    /** When a thread found ended without running the body may be taken back (for a gate {@link #start} opened). */
    long graceEndsAt() {
        return openedAt + NEVER_RAN_GRACE_NANOS;
    }

    /** The thread from {@link #newThread} will not be started: whatever runs the gate runs nothing of ours. */
    void abandon() {
        decide(REFUSED, null);
    }

    /**
     * Whether {@code started}, the thread {@link #start} started, has ended without the body having run: a factory
     * whose thread never calls the runnable it was given (a wrapper that fails first, a thread made for another
     * runnable). If so, and {@link #NEVER_RAN_GRACE_NANOS} have passed since the start, closes the gate for good, so
     * that the body can never run, and returns true: the start failed after all, and its slot is to be given back. The
     * same CAS as {@link #run}'s claim decides, so a factory that runs the gate late on a thread of its own either has
     * the body run there (and this returns false) or runs nothing. Reads the thread's state only while nothing has
     * claimed the body: cheap enough for a look every check period. A look within the grace after the start does
     * nothing; the first look after it that finds the thread ended reclaims.
     */
    boolean reclaimIfNeverRan(Thread started, long now) {
        return verdict == OPEN && now - openedAt >= NEVER_RAN_GRACE_NANOS
                && started.getState() == Thread.State.TERMINATED && VERDICT.compareAndSet(this, OPEN, REFUSED);
    }

    private void decide(int v, Thread t) {
        // verdict is written before waiter is read, and the gate writes waiter before it reads verdict (both
        // volatile): a waiter that missed the verdict is seen here and unparked. The started thread t is unparked
        // as well: waiter names the last thread to run the gate, and t may be parked in it beside another.
        verdict = v;
        LockSupport.unpark(t); // no effect when null
        Thread w = waiter;
        if (w != null && w != t) {
            LockSupport.unpark(w);
        }
    }

    @Override
    public void run() {
        Thread self = Thread.currentThread();
        if (verdict == PENDING) {
            waiter = self;
            while (verdict == PENDING) {
                // The starter decides within microseconds of start(). An interrupt (shutdownNow) makes this spin until
                // then and stays set; a worker clears it before its first task.
                LockSupport.park(this);
            }
        }
        // Once: any later run of the gate, on this thread or another, runs nothing.
        if (VERDICT.compareAndSet(this, OPEN, REFUSED)) {
            body.run();
        }
    }

    private static final VarHandle VERDICT;

    static {
        try {
            VERDICT = MethodHandles.lookup().findVarHandle(StartGate.class, "verdict", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
