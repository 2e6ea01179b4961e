package io.github.gatlingexecutor;

import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongPredicate;

/**
 * {@link ThreadProbe} through the platform's {@link ThreadMXBean}: the only class of the core that names
 * {@code java.management}, so a runtime without it fails here, where {@link ThreadProbe#INSTANCE} catches it.
 */
final class ManagementThreadProbe extends ThreadProbe {

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final boolean cpuTime = cpuTimeAvailable(threads);

    private static boolean cpuTimeAvailable(ThreadMXBean threads) {
        try {
            return threads.isThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled();
        } catch (UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    @Override
    long cpuTime(Thread t) {
        if (!cpuTime) {
            return -1;
        }
        try {
            return threads.getThreadCpuTime(t.getId());
        } catch (UnsupportedOperationException e) {
            return -1;
        }
    }

    /**
     * Not blocked: running, or waiting for a lock that another worker of this pool holds (a monitor, or an ownable
     * synchronizer such as {@code ReentrantLock}), or waiting for a monitor or a JDK lock that nobody holds (just
     * released: its turn comes when it is scheduled). The state and the lock come from one snapshot of the thread: a
     * state read first and a lock read after it once met a thread that had just acquired its lock, and counted it
     * blocked.
     */
    @Override
    boolean blockedOnItsOwn(Thread t, LongPredicate poolThread) {
        ThreadInfo info = threads.getThreadInfo(t.getId());
        if (info == null) {
            // The thread has ended, or it is a virtual thread (JDK 21+, a virtual-thread factory), for which the bean
            // gives no info at all. Taken as ended, a virtual worker waiting in a sleep, a latch or I/O counted as
            // running, and the pool did not grow for the work queued behind it until the task was stuck. Judged from
            // its state and the object it parks on, read apart: the owner of a lock it waits for cannot be read, so
            // a park on a JDK lock is taken as a hand-off, as one whose owner is another worker or nobody is below.
            return blockedWithoutInfo(t);
        }
        Thread.State state = info.getThreadState();
        if (state != Thread.State.BLOCKED && state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
            return false;
        }
        long owner = info.getLockOwnerId();
        if (owner == -1) {
            // Waiting to enter a monitor, or parked on a JDK lock, that nobody holds: just released, the thread's turn
            // comes when it is scheduled (a ReentrantLock clears its owner, then unparks the next waiter, which stays
            // WAITING until it runs: on a saturated machine that window is milliseconds, and counting it as a block
            // grew a CPU-bound pool past its cores). Any other ownerless wait (a latch, a condition, a future) is one.
            return state != Thread.State.BLOCKED && !isJdkLock(info.getLockInfo());
        }
        return !poolThread.test(owner);
    }

    /**
     * {@link #blockedOnItsOwn} for a thread the bean gives no info for; false for one that has ended. The object it
     * parks on is read before and after its state: a park sets it before the thread waits and clears it after, so a
     * wait on a lock seen in the state shows in one of the two reads unless that whole park fell between them. Read
     * after the state alone, a waiter handed the lock between the two reads would read as parked on nothing, a block.
     */
    private static boolean blockedWithoutInfo(Thread t) {
        Object before = LockSupport.getBlocker(t);
        Thread.State state = t.getState();
        if (state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
            return false; // running, entering a monitor (ends when its holder leaves it), or ended
        }
        return !parksOnJdkLock(before) && !parksOnJdkLock(LockSupport.getBlocker(t));
    }

    /**
     * Whether a parked thread's blocker is the synchronizer of a {@code ReentrantLock} or
     * {@code ReentrantReadWriteLock} (their {@code Sync} classes, which are what such a lock parks on; a
     * {@code Condition} parks on its own object). By class name: the snapshot gives no object, and the name comes from
     * the same moment as the state.
     */
    private static boolean isJdkLock(LockInfo lock) {
        return lock != null && isJdkLock(lock.getClassName());
    }

    private static boolean parksOnJdkLock(Object blocker) {
        return blocker != null && isJdkLock(blocker.getClass().getName());
    }

    private static boolean isJdkLock(String name) {
        return name.startsWith("java.util.concurrent.locks.ReentrantLock$")
                || name.startsWith("java.util.concurrent.locks.ReentrantReadWriteLock$");
    }

    @Override
    boolean inJavaCode(Thread t) {
        ThreadInfo info = threads.getThreadInfo(t.getId());
        return info != null && !info.isInNative();
    }
}
