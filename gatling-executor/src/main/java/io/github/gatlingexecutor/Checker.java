package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The executor's housekeeping thread ({@code <name>-checker}, or made by the configured {@code ThreadFactory}). It
 * never runs a task. It does five jobs:
 *
 * <ol>
 *   <li><b>Stuck workers.</b> Every {@code checkPeriod} it looks at each busy worker. One that has run one task for
 *       {@code blockedThreshold} is stuck, whatever it is doing: waiting, in I/O, or computing; one whose thread is
 *       waiting, sleeping or blocked on a monitor is not using a CPU right now. It reports what it saw to
 *       {@link PoolPolicy}, which starts auxiliary workers for the workers that are stuck or off the CPU when work
 *       waits in the ready queue and no worker is idle, up to {@code maxThreads} (see {@link #inspect}). Because
 *       lanes wait in the shared ready queue and never in a per-worker queue, a stuck worker holds nothing but its own
 *       lane: the new worker takes every other queued context. While work keeps backing up behind such workers, it
 *       looks again within a few milliseconds, so a pool whose tasks block briefly and often grows in a fraction of a
 *       second.</li>
 *   <li><b>The timer.</b> It dispatches due delayed and periodic tasks ({@link TaskTimer}); the workers do while its
 *       thread cannot be started ({@link #absent}), and time their parks by it while its thread does not run its
 *       rounds ({@link #unattended}).</li>
 *   <li><b>Idle lanes of busy workers.</b> It releases the lanes that a worker busy in a long task left idle
 *       ({@link #sweepIdleLanes}).</li>
 *   <li><b>Lanes sent round empty.</b> It releases the emptied lanes that went round the ready queue once more when
 *       no worker will come round to them soon ({@link #releaseStrandedRounds}).</li>
 *   <li><b>The coarse clock.</b> While any worker is awake and tasks flow it refreshes {@link Engine#stamp}'s clock
 *       at least every {@link #CLOCK_TICK_NANOS}, so that tasks are stamped within a few milliseconds of their arrival
 *       even while every worker is in a long task. When nothing was submitted or started for a few ticks it marks
 *       the clock stale instead and sleeps on ({@link #stalled}).</li>
 * </ol>
 *
 * It parks between jobs, so an idle executor costs one wake-up per check period. It ends once the executor is shut
 * down and its last worker has ended, and that end is the executor's termination. If its thread cannot be started,
 * nothing is registered: the start is tried again by the next thread start or schedule call, and with a backoff by
 * those who miss the checker ({@link #retryIfAbsent}); the workers drive the timer meanwhile ({@link #absent}), and
 * termination is then claimed by whoever sees the last worker end
 * ({@link Engine#wakeForTermination}). What only this thread does (auxiliary starts, stuck workers, the idle lanes of
 * a busy worker) waits for it.
 */
final class Checker implements Runnable {

    private final Engine engine;
    private final Settings settings;
    /** Guards the start of the thread, so that it is started at most once at a time. */
    private final ReentrantLock startLock = new ReentrantLock();
    /** The first wait between failed starts of the thread (see {@link #retryIfAbsent}). */
    static final long RETRY_BACKOFF_NANOS = 10_000L;
    /** The started thread; null until a start has succeeded, and again once it has ended the executor (see run). */
    private volatile Thread thread;
    /**
     * Set by a failed start of the thread, and while a published thread from the factory, seen ended without running
     * this checker, is in its grace ({@link #reclaimIfNeverRan}); cleared by a start that succeeds, or by
     * {@link #run} on a thread the factory ran late. Written under {@code startLock} but for that last clear.
     * Not the same as "no thread yet": until a start has been tried (a worker runs before its starter tries the
     * checker), the checker is still coming, and the timer stays its own. See {@link #absent}.
     */
    private volatile boolean absent;
    /** Failed starts since the last one that succeeded; written under {@code startLock}. */
    private int failedStarts;
    /**
     * True while this thread runs its rounds: from the first line of {@link #run} until the executor has terminated.
     * Not the same as published: a thread is published before its start, which may still fail (see
     * {@link #ensureStarted}).
     */
    private volatile boolean running;
    /**
     * The gate the configured factory was given for the published thread (null for a thread of the executor's own
     * making); written and read under {@code startLock} (see {@link #reclaimIfNeverRan}).
     */
    private StartGate gate;
    /** When {@link #retryIfAbsent} may try the start again; written under {@code startLock}, read racily before it. */
    private volatile long retryAt;
    /**
     * Set by a submitter that found every worker busy (see {@link #nudge}); cleared by the next inspection. While set,
     * further submitters neither write it nor wake the checker, so a backlog costs the checker at most one wake-up
     * per inspection, and inspections happen at most every {@link #BACKLOG_RECHECK_NANOS}.
     */
    private volatile boolean nudged;
    private volatile long blockedDetections;
    private volatile boolean wakeRequested;
    /**
     * Set while the checker sleeps longer than a clock tick because every worker was parked. A worker that woke and
     * goes on past its first item (see Worker#run) has written its park state, then reads this; the checker writes
     * this, then reads every park state once more: one of them sees the other, so a worker that stays at work never
     * leaves the clock unrefreshed for a whole check period. During that first item the clock is stale, or set once
     * by the first submit that needed it.
     */
    private volatile boolean dozing;
    /**
     * Set while the checker sleeps past a clock tick with workers awake but nothing flowing: no task submitted or
     * started for a few ticks (a task that sleeps, with nothing queued behind). Ticking every few milliseconds
     * then refreshed a clock nobody read, at a few percent of a core. It marks the clock stale first, so the next
     * submitter reads the time itself; whoever sets the clock again (that submitter, or a worker's tick) does so with
     * a CAS from stale and then reads this flag, and the checker writes this flag and then reads the clock once more:
     * one of them sees the other, so ticking resumes with the flow (see {@link #clockRestarted}).
     */
    private volatile boolean stalled;
    /** Tasks submitted plus tasks started, as of the last tick: what moved since shows whether work flows. */
    private long flowMark = -1;
    /** Ticks in a row that found nothing flowing; the clock stalls after {@link #QUIET_TICKS_TO_STALL}. */
    private int quietTicks;

    Checker(Engine engine) {
        this.engine = engine;
        this.settings = engine.settings;
    }

    /** Whether the calling thread is this checker's: it runs user code too, the thread factory's. */
    boolean isCurrentThread() {
        return thread == Thread.currentThread();
    }

    /**
     * Starts the checker thread unless it runs already. Never throws: returns null when the thread runs (or is no
     * longer needed, after termination), or what made the start fail (the thread factory threw or gave null, or
     * {@code Thread.start} failed, e.g. for want of native threads). A failed start leaves nothing behind, so the next
     * call tries again.
     */
    Throwable ensureStarted() {
        if (thread != null) {
            reclaimIfNeverRan();
            if (thread != null) {
                return null;
            }
        }
        startLock.lock();
        try {
            if (thread != null || engine.isTerminated()) {
                return null;
            }
            Thread t;
            StartGate gate = null;
            ThreadFactory factory = settings.threadFactory;
            try {
                if (factory == null) {
                    t = settings.newOwnThread(this, settings.name + "-checker", true);
                } else {
                    // A thread the factory started itself is refused and runs nothing of ours: see StartGate. (Each
                    // such start would otherwise leave one more checker running, never stopped.)
                    gate = new StartGate(this);
                    t = gate.newThread(factory, "the checker", engine.inThreadFactory);
                }
            } catch (Throwable failure) {
                return startFailed(failure);
            }
            // Published before it starts, under the lock termination is claimed under: a worker or caller that finds a
            // checker published leaves termination to it (WorkerPool#terminateIfNoThreads), and one that claimed it
            // first makes this start give up. Published only after start(), the thread could begin after a worker had
            // ended the executor without it, and awaitTermination returned with the checker alive. Until the thread
            // runs, wake() unparks nothing, but its flag is read by the first pass of run().
            // A checker published while the factory ran is given up for in the same way: the lock is re-entrant, and a
            // factory that submits to this executor can start a worker, and with it a checker, inside this very call;
            // a second checker published over it ran its rounds beside it, and the one left unpublished was not waited
            // for by termination.
            synchronized (engine.pool) {
                if (engine.isTerminated() || thread != null) {
                    if (gate != null) {
                        gate.abandon();
                    }
                    return null;
                }
                thread = t;
                this.gate = gate;
                absent = false;
            }
            try {
                if (gate == null) {
                    t.start();
                } else {
                    gate.start(t, "the checker");
                }
            } catch (Throwable failure) {
                thread = null;
                recheckOwed = true; // whoever found this thread published left termination to it
                return startFailed(failure);
            }
            // Only once it has started: reset at the publication, a start that then failed (a thread the factory had
            // started itself, or Thread.start failing) counted as the first of its run, and the backoff never grew
            // past its first 10 us; each parked submitter tries every tick while the checker is not running.
            failedStarts = 0;
            engine.tickAfterStart();
            return null;
        } finally {
            unlockStart();
        }
    }

    /**
     * Takes back, as a failed start, a published thread from a configured factory that ended without running this
     * checker (see {@link StartGate#reclaimIfNeverRan}). Published, it was left termination (which it never claimed,
     * so {@code close()} waited for good), and every delayed task and stuck worker waited for it too. Called where the
     * checker is relied on, off every task's path: at each {@link #ensureStarted} (a worker's start, a
     * {@code schedule}), by a submit that finds every worker busy once the thread has ended ({@link #nudge}), by the
     * workers every few dozen items and when a due task ends a park they timed by the timer, by callers waiting on the
     * executor ({@link Engine#askingWait}: they ask again every check period while the thread has not begun, see
     * {@link Engine#startsFailed}), by a thread that finds no worker left after shutdown ({@link Engine#threadsChanged}),
     * and by {@code isTerminated()} after shutdown. A call within the grace after the start (see
     * {@link StartGate#reclaimIfNeverRan}) that finds the thread ended leaves the timer to the workers until the grace
     * ends; a call after it reclaims. Never waits for a start another thread is making.
     */
    void reclaimIfNeverRan() {
        Thread t = thread;
        if (t == null || running || !startLock.tryLock()) {
            return;
        }
        try {
            StartGate g = gate;
            if (thread != t || running || g == null) {
                return;
            }
            long now = System.nanoTime();
            if (g.reclaimIfNeverRan(t, now)) {
                thread = null;
                gate = null;
                recheckOwed = true; // whoever found this thread published left termination to it
                startFailed(new IllegalStateException("the thread factory's thread ended without running the checker"));
                retryAt = now; // the grace was its backoff: whoever misses the checker starts it again at once
                engine.pool.countStartFailure();
            } else if (!absent && t.getState() == Thread.State.TERMINATED) {
                // Ended, within the grace: for up to a second more nobody drove the timer, and a delayed task whose
                // caller did not wait on it never ran, since nothing looked again after the grace. The workers drive
                // it meanwhile, as after a failed start, and try the start again once the grace is over (which takes
                // this thread back first). The flag is written, then idle workers are woken (see #absent).
                retryAt = g.graceEndsAt();
                absent = true;
                engine.pool.wakeIdle();
                if (running) {
                    // The factory's own thread ran us after all, late: run() read the flag before this wrote it, or
                    // clears it itself (each side writes its flag, then reads the other's).
                    absent = false;
                }
            }
        } finally {
            unlockStart();
        }
    }

    /**
     * Set under {@code startLock} by a start that failed after its thread was published: termination, left to that
     * thread, is to be checked again ({@link Engine#threadsChanged}), once the lock is released.
     */
    private boolean recheckOwed;

    /**
     * Releases {@code startLock}; the outermost release makes the check of termination a failed start owes. Not under
     * the lock: the check reads the timer under its lock, and a dispatch holds the timer's lock while it starts a
     * worker, and with it this thread (WorkerPool#tryStart). Made under the lock, the two waited for each other: a
     * {@code schedule(task, 0)} dispatching as {@code shutdown()} came, beside a start of this thread that failed.
     */
    private void unlockStart() {
        boolean recheck = startLock.getHoldCount() == 1 && recheckOwed;
        if (recheck) {
            recheckOwed = false;
        }
        startLock.unlock();
        if (recheck) {
            engine.threadsChanged();
        }
    }

    /**
     * A start failed (under {@code startLock}): the workers drive the timer from now on. A worker that found the
     * checker not absent (not tried yet, or published for a moment) left the timer to it and may have parked without a
     * timeout, with a task waiting: the flag is written, then idle workers are read (see {@link #absent}).
     */
    private Throwable startFailed(Throwable failure) {
        failedStarts++;
        nudged = false; // the next submit behind busy workers tries again at once (see nudge)
        retryAt = System.nanoTime()
                + Math.min(settings.checkPeriodNanos, RETRY_BACKOFF_NANOS << Math.min(failedStarts - 1, 30));
        absent = true;
        engine.pool.wakeIdle();
        return failure;
    }


    /**
     * Tries the start again while the last one failed ({@link #absent}), once its backoff has passed: starts that keep
     * failing are tried {@link #RETRY_BACKOFF_NANOS} apart at first, twice as far apart after each failure, and at most
     * a check period apart. Called where the checker is missed: by a submitter that found every worker busy
     * ({@link #nudge}), by workers between items, and by callers waiting on this executor (futures, termination).
     * Without it only a worker start or a {@code schedule} call tried again, and once every core worker was up and
     * stuck in a task, nothing did: the contexts queued behind them waited for good. Never waits for a start another
     * thread is making.
     */
    void retryIfAbsent() {
        retry(false);
    }

    /** As {@link #retryIfAbsent}; {@code now}: without waiting for the backoff (see {@link #nudge}). */
    private void retry(boolean now) {
        if (absent && (now || System.nanoTime() - retryAt >= 0) && startLock.tryLock()) {
            try {
                if (absent && (now || System.nanoTime() - retryAt >= 0) && ensureStarted() != null) {
                    engine.pool.countStartFailure();
                }
            } finally {
                unlockStart();
            }
        }
    }

    /**
     * Makes the checker re-evaluate now (a worker ended, the executor shut down, the timer queue changed). Never
     * blocks: it sets a flag and unparks the thread. Returns false if there is no checker thread to wake. The checker
     * clears the flag before it looks at anything and reads it again before it parks, and an unpark that comes first
     * makes the park return at once, so no wake-up is lost.
     */
    boolean wake() {
        wakeRequested = true;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            return true;
        }
        return false;
    }

    /**
     * Nothing flows: marks the clock stale and {@link #stalled}, and returns whether the checker may sleep past the
     * next tick (false if someone restarted the clock meanwhile). The flag is written with a volatile store and the
     * clock then read with a volatile load; whoever restarts the clock does the opposite (see
     * {@link Engine#restartClock}).
     */
    boolean stallClock() {
        engine.markClockStaleOpaque();
        stalled = true;
        if (!engine.isClockStale()) {
            stalled = false;
            return false;
        }
        return true;
    }

    /**
     * Someone set the stale clock (a submitter stamping a task, or a worker's tick; a CAS, so a full fence before this
     * read): if the checker sleeps for want of flow, or, for a submitter, dozes while a worker is awake, ticking
     * resumes.
     */
    void clockRestarted(boolean submitter) {
        if (stalled) {
            stalled = false;
            unparkThread();
        } else if (submitter && dozing && anyWorkerAwake()) {
            // A worker woken from its park went into a long first item and left telling us for later (Worker#run);
            // the value just set would stay until our next round, a check period away, and every task appended
            // meanwhile read older than it was (by up to that period). At low load the submit that restarts the
            // clock finds every worker parked and pays nothing here: it is a second submit during one item that does.
            // Not for a worker's tick: a worker restarts the clock in its sweep just before it parks, and woke us
            // once a cycle at low load (thousands of wake-ups a second at 5,000 tasks a second, against a dozen).
            // A checker about to doze writes dozing and then reads the park states again (see dozing): read false
            // here, it sees that worker awake and does not doze.
            dozing = false;
            unparkThread();
        }
    }

    /** Whether the checker sleeps for want of flow and nobody has woken it (for tests of the hand-shake). */
    boolean isStalled() {
        return stalled;
    }

    /** Whether the checker sleeps past a clock tick because every worker was parked (for tests). */
    boolean isDozing() {
        return dozing;
    }

    /**
     * Whether anything was submitted or started in the last few ticks (and so whether someone stamps tasks). A few,
     * not one: each stall costs the submitter that ends it a wake-up of this thread, and a trickle of tasks a few
     * milliseconds apart would pay it per task.
     */
    private boolean flowing() {
        long mark = engine.submittedCount() + engine.pool.startedTasks();
        if (mark != flowMark) {
            flowMark = mark;
            quietTicks = 0;
            return true;
        }
        return ++quietTicks < QUIET_TICKS_TO_STALL;
    }

    /**
     * A worker came back from parking and went on past its first item (see Worker#run): if the checker dozes, it wakes
     * to keep the coarse clock fresh.
     */
    void workerResumed() {
        if (dozing) {
            dozing = false;
            unparkThread();
        }
    }

    /**
     * Whether the last start of the thread failed and none has succeeded. Meanwhile nothing dispatches due scheduled
     * tasks but the workers: each looks at the timer between items and times its parks by the next due task
     * ({@link TaskTimer#unattendedWait}), as the workers of {@code ScheduledThreadPoolExecutor} take delayed tasks from
     * its queue. A task that becomes the timer's first while no checker runs its rounds wakes an idle worker
     * ({@code TaskTimer#schedule}, {@link #unattended}), and so does every failed start, after it sets the flag
     * ({@link #startFailed}); a worker registers as parked, then reads this and the timer: one of them sees the other,
     * so no worker parks untimed past a due task it should have dispatched.
     */
    boolean absent() {
        return absent;
    }

    /**
     * Whether a worker about to park should time its park by the timer's first task: the checker is {@link #absent},
     * or its thread is not running its rounds. A published thread from the factory that ended without running this
     * checker (or will end so: one that lives a while first) is only found by a look ({@link #reclaimIfNeverRan}); the
     * worker that wakes for the due task makes that look, and dispatches the task itself. Before the checker's first
     * round this costs a worker at most a timed park. Not read on a task's path.
     */
    boolean unattended() {
        return absent || !running;
    }

    /** Whether a checker thread is published (running, or about to start: see {@link #ensureStarted}). */
    boolean published() {
        return thread != null;
    }

    /** Whether this thread runs its rounds now (see {@link #running}). */
    boolean running() {
        return running;
    }

    private void unparkThread() {
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private boolean anyWorkerAwake() {
        if (engine.admission != null && engine.admission.waitingSubmitters() > 0) {
            return true; // parked submitters: keep ticking, the tick is their backstop (Admission#poll)
        }
        for (Worker w : engine.pool.workers()) {
            int s = w.parkState();
            if (s != Worker.PARKED && s != Worker.RETIRED) {
                return true;
            }
        }
        return false;
    }

    /**
     * Work was queued and no worker is idle: look at the workers soon rather than at the next period. Costs a
     * submitter two volatile reads, and one CAS plus a wake-up the first time after each inspection.
     */
    void nudge() {
        Thread published = thread;
        if (!running && published != null && published.getState() == Thread.State.TERMINATED) {
            // A published thread that ended without running this checker never looks, and while tasks flow nothing
            // else looks at it: the work queued behind a stuck worker waited for good. (A thread still alive costs
            // the read of its state only: the lock is taken once it has ended.)
            reclaimIfNeverRan();
        }
        // The look this asks for needs a thread to look (one read while the checker is present). The first nudge since
        // the last look or the last failed start tries at once: every worker is busy, and once the backoff is over
        // nobody may come back to try the start again (a worker stuck, one submit behind it). A start that fails
        // clears the flag, and the CAS below sets it again: one try per failure.
        retry(!nudged);
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
        // A configured factory may run this on another thread than the one it returned (see StartGate): wake() must
        // reach the thread that runs. A wake before this write set the flag the first round reads.
        thread = Thread.currentThread();
        running = true;
        if (absent) {
            // Run late by the factory's own thread, after a look that found the thread it returned ended had left the
            // timer to the workers (see reclaimIfNeverRan). Not under startLock: a factory may wait for its thread to
            // begin while its caller holds that lock.
            absent = false;
        }
        lastInspection = System.nanoTime();
        nextInspection = lastInspection + settings.checkPeriodNanos;
        for (;;) {
            try {
                if (round()) {
                    // Terminated: nothing reads the field again but to find no thread to wake, and a terminated
                    // executor still referenced kept this ended thread, and the context class loader it inherited
                    // from the submitter that started it.
                    thread = null;
                    running = false;
                    return;
                }
            } catch (Throwable unexpected) {
                // Outside any task: the engine failing around the checker's jobs (an OutOfMemoryError in the timer's
                // dispatch or a sweep, say). This thread must go on: only it terminates the executor while it is
                // published, and the timer, the auxiliary starts and the stuck workers wait for it. Parked for a
                // tick, so a failure that repeats every round does not spin.
                engine.reportUncaught(unexpected);
                LockSupport.parkNanos(this, CLOCK_TICK_NANOS);
                Thread.interrupted();
            }
        }
    }

    /** When the checker last inspected the workers, and when it inspects them next; the checker's thread only. */
    private long lastInspection;
    /** The inspection before {@link #lastInspection}: a task first seen at an inspection started after this one. */
    private long previousInspection;
    private long nextInspection;
    /**
     * Inspections made so far: written by the checker's thread only, read by tests that must know the checker has
     * looked again before they judge what it did not do. Volatile: once per inspection, off every task's path.
     */
    private volatile long inspections;

    long inspections() {
        return inspections;
    }

    /** One round of {@link #run}: the jobs, then the sleep until the next. True once the executor has terminated. */
    private boolean round() {
        wakeRequested = false;
        long now = System.nanoTime();
        engine.tick(now);
        if (engine.admission != null) {
            engine.admission.poll();
        }
        long nextDue = engine.timer.dispatchDue(now);
        Jfr.poll();
        boolean backlog = backlogCanGrow(); // read once a tick: it bounds both the next look and the sleep
        if (nudged || backlog) {
            // A backlog behind busy workers: inspect now, or as soon as the minimum interval allows.
            long soon = lastInspection + BACKLOG_RECHECK_NANOS;
            if (soon - nextInspection < 0) { // by difference: nanoTime readings may wrap
                nextInspection = soon;
            }
        }
        releaseStrandedRounds(now, false);
        if (now - nextInspection >= 0) {
            previousInspection = lastInspection;
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
            inspections = inspections + 1; // one writer: no lost update
        }
        if (engine.readyToTerminate() && engine.submitsSettled()) {
            engine.threadExiting(); // before the claim: awaitTermination then waits for this thread to end
            if (engine.terminated(true)) {
                return true;
            }
        }
        long wait = nextInspection - now;
        if (nudged || backlog) {
            // A look that started nothing set the next one a period away; while work waits, the sleep below is
            // shorter, or a checker that stalls for want of flow (every worker blocked in a long task) would not
            // be back at the top of the loop to see the backlog.
            wait = Math.min(wait, lastInspection + BACKLOG_RECHECK_NANOS - now);
        }
        if (sweepIdleLanes(now)) {
            wait = Math.min(wait, SWEEP_TICK_NANOS);
        }
        if (nextDue != Long.MAX_VALUE) {
            wait = Math.min(wait, nextDue - now);
        }
        boolean stalling = false;
        if (wait > CLOCK_TICK_NANOS) {
            if (anyWorkerAwake()) {
                boolean submittersWait = engine.admission != null && engine.admission.waitingSubmitters() > 0;
                if (flowing() || submittersWait) {
                    wait = CLOCK_TICK_NANOS;
                } else if (stallClock()) {
                    stalling = true;
                } else {
                    wait = CLOCK_TICK_NANOS;
                }
            } else {
                dozing = true;
                if (anyWorkerAwake()) { // see dozing: written, then the park states read again
                    dozing = false;
                    wait = CLOCK_TICK_NANOS;
                } else {
                    // This round's tick set the clock (a parked worker had left it stale); nobody refreshes it while
                    // we doze, and a task stamped with it would read up to a period older than it is. Stale again,
                    // the next submitter reads the clock itself. A worker that woke since our look finds it stale
                    // at its next tick, or its submitter already restarted it: at most one clock read too many.
                    engine.markClockStaleOpaque();
                }
            }
        }
        if (wait > 0 && !wakeRequested) {
            LockSupport.parkNanos(this, wait);
            Thread.interrupted(); // only a stray interrupt could get here; the loop re-reads everything
        }
        if (stalling && !stalled) {
            // A restart of the clock woke us: work flows again, though its submitter may not have counted its
            // task yet. Counted as flow, so the next tick does not stall again at once.
            quietTicks = 0;
        }
        dozing = false;
        stalled = false;
        return false;
    }

    /**
     * Whether work waits in the ready queue while the pool may still grow: the checker then looks again within
     * {@link #BACKLOG_RECHECK_NANOS}, as after a nudge. Not only after a nudge: once the submits have stopped, work
     * still queued behind workers that block in their tasks has nobody left to nudge, and waited a whole check period
     * (250 ms by default) for the pool to grow (docs/hand-off-experiments.md, thirty-eighth set). At {@code maxThreads}
     * a look can start nothing, and the regular period is enough for counting stuck workers.
     */
    private boolean backlogCanGrow() {
        return engine.pool.threads() < settings.maxThreads && !engine.readyQueue.isEmpty();
    }

    /**
     * Looks at every worker and hands what it saw to {@link PoolPolicy#inspected}, which decides whether to start
     * workers (rules 2 and 3 there). Returns whether it started any (work is backing up behind blocked workers).
     *
     * <p>A busy worker counts as <em>running</em> unless one of these holds: its thread is blocked, waiting or sleeping
     * in its task for a reason the pool cannot serve itself (it leaves its CPU idle; see {@link #blockedOnItsOwn}); or
     * it is <em>stuck</em>, having run one task for {@code blockedThreshold} (SPEC point 7), whether blocked in I/O or
     * computing. A stuck worker that is merely descheduled (it got almost no CPU since the last look or has not yet
     * computed for {@code blockedThreshold}: a saturated machine, not a slow task; and it runs Java code, or is
     * runnable in the kernel, or has not yet been found outside Java code at every look for a while; see
     * {@link #merelyDescheduled}) still counts as running, so an overloaded machine does not grow the pool. While work keeps
     * backing up the checker looks again within a few milliseconds (it reads the ready queue at each tick, and
     * submitters that find every worker busy nudge it), so a pool whose tasks block briefly and often grows within tens
     * of milliseconds to about the size its blocking needs, not to one thread per waiting task; once the backlog is
     * gone the extra workers idle and retire. Every stuck worker is counted once in {@code blockedDetections}.
     */
    private boolean inspect(long now) {
        WorkerPool pool = engine.pool;
        int running = 0;
        int stuckWorkers = 0;
        int notBusy = 0;
        for (Worker w : pool.workers()) {
            if (pool.reclaimIfNeverRan(w, now)) {
                continue; // a start that failed after all: tried again as any failed start is
            }
            if (!w.isBusyOpaque()) {
                w.checkSeen = -1;
                if (w.parkState() != Worker.RETIRED) {
                    // Searching, about to park, parked, or woken and about to run: whichever, it takes queued work
                    // without a new thread (a parked one once signalled below; one between its PARKED write and its
                    // entry in the idle stack polls the ready queue once more before it parks, see WorkerPool).
                    // Counting only registered parked workers as idle made a worker descheduled inside that window
                    // on a loaded machine look like a reason for an auxiliary thread.
                    notBusy++;
                }
                continue;
            }
            long seen = w.startedCountOpaque();
            boolean stuck = false;
            if (seen != w.checkSeen) {
                w.checkSeen = seen;
                w.checkSince = now;
                // It started after the inspection before this one (the count it reads changed since), and not
                // before its item was taken: timed from the later of the two, the report is at most the part of the
                // item before the task (or of the period, if the item began before that inspection) longer than the
                // task has run. Timed from now, a task found stuck read up to a check period shorter than it had.
                long itemTaken = w.itemStampOpaque();
                w.checkStartedAfter = itemTaken - previousInspection > 0 ? itemTaken : previousInspection;
                w.checkReported = false;
                w.nativeLook = NO_LOOK;
                w.cpuAtCheckSince = sampleCpu(w, now); // the baselines for judging this task if it turns out stuck
            } else if (now - w.checkSince >= settings.blockedThresholdNanos) {
                stuck = true;
                if (!w.checkReported) {
                    w.checkReported = true;
                    blockedDetections = blockedDetections + 1; // only this thread writes it
                    Jfr.workerBlocked(engine, w, now - w.checkStartedAfter);
                }
            }
            if (isOffCpu(w.thread) && stillInTask(w, seen)) {
                if (stuck) {
                    stuckWorkers++;
                } else if (!(blockedOnItsOwn(pool, w) && stillInTask(w, seen))) {
                    running++; // waits for a lock the pool holds, or is back on the CPU: see blockedOnItsOwn
                }
            } else if (stuck && !merelyDescheduled(w, now)) {
                stuckWorkers++;
            } else {
                running++;
            }
        }
        if (PoolPolicy.emptyRoundsStranded(running, notBusy)) {
            releaseStrandedRounds(now, true); // before the policy counts them as work waiting
        }
        return pool.policy.inspected(pool, running, stuckWorkers, notBusy);
    }

    /** The workers' started counts summed at the last {@link #releaseStrandedRounds} walk (-1: none yet). */
    private long roundsWalkedAt = -1;

    /**
     * Releases the lanes sent round the ready queue empty (see SequentialLane#runBatch) when no worker will come round
     * to them soon ({@link PoolPolicy#emptyRoundsStranded}; {@code stranded}: an inspection found so already): each
     * would stay mapped and look like work waiting. A lane given a task since it was queued goes back in the queue.
     * Only workers send lanes round, each right after an item and before it starts the next, so once a walk is done
     * another is needed only after some worker has started an item: the walk of a long queue behind stuck workers is
     * not repeated every few milliseconds.
     */
    private void releaseStrandedRounds(long now, boolean stranded) {
        if (engine.stopping()) {
            return; // shutdownNow takes every lane
        }
        long started = engine.pool.startedTasks(); // retired workers' counts included: it only grows
        if (started == roundsWalkedAt || !(stranded || engine.pool.policy.emptyRoundsStranded(now))) {
            return;
        }
        roundsWalkedAt = started;
        engine.readyQueue.takeEmptyRounds(this::releaseHeldRound);
    }

    /** A lane sent round empty that this thread took out of the ready queue, and so owns: released, or queued again. */
    void releaseHeldRound(Lane lane) {
        if (lane.releaseIfEmpty()) {
            lane.unmap();
            if (engine.isShutdown()) {
                // While we held the lane, a worker that found nothing to run asked whether the executor was
                // quiescent; the lane was active, so it was not, and the worker parked for good (after shutdown an
                // idle core worker parks untimed). The release changed the answer: it must ask again, or termination
                // never comes.
                engine.wakeForTermination();
            }
        } else if (!lane.isFinished()) {
            engine.readyQueue.offerLane(lane, engine.stamp()); // given work since: ours now, so back it goes
            engine.pool.signalWork();
        }
    }

    /**
     * Workers release the lanes they left idle themselves once the grace has passed, every 32 items, before they park
     * and when a timed park ends; a worker busy in one long task cannot. So while any worker holds idle lanes, the
     * checker looks every {@link #SWEEP_TICK_NANOS} and releases those past the grace, which bounds how long an emptied
     * lane stays mapped.
     * Returns whether a look within {@link #SWEEP_TICK_NANOS} is wanted: some worker holds a lane still within its
     * grace, or one that went idle as the last sweep looked, or has started an item since (it may have rung one).
     * Entries of lanes that left a ring, active on some worker, wait for the next look at the usual pace: such a lane
     * can only finish once that worker is done with it, and looked at every 2 ms, an entry of the very lane its
     * worker is blocked in woke this thread 500 times a second for as long as the task blocked.
     */
    boolean sweepIdleLanes(long now) {
        boolean soon = false;
        for (Worker w : engine.pool.workers()) {
            // The started count as a "nothing new" mark: a task running during a clean sweep can still leave its
            // lane in the ring after it, but then its worker either starts another item (the mark moves) or parks,
            // and a parked worker releases what it kept when the grace ends (WorkerPool#awaitWork).
            if (w.idleCountOpaque() == 0
                    || (w.sweepOutcome == SWEEP_CLEAN && w.sweepMark == w.startedCountOpaque())) {
                continue; // nothing held, or nothing new since a sweep that left nothing to wait for
            }
            if (now - w.lastSweptByChecker >= SWEEP_TICK_NANOS) {
                w.lastSweptByChecker = now;
                // The mark is read before the ring: a worker rings a lane before it starts its next item, and
                // publishes that start with a release store, so a sweep that missed an entry appended after its read
                // of the ring has a mark older than that start, and the next look sweeps again. Read after the sweep,
                // a start that came in between made a sweep that missed the lane look clean for good: with every
                // worker then stuck, the lane stayed mapped (2 of 210 rounds of an outside audit, under load).
                long mark = w.startedCountAcquire();
                w.sweepMark = mark;
                w.sweepOutcome = releaseIdleLanesOf(w, now);
            }
            soon |= w.sweepOutcome == SWEEP_SOON || w.sweepMark != w.startedCountOpaque();
        }
        return soon;
    }

    /**
     * Whether the worker is off the CPU for a reason the pool cannot serve itself ({@link ThreadProbe#blockedOnItsOwn}:
     * not a lock another worker holds, nor a monitor or JDK lock just released). Such a worker's tasks are bound by a
     * lock the pool already works under, and a new thread would only queue on it too: counted as blocked, two workers
     * meeting on a monitor for microseconds grew a two-core pool to 16 threads, with a core bump that stayed. Any
     * other parked wait with no owner is a block: it may be a latch, a condition or a future (maybe of a task queued
     * behind it), which only another thread can end. (A writer waiting for the read holders of a
     * {@code ReentrantReadWriteLock} also has no owner to look at; if they hold it long, the worker is found stuck
     * after {@code blockedThreshold}.)
     */
    private static boolean blockedOnItsOwn(WorkerPool pool, Worker w) {
        return PROBE.blockedOnItsOwn(w.thread, owner -> {
            for (Worker other : pool.workers()) {
                if (other != w && other.thread.getId() == owner) {
                    return true;
                }
            }
            return false;
        });
    }

    private static final long SWEEP_TICK_NANOS = 2_000_000L;
    /** The longest the coarse clock goes without a refresh while a worker is awake (see {@link Engine#stamp}). */
    static final long CLOCK_TICK_NANOS = 4_000_000L;
    /** Quiet ticks before the clock stalls (see {@link #flowing}): 16 ms with nothing submitted or started. */
    private static final int QUIET_TICKS_TO_STALL = 4;
    /** How soon the checker looks again while work waits: after a nudge, a start for a backlog, or a backlog seen. */
    private static final long BACKLOG_RECHECK_NANOS = 5_000_000L;

    /** {@link #releaseIdleLanesOf}: nothing left to wait for. */
    static final int SWEEP_CLEAN = 0;
    /** {@link #releaseIdleLanesOf}: an entry names a lane that left this ring, active, and not finished yet. */
    static final int SWEEP_LATER = 1;
    /** {@link #releaseIdleLanesOf}: an idle lane there is still within its grace, or went idle as this looked. */
    static final int SWEEP_SOON = 2;

    /**
     * Racy read of the live part of a worker's idle ring: safe because each lane's own CAS decides (see
     * Worker#idleRing). Returns {@link #SWEEP_SOON}, {@link #SWEEP_LATER} or {@link #SWEEP_CLEAN}: whether another
     * look is worth it, and how soon.
     *
     * <p>A lane found active again (another worker runs it now) gives up its entry here ({@link Lane#leaveRing}): the
     * worker that empties it next then rings it itself. Otherwise a lane whose only entry sits in the ring of a worker
     * stuck in a long task could never join another ring, and would stay mapped for as long as that worker is stuck.
     */
    static int releaseIdleLanesOf(Worker w, long now) {
        boolean young = false;
        boolean again = false; // an entry of a lane that left this ring: cleared when the lane is finished
        boolean wentIdle = false;
        int start = w.idleStartOpaque();
        int count = Math.min(w.idleCountOpaque(), Worker.IDLE_RING);
        for (int i = 0; i < count; i++) {
            Lane lane = w.idleLaneAcquire(start + i);
            if (lane == null) {
                continue;
            }
            // An entry is cleared only once its lane is finished (released or closed): a finished lane is never
            // ringed again, so the CAS cannot clear a later claim of the same lane that the owner put in the same
            // entry after its ring came round while this thread was descheduled.
            if (lane.isIdle()) {
                if (now - lane.idleSince >= Worker.IDLE_GRACE_NANOS) {
                    if (lane.releaseIfIdle()) {
                        lane.unmap();
                        w.forgetEntry(start + i, lane);
                    } else {
                        // Activated since isIdle (or closed): it leaves this ring, as in Worker#releaseOldest. Kept
                        // marked, it could join no other ring when it empties again, and this ring's sweeps may have
                        // ended (the worker is stuck, and this look found nothing young): it would stay mapped for as
                        // long as the worker is stuck.
                        lane.leaveRing();
                        again = true; // its entry goes once it is finished
                    }
                } else {
                    young = true;
                }
            } else if (lane.isActive()) {
                lane.leaveRing();
                again = true;
            } else if (lane.isFinished()) {
                w.forgetEntry(start + i, lane); // released or closed elsewhere
            } else {
                // It went idle since the look above: the entry may be its only claim on a ring (its idler found it
                // marked and did not ring it), so there must be a next sweep, which sees it idle. Counted as nothing
                // to wait for, this look could end the sweeps of a worker stuck in a task, and the lane stayed mapped
                // until the task ended (an outside audit, pausing the checker between the two reads).
                wentIdle = true;
            }
        }
        return young || wentIdle ? SWEEP_SOON : again ? SWEEP_LATER : SWEEP_CLEAN;
    }

    /**
     * Whether a worker stuck in one task is only slowed down by a saturated machine, not stuck on its own: its thread
     * runs Java code, or native code while the kernel has it runnable (a thread blocked in socket or native I/O reports
     * RUNNABLE to Java too), or native code not yet for long (below), and either it used under a tenth of the time
     * since the last look on a CPU, or it has not computed for {@code blockedThreshold} in all the time the checker has
     * watched its task. Either way other threads hold the cores: the first waits for one, and the second would, on a
     * core of its own, not be stuck yet. A new thread would only wait for a core too (SPEC 6: a CPU-bound backlog on a
     * saturated machine is no reason for more threads). Judged by the wall time alone, tasks of 40% of the threshold's
     * CPU, stretched past it by spinning threads on every core, started 4 to 8 auxiliary threads on 2 cores. A stuck
     * task that has computed for the threshold is stuck, and so is one found outside Java code and not runnable at
     * every look for {@link #nativeWaitNanos} (below). Looked at only for stuck workers, so the cost (a thread-info and
     * a CPU-time read, and for a thread in native code a read of its kernel state, {@link OsThreads}) stays off the
     * common path.
     */
    private boolean merelyDescheduled(Worker w, long now) {
        long previous = w.cpuSeen;
        long previousAt = w.cpuSeenAt;
        long cpu = sampleCpu(w, now);
        if (cpu < 0 || previous < 0 || w.cpuAtCheckSince < 0 || now == previousAt) {
            return false; // no per-thread CPU clock (or no baseline): a stuck task counts as stuck
        }
        boolean starved = (cpu - previous) * 10 < now - previousAt;
        boolean shortOfTheThreshold = cpu - w.cpuAtCheckSince < settings.blockedThresholdNanos;
        if (!starved && !shortOfTheThreshold) {
            return false; // it has computed for the threshold, and still does: stuck on the CPU
        }
        if (PROBE.inJavaCode(w.thread)) {
            w.nativeLook = NO_LOOK;
            return true;
        }
        // Outside Java code: blocked in native I/O, computing in native code, or only caught in a short native call (a
        // clock read, a JNI call of its task) by a look that came while it waited for a core. The last leaves native
        // code as soon as it runs, so the thread counts as stuck only once every look for nativeWaitNanos has found it
        // outside Java code; any other look (one that finds it in Java code, off the CPU, or not stuck) starts the
        // wait again. Taken as stuck at the first such look, a task that got a fifth of a core started an auxiliary
        // thread on saturated cores about once in sixty runs: caught in its own CPU-clock read, its clock still since
        // the look before.
        long look = inspections; // the looks finished before this one: this look's number
        if (w.nativeLook != look - 1) {
            w.nativeSince = now;
        }
        w.nativeLook = look;
        if (OsThreads.state(w.osThreadId) == OsThreads.RUNNABLE) {
            // Runnable in the kernel: on a core or waiting for one, so not blocked at this look, however long the run
            // of looks in native code. The wait alone let a wait for a core longer than nativeWaitNanos, four spinners
            // a core beside the task, start a thread about once in fifty rounds. The run goes on all the same: a
            // thread blocked in a native poll that wakes often is runnable between its sleeps, and a look that found
            // it so must not start the wait again, or on saturated cores the pool might not grow behind it for long.
            // Computing in native code is runnable too; the CPU-time checks above tell when that is stuck.
            return true;
        }
        // Asleep in the kernel, or its view unknown (not Linux, no access to /proc): the wait decides.
        return now - w.nativeSince < nativeWaitNanos();
    }

    /**
     * How long looks must keep finding a stuck worker outside Java code before it counts as blocked there: a quarter
     * of {@code blockedThreshold}, at most {@link #NATIVE_WAIT_MAX_NANOS}. What it waits out is a scheduler's delay,
     * which does not grow with the threshold; while work waits behind the worker the checker looks every
     * {@link #BACKLOG_RECHECK_NANOS}, so the wait spans several looks.
     */
    private long nativeWaitNanos() {
        return Math.min(settings.blockedThresholdNanos / 4, NATIVE_WAIT_MAX_NANOS);
    }

    /** {@link Worker#nativeLook} when no run of looks has found the worker outside Java code. */
    static final long NO_LOOK = Long.MIN_VALUE;

    private static final long NATIVE_WAIT_MAX_NANOS = 50_000_000L;

    /** Records the worker thread's CPU time as the baseline for the next look; returns it, or -1 if unknown. */
    private static long sampleCpu(Worker w, long now) {
        long cpu = PROBE.cpuTime(w.thread);
        w.cpuSeen = cpu;
        w.cpuSeenAt = now;
        return cpu;
    }

    private static final ThreadProbe PROBE = ThreadProbe.INSTANCE;

    /**
     * Re-reads, after the thread state, what the worker said before it: a worker seen busy and then seen WAITING may
     * simply have finished its lane and parked (or started another task) between the two reads. That is an idle
     * worker on its way to the idle stack, not a blocked one, and taking it for blocked started a third worker on two
     * cores under a pure CPU-bound load of tiny tasks. Opaque reads suffice: the worker wrote {@code busy = false}
     * (or bumped its started count) before it parked, and the park itself makes those writes visible; a stale read
     * here only errs towards counting a blocked worker as blocked, as before.
     */
    private static boolean stillInTask(Worker w, long seen) {
        return w.isBusyOpaque() && w.startedCountOpaque() == seen;
    }

    static boolean isOffCpu(Thread t) {
        Thread.State s = t.getState();
        return s == Thread.State.BLOCKED || s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
    }

    long blockedDetections() {
        return blockedDetections;
    }
}
