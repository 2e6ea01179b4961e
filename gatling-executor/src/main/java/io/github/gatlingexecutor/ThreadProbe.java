package io.github.gatlingexecutor;

import java.util.function.LongPredicate;

/**
 * What the checker reads of a worker's thread beyond {@link Thread#getState()}: its CPU time, who holds the lock it
 * waits for, whether it runs native code. Those come from {@code java.management}, which the module requires but a
 * class-path runtime may lack (a runtime linked with {@code java.base} alone, or {@code --limit-modules java.base}):
 * there a class that names it fails to link, and if the checker were that class no executor could be built. This class
 * names nothing of {@code java.management}; {@link ManagementThreadProbe} does, and is used only if it links and
 * initializes. Without it the checker works from the thread state alone: a stuck task counts as stuck (never as merely
 * descheduled), and every ownerless-looking wait as a block, so brief lock hand-offs between workers may start an
 * auxiliary worker.
 */
class ThreadProbe {

    /** The probe for this runtime: {@link ManagementThreadProbe} where {@code java.management} is present. */
    static final ThreadProbe INSTANCE = choose();

    private static ThreadProbe choose() {
        try {
            return new ManagementThreadProbe();
        } catch (LinkageError e) {
            // NoClassDefFoundError for java.lang.management, or its initializer failing: fall back, never fail the
            // executor for a diagnostic it can do without.
            return new ThreadProbe();
        }
    }

    ThreadProbe() {
    }

    /** The thread's CPU time in nanoseconds, or -1 if this runtime cannot tell. */
    long cpuTime(Thread t) {
        return -1;
    }

    /**
     * Whether the thread, seen off the CPU, waits for something the pool cannot serve itself (see
     * {@code Checker#blockedOnItsOwn}); {@code poolThread} says whether a thread id is another worker of the pool.
     * Here, from the state alone: a monitor wait ({@code BLOCKED}) ends when its holder leaves the monitor, so it is
     * not counted; any park or sleep is.
     */
    boolean blockedOnItsOwn(Thread t, LongPredicate poolThread) {
        Thread.State state = t.getState();
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    }

    /**
     * Whether the thread is alive and runs Java code, not native code (where a thread in socket I/O reports
     * {@code RUNNABLE}); false if unknown.
     */
    boolean inJavaCode(Thread t) {
        return false;
    }
}
