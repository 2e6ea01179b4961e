package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The executor's housekeeping thread ({@code <name>-checker}). It never runs a task. It does two jobs:
 *
 * <ol>
 *   <li><b>Stuck workers.</b> Every {@code checkPeriod} it looks at each busy worker. One that has started no new task
 *       for {@code blockedThreshold} is stuck (blocked, or just slow); one whose thread is waiting, sleeping or blocked
 *       on a monitor is not using a CPU right now. If work waits in the ready queue while no worker is idle, it starts
 *       enough auxiliary workers to fill the cores that busy workers leave idle, up to {@code maxThreads} (see
 *       {@link #inspect}). Because lanes wait in the shared ready queue
 *       and never in a per-worker queue, a stuck worker holds nothing but its own lane: the new worker takes every
 *       other queued context. While work keeps backing up behind non-running workers, it looks again within a few
 *       milliseconds, so a pool whose tasks block briefly and often grows in a fraction of a second.</li>
 *   <li><b>The timer.</b> It keeps delayed and periodic tasks in a priority queue and, when one is due, submits it
 *       to its lane or the ready queue, like any other task. A periodic task is put back by the worker that ran it.</li>
 * </ol>
 *
 * It parks between jobs, so an idle executor costs one wake-up per check period. It ends once the executor is shut
 * down and its last worker has ended, and that end is the executor's termination.
 */
final class Checker implements Runnable {

    private final Engine engine;
    private final Settings settings;
    private final ReentrantLock lock = new ReentrantLock();
    /** Delayed and periodic tasks not yet due. Guarded by lock. */
    private final PriorityQueue<ScheduledTask<?>> delayed = new PriorityQueue<>();
    private volatile Thread thread;
    /**
     * Set by a submitter that found every worker busy (see {@link #nudge}); cleared by the next inspection. While set,
     * further submitters neither write it nor wake the checker, so a backlog costs the checker at most one wake-up
     * per inspection, and inspections happen at most every {@link #BACKLOG_RECHECK_NANOS}.
     */
    private volatile boolean nudged;
    private volatile long blockedDetections;
    private volatile boolean wakeRequested;

    Checker(Engine engine) {
        this.engine = engine;
        this.settings = engine.settings;
    }

    /** Starts the checker thread, once. */
    void ensureStarted() {
        if (thread != null) {
            return;
        }
        lock.lock();
        try {
            if (thread == null && !engine.isTerminated()) {
                Thread t = new Thread(this, settings.name + "-checker");
                t.setDaemon(true);
                thread = t;
                t.start();
            }
        } finally {
            lock.unlock();
        }
    }

    boolean started() {
        return thread != null;
    }

    /**
     * Makes the checker re-evaluate now (a worker ended, the executor shut down, the timer queue changed). Never blocks:
     * it sets a flag and unparks the thread. The checker clears the flag before it looks at anything and reads it again
     * before it parks, and an unpark that comes first makes the park return at once, so no wake-up is lost.
     */
    void wake() {
        wakeRequested = true;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /**
     * Work was queued and no worker is idle: look at the workers soon rather than at the next period. Costs a
     * submitter one volatile read, and one CAS plus a wake-up the first time after each inspection.
     */
    void nudge() {
        if (!nudged && NUDGED.compareAndSet(this, false, true)) {
            Thread t = thread;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    private static final VarHandle NUDGED;

    static {
        try {
            NUDGED = MethodHandles.lookup().findVarHandle(Checker.class, "nudged", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Override
    public void run() {
        long lastInspection = System.nanoTime();
        long nextInspection = lastInspection + settings.checkPeriodNanos;
        for (;;) {
            wakeRequested = false;
            long now = System.nanoTime();
            long nextDue;
            lock.lock();
            try {
                dispatchDue(now);
                ScheduledTask<?> first = delayed.peek();
                nextDue = first == null ? Long.MAX_VALUE : first.time;
            } finally {
                lock.unlock();
            }
            if (nudged) {
                // A backlog behind busy workers: inspect now, or as soon as the minimum interval allows.
                nextInspection = Math.min(nextInspection, lastInspection + BACKLOG_RECHECK_NANOS);
            }
            if (now - nextInspection >= 0) {
                lastInspection = now;
                nudged = false;
                boolean backingUp;
                try {
                    backingUp = inspect(now);
                } catch (RuntimeException | Error unexpected) {
                    backingUp = false;
                    engine.reportUncaught(unexpected); // keep checking: termination depends on this thread
                }
                long period = backingUp ? Math.min(settings.checkPeriodNanos, BACKLOG_RECHECK_NANOS)
                        : settings.checkPeriodNanos;
                nextInspection = now + period;
            }
            if (engine.readyToTerminate() && engine.terminated()) {
                break;
            }
            long wait = nextInspection - now;
            if (nudged) {
                wait = Math.min(wait, lastInspection + BACKLOG_RECHECK_NANOS - now);
            }
            if (sweepIdleLanes(now)) {
                wait = Math.min(wait, SWEEP_TICK_NANOS);
            }
            if (nextDue != Long.MAX_VALUE) {
                wait = Math.min(wait, nextDue - now);
            }
            if (wait > 0 && !wakeRequested) {
                LockSupport.parkNanos(this, wait);
                Thread.interrupted(); // only a stray interrupt could get here; the loop re-reads everything
            }
        }
    }

    /**
     * Looks at every worker; starts auxiliary workers if work waits, no worker is idle and busy workers are not using
     * the CPUs. Returns whether it started any (work is backing up behind workers that are not running).
     *
     * <p>A busy worker whose thread is RUNNABLE occupies a CPU (running, or descheduled on a saturated machine); one
     * that is blocked, waiting or sleeping does not. The checker starts {@code cores - runnable} threads: enough to
     * fill the cores that blocked workers, or a slow task, leave idle. A CPU-bound backlog that already fills the cores
     * adds none (more threads would only add context switches). Growth is damped to at most one thread per core per
     * look, and while work keeps backing up it looks again within a few milliseconds (submitters that find every
     * worker busy nudge it), so a pool whose tasks block briefly and often grows within tens of milliseconds to about
     * the size its blocking needs, not to one thread per waiting task; once the backlog is gone the extra workers idle
     * and retire. A worker that has started no new task for {@code blockedThreshold} is counted in
     * {@code blockedDetections} either way.
     */
    private boolean inspect(long now) {
        WorkerPool pool = engine.pool;
        int runnable = 0;
        int blocked = 0;
        for (Worker w : pool.workers()) {
            if (!w.isBusy()) {
                w.checkSeen = -1;
                if (w.parkState() != Worker.PARKED) {
                    // Searching, or woken and about to run (its thread may still read WAITING until the OS runs it):
                    // either way it is on its way to the backlog, not a reason for another thread.
                    runnable++;
                }
                continue;
            }
            long seen = w.startedCount();
            boolean stuck = false;
            if (seen != w.checkSeen) {
                w.checkSeen = seen;
                w.checkSince = now;
                w.checkReported = false;
                w.cpuSeen = -1;
            } else if (now - w.checkSince >= settings.blockedThresholdNanos) {
                stuck = true;
                if (!w.checkReported) {
                    w.checkReported = true;
                    blockedDetections = blockedDetections + 1; // only this thread writes it
                }
            }
            if (isOffCpu(w.thread) || (stuck && !usedCpuSinceLastLook(w, now))) {
                blocked++;
            } else {
                runnable++;
            }
        }
        if (engine.readyQueue.isEmpty() || engine.stopping()) {
            return false;
        }
        if (pool.threads() < pool.coreTarget()) {
            pool.tryStart(false); // below the core size (e.g. after a thread factory failure): refill
        }
        if (pool.hasIdleWorker()) {
            pool.signalWork();
            return false;
        }
        int toStart = CORES - runnable;
        int started = 0;
        while (started < toStart && pool.tryStart(true)) {
            started++;
        }
        return started > 0;
    }

    /**
     * Workers release the lanes they left idle themselves, between items and before parking; a worker busy in one long
     * task cannot. So while any worker holds idle lanes, the checker looks every {@link #SWEEP_TICK_NANOS} and releases
     * those past the grace, which bounds how long an emptied lane stays mapped. Returns whether any worker holds some.
     */
    private boolean sweepIdleLanes(long now) {
        boolean any = false;
        for (Worker w : engine.pool.workers()) {
            if (w.idleCount() == 0 || w.sweptCleanAt == w.startedCount()) {
                continue; // nothing held, or nothing new since a sweep that left nothing to wait for
            }
            any = true;
            if (now - w.lastSweptByChecker >= SWEEP_TICK_NANOS) {
                w.lastSweptByChecker = now;
                if (!releaseIdleLanesOf(w, now)) {
                    w.sweptCleanAt = w.startedCount();
                }
            }
        }
        return any;
    }

    private static final long SWEEP_TICK_NANOS = 2_000_000L;
    /** How soon the checker looks again after it had to start workers for a backlog. */
    private static final long BACKLOG_RECHECK_NANOS = 5_000_000L;

    /**
     * Racy read of the live part of a worker's idle ring: safe because each lane's own CAS decides (see
     * Worker#idleRing). Returns whether some idle lane there is still within its grace (worth another look).
     */
    private static boolean releaseIdleLanesOf(Worker w, long now) {
        boolean young = false;
        int start = w.idleStart();
        int count = Math.min(w.idleCount(), Worker.IDLE_RING);
        for (int i = 0; i < count; i++) {
            Lane lane = w.idleLane(start + i);
            if (lane != null && lane.isIdle()) {
                if (now - lane.idleSince >= Worker.IDLE_GRACE_NANOS) {
                    lane.release();
                } else {
                    young = true;
                }
            }
        }
        return young;
    }

    private static final int CORES = Runtime.getRuntime().availableProcessors();

    /**
     * A thread blocked in socket or native I/O reports RUNNABLE. A worker stuck in one task counts as blocked only if
     * its thread is in native code and used less than a tenth of the time since the last look on a CPU. Being in
     * native code tells a thread waiting on I/O from one merely descheduled by a saturated machine (that one runs Java
     * code and must not make the pool grow); the CPU time tells it from native code that computes. Looked at only for
     * stuck workers, so the cost stays off the common path.
     */
    private boolean usedCpuSinceLastLook(Worker w, long now) {
        long id = w.thread.getId();
        ThreadInfo info = THREADS.getThreadInfo(id);
        if (info == null || !info.isInNative()) {
            return true; // running (or descheduled) Java code: it occupies a CPU as far as the pool is concerned
        }
        if (!CPU_TIME) {
            return false; // no per-thread CPU clock: a stuck worker in native code counts as blocked
        }
        long cpu = THREADS.getThreadCpuTime(id);
        long previous = w.cpuSeen;
        long previousAt = w.cpuSeenAt;
        w.cpuSeen = cpu;
        w.cpuSeenAt = now;
        if (cpu < 0 || previous < 0) {
            return true; // first look at this stuck task (or thread gone): decide next time
        }
        return (cpu - previous) * 10 >= now - previousAt;
    }

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final boolean CPU_TIME = cpuTimeAvailable();

    private static boolean cpuTimeAvailable() {
        try {
            return THREADS.isThreadCpuTimeSupported() && THREADS.isThreadCpuTimeEnabled();
        } catch (UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    private static boolean isOffCpu(Thread t) {
        Thread.State s = t.getState();
        return s == Thread.State.BLOCKED || s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
    }

    long blockedDetections() {
        return blockedDetections;
    }

    // ---- timer ----------------------------------------------------------------------------------------------

    /** Adds a delayed task; rejected (returns false) once the executor is shut down. */
    boolean schedule(ScheduledTask<?> task) {
        boolean first;
        lock.lock();
        try {
            if (engine.state() != Engine.RUNNING) {
                return false;
            }
            delayed.add(task);
            first = delayed.peek() == task;
        } finally {
            lock.unlock();
        }
        ensureStarted();
        if (first) {
            wake(); // the checker may be parked until a later due time
        }
        return true;
    }

    void remove(ScheduledTask<?> task) {
        lock.lock();
        try {
            delayed.remove(task);
        } finally {
            lock.unlock();
        }
    }

    /** Due tasks go to their lane or the ready queue. Runs under lock, so quiescence never misses one in flight. */
    private void dispatchDue(long now) {
        ScheduledTask<?> t;
        // STOP is re-read per task: shutdownNow drains this queue under the same lock, so a task is either dispatched
        // before it starts draining or returned by it, never both.
        while (!engine.stopping() && (t = delayed.peek()) != null && t.time - now <= 0) {
            delayed.poll();
            if (!t.isDone()) {
                try {
                    engine.dispatch(t, true);
                } catch (RuntimeException unexpected) {
                    // Cannot happen by the quiescence argument (lanes are closed only once no delayed task is left);
                    // if it ever did, the task's caller learns it through the future, and this thread lives on.
                    t.failDispatch(unexpected);
                }
            }
        }
    }

    /** Shutdown: periodic tasks stop (cancelled and dropped); delayed one-shot tasks stay and run when due. */
    void cancelPeriodic() {
        List<ScheduledTask<?>> periodic = new ArrayList<>();
        lock.lock();
        try {
            for (Iterator<ScheduledTask<?>> it = delayed.iterator(); it.hasNext(); ) {
                ScheduledTask<?> t = it.next();
                if (t.isPeriodic() || t.isDone()) {
                    it.remove();
                    periodic.add(t);
                }
            }
        } finally {
            lock.unlock();
        }
        wake();
        for (ScheduledTask<?> t : periodic) {
            t.cancel(false);
        }
    }

    /** shutdownNow: every delayed task, unstarted, for the caller. */
    List<ScheduledTask<?>> drain() {
        lock.lock();
        try {
            List<ScheduledTask<?>> all = new ArrayList<>(delayed);
            delayed.clear();
            return all;
        } finally {
            lock.unlock();
            wake();
        }
    }

    /** True if no delayed task waits; a dispatch in flight holds the lock, so it is either seen here or finished. */
    boolean noDelayedWork() {
        lock.lock();
        try {
            return delayed.isEmpty();
        } finally {
            lock.unlock();
        }
    }
}
