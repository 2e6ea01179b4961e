package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One worker thread's loop: take a lane (or an unordered task) from the ready queue, run a bounded turn of it (whole
 * batches until the turn has lasted {@code minTurn}, see {@link #runLane}), put the lane back at the end of the queue
 * if it has more, and go round again; when nothing is queued, search briefly and then park (see
 * {@link WorkerPool#awaitWork}).
 *
 * <p>Fields written by the worker and read by other threads (counters, {@code busy}) use opaque or release writes:
 * those readers (statistics, the checker) need eventually visible, untorn values, not ordering, and a fence per task
 * would cost more than the task itself for the small tasks this executor is built for.
 */
final class Worker implements Runnable {

    // parkState values: the idle hand-shake between this worker and submitters (see WorkerPool).
    static final int ACTIVE = 0;
    static final int PARKED = 1;
    static final int SIGNALLED = 2;
    static final int RETIRED = 3;
    /** Signalled by a submitter that counted this worker as searching for it until its first look (see WorkerPool). */
    static final int WOKEN = 4;

    /** The low bit of {@code take}: a take is in progress (see beginTake). */
    private static final long TAKING = 1;

    private static final VarHandle PARK_STATE;
    private static final VarHandle TAKE;
    private static final VarHandle TAKE_LANE;
    private static final VarHandle STARTED;
    private static final VarHandle EXECUTED;
    private static final VarHandle FAILED;
    private static final VarHandle TRANSFERS;
    private static final VarHandle BUSY;
    private static final VarHandle ITEM_STAMP;
    private static final VarHandle CURRENT_LANE;
    private static final VarHandle RING = MethodHandles.arrayElementVarHandle(Lane[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PARK_STATE = l.findVarHandle(Worker.class, "parkState", int.class);
            TAKE = l.findVarHandle(Worker.class, "take", long.class);
            TAKE_LANE = l.findVarHandle(Worker.class, "takeLane", Lane.class);
            STARTED = l.findVarHandle(Worker.class, "started", long.class);
            EXECUTED = l.findVarHandle(Worker.class, "executed", long.class);
            FAILED = l.findVarHandle(Worker.class, "failed", long.class);
            TRANSFERS = l.findVarHandle(Worker.class, "transfers", long.class);
            BUSY = l.findVarHandle(Worker.class, "busy", boolean.class);
            ITEM_STAMP = l.findVarHandle(Worker.class, "itemStamp", long.class);
            CURRENT_LANE = l.findVarHandle(Worker.class, "currentLane", Lane.class);
            IDLE_COUNT = l.findVarHandle(Worker.class, "idleCount", int.class);
            IDLE_START = l.findVarHandle(Worker.class, "idleStart", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final ThreadLocal<Worker> CURRENT = new ThreadLocal<>();

    final Engine engine;
    final WorkerPool pool;
    final boolean core;
    /** Unique within the executor, never 0 (see {@link Lane#lastWorkerId}). */
    final int id;
    /**
     * The thread that runs this worker: the one the pool started, or, when a configured factory runs the runnable it
     * was given on a thread of its own, that thread, written as it begins (see StartGate). Wake-ups, interrupts and
     * the checker's looks go to it. Volatile: written once more after the worker was listed.
     */
    volatile Thread thread;
    /**
     * The gate a configured factory was given for this worker, or null (a thread of the executor's own making, which
     * always runs it): the checker asks it whether the factory's thread ended without running this worker (see
     * {@link WorkerPool#reclaimIfNeverRan}). Written before the thread starts.
     */
    StartGate gate;
    /** Set by the pool when this idle auxiliary worker is allowed to end (see PoolPolicy#mayRetire). */
    boolean retired;
    /**
     * Set by this auxiliary worker when its keep-alive ran out but the core size had grown to include it (a core bump):
     * from then on it parks as a core worker, without a timeout. The core size never shrinks, so it would be refused
     * at every later keep-alive too, and woke that often for good on an idle executor. Its own thread only.
     */
    boolean keptAsCore;

    private volatile int parkState = ACTIVE;
    /**
     * The hand-shake with {@code shutdownNow} and this worker's progress in a sequential lane, in one word:
     * {@code taken << 1 | TAKING}, where {@code taken} is the last slot this worker took from {@code takeLane} (or that
     * lane's head when it went idle). The lane's own head is written only once per batch; this word is written per
     * task, in a line only this worker writes, so a drain or a statistics read that starts from a head a batch old
     * finds here how far the owner has gone (see SequentialLane#progress).
     */
    private volatile long take;
    /**
     * The lane {@code take} counts in, or null. Set only inside a take that passed its state check (see endTake), so
     * once {@code shutdownNow} has waited out the takes it can only be cleared (see leaveLane), which loses nothing.
     * Cleared when this worker gives the lane up, so that a worker busy elsewhere (or stuck) does not keep a lane,
     * and its context, reachable after the lane is released.
     */
    @SuppressWarnings("unused") // accessed through TAKE_LANE
    private Lane takeLane;

    // Written by this worker only, with release stores, read with acquire or opaque loads (each accessor names its
    // mode); transfers and the busy flag below are opaque. Read by statistics and the checker.
    private long started;
    private long executed;
    private long failed;
    private long transfers;
    private boolean busy;
    /** The coarse clock ({@link Engine#stamp}) when the item running now was taken; see {@link #inLongItem}. */
    private long itemStamp;
    /** Set by {@link #countExecutedBeforeCompletion}: the task running now is counted already. This worker only. */
    private boolean executedCounted;

    /**
     * The lane this worker is running a batch of, or null. Owner-written; other threads read it racily (plain reads of
     * a reference never tear): the checker to name the context in a WorkerBlocked event, and statistics to find the
     * lanes workers are in (see Snapshots#contexts and, after shutdownNow, Engine#liveContexts). Set with a release
     * store (a plain one on x86, once per batch): a reader that finds a lane here with an acquire load also sees what
     * came before the worker took it, the release of an older lane of its context among it (Snapshots#contexts).
     * Cleared with plain stores: a reader that still sees the lane after the worker left it counts or names it a
     * moment longer, which a racy statistic allows.
     */
    Lane currentLane;
    /** The task running now, or null; same rules as currentLane (for the WorkerBlocked event). */
    Runnable runningTask;

    /**
     * How long an emptied lane stays mapped before it is released: "a few milliseconds" (SPEC point 4). Long enough
     * that a context updated every few milliseconds keeps its lane: with 1 ms, two producers updating 10,000
     * coalescing contexts (a context back every 1 to 5 ms) re-created a lane for about two updates in five, and each
     * re-creation cost a map removal, a map insertion and an allocation (docs/hand-off-experiments.md, fifteenth set).
     */
    static final long IDLE_GRACE_NANOS = 5_000_000L;
    /**
     * Lanes this worker emptied, oldest first, at most this many (then the oldest is released at once): enough for
     * the contexts one worker empties within a grace at a few million activations a second. 64 KB per worker.
     */
    static final int IDLE_RING = 16_384;
    /** How many items a worker takes between two looks at the age of its idle lanes. */
    private static final int SWEEP_EVERY = 32;

    /**
     * Lanes this worker left idle and has not released yet. Owner-only, except that the checker reads it racily to
     * release the idle lanes of a worker stuck in a task (see {@link Checker#sweepIdleLanes}), and clears the entries
     * of those it is done with ({@link #forgetEntry}): any lane read from here is released only if its own CAS finds
     * it still idle, so a stale or torn view can only release a lane early, never wrongly.
     */
    private final Lane[] idleRing = new Lane[IDLE_RING];
    private int idleStart;
    private int idleCount; // owner-written with opaque stores; the checker reads it to know when to sweep
    private static final VarHandle IDLE_COUNT;
    private static final VarHandle IDLE_START;
    private int itemsSinceSweep;

    /**
     * A coarse clock (System.nanoTime), refreshed every few items and batches and after parking; stamps lanes as they
     * go idle without a clock read per lane. A stale stamp makes a lane look older than it is, so it is released a
     * little early: the safe direction. Owner-only.
     */
    long clock = System.nanoTime();

    /** The clock at the start of the current round of spins (see Waiting#pauseUnlessPreempted); owner-only. */
    long spinMark;

    /** Counts what SequentialLane#touchAhead loaded, so its loads are used; read by nothing (owner-only). */
    int touchSink;

    /** Nanoseconds this worker's next search may spin before it parks; adapted by WorkerPool#search (owner-only). */
    long searchBudget = PoolPolicy.MIN_SEARCH_NANOS;

    /** How many times this worker went to park (owner-only): whether an item came after a park. */
    int parks;

    /**
     * This worker came back from a park with no idle lanes and has not told the checker, which may doze meanwhile
     * (owner-only). See {@link #run}: it tells it only if it goes on to a second item without parking again.
     */
    private boolean checkerOwed;

    // Checker-only bookkeeping (written and read by the checker thread alone).
    long lastSweptByChecker;
    /**
     * startedCount when the checker last swept this worker's ring, and what that sweep found (Checker.SWEEP_*): a
     * clean sweep at the current count means nothing new to look at.
     */
    long sweepMark = -1;
    int sweepOutcome = Checker.SWEEP_SOON;
    long cpuSeen = -1;
    long cpuSeenAt;
    long checkSeen = -1;
    long checkSince;
    /** The thread's CPU time at {@link #checkSince} (-1 if this runtime cannot tell; see Checker#merelyDescheduled). */
    long cpuAtCheckSince = -1;
    /** When the task the checker saw at {@link #checkSince} started, at the latest bound it has (see Checker). */
    long checkStartedAfter;
    boolean checkReported;
    /**
     * The number of the checker's last look that found this task stuck outside Java code, and when the run of
     * consecutive such looks that it ends began (see Checker#merelyDescheduled); {@link Checker#NO_LOOK} if the last
     * look that judged it found it in Java code, or it is a new task.
     */
    long nativeLook = Checker.NO_LOOK;
    long nativeSince;
    /**
     * The thread's id in the kernel ({@link OsThreads#currentId}), or 0 if unknown. Written once by the worker as it
     * starts, read by the checker: a plain int, since a stale read can only give 0, which the checker takes as
     * unknown, and it reads this only for a worker it has seen in a task, long after the write.
     */
    int osThreadId;

    Worker(Engine engine, WorkerPool pool, boolean core, int id) {
        this.engine = engine;
        this.pool = pool;
        this.core = core;
        this.id = id;
    }

    /** The worker running on the calling thread, or null if it is not a worker of any executor. */
    static Worker current() {
        return CURRENT.get();
    }

    @Override
    public void run() {
        thread = Thread.currentThread(); // before anything that can park it: whoever wakes it reads this first
        CURRENT.set(this);
        try {
            pool.running(this); // inside: if its JFR event throws, exited() still gives the slot back
            osThreadId = OsThreads.currentId(); // inside too: an Error from the file system must not leak the slot
            // Recorded here, not by the thread that started it: that one went on after the start, and a worker that
            // ran and retired before it did was recorded as retired, then as started.
            Jfr.threadStarted(engine, this, core ? "below the core size"
                    : "work waits and fewer workers run than cores (the others stuck or blocked, or the pool smaller)");
            Jfr.refreshSlowTask(); // a recording started since the executor was built times this worker's first task
            for (;;) {
                if (engine.stopping()) {
                    return;
                }
                if (++itemsSinceSweep >= SWEEP_EVERY) {
                    itemsSinceSweep = 0;
                    sweepIdle(false); // also refreshes the clock
                    if (!engine.checker.running()) {
                        // A published checker thread may have ended, or live on, without running its rounds: while
                        // tasks flow no other look may come. A look that finds it ended leaves the timer to the
                        // workers (absent); until then they dispatch what is due every few dozen items.
                        engine.checker.reclaimIfNeverRan();
                        engine.timer.dispatchUnattended();
                    }
                }
                if (engine.checker.absent()) {
                    // No checker thread: between items, the workers dispatch due scheduled tasks (see Checker#absent),
                    // and ask for the checker again, which a worker stuck in a task needs.
                    engine.timer.dispatchUnattended();
                    engine.checker.retryIfAbsent();
                }
                Object item = engine.readyQueue.poll();
                boolean resumed = false;
                if (item == null) {
                    int parked = parks;
                    item = pool.awaitWork(this);
                    if (item == null) {
                        return;
                    }
                    clock = System.nanoTime(); // it may have parked for a long time
                    resumed = parks != parked;
                    if (!resumed) {
                        engine.tick(clock);
                    }
                }
                // Back from a park with no idle lanes kept (work was sparse, see PoolPolicy#sparse): the checker may
                // doze (every worker was parked), and it ticks the coarse clock only while a worker is awake. It is
                // told after this item, and only if this worker then goes on to another one. Woken first, it ran on
                // the other CPU just as this worker's own wake-up ended, and the task waited for both: at 10,000
                // tasks a second the median wait from submit to start went from 6 to 17 us
                // (docs/hand-off-experiments.md, thirteenth set). The engine's clock is marked stale instead (the
                // dozing checker's last tick may be a check period old): the first submit during this item reads the
                // time itself and sets it, so the oldest waiting task's age is exact, and wakes the dozing checker,
                // since this worker is awake (Checker#clockRestarted): a long item pays that wake-up, a short one at
                // low load does not. A worker that kept idle lanes through its park tells the checker at once, as one
                // going on past its first item does: if this item runs long, only the checker releases them when their
                // grace ends.
                boolean deferred = resumed && idleCount == 0;
                if (deferred) {
                    engine.markClockStaleOpaque();
                    checkerOwed = true;
                } else if (resumed || checkerOwed) {
                    checkerOwed = false;
                    engine.tick(clock = System.nanoTime());
                    engine.checker.workerResumed();
                }
                // The coarse clock: a load of a line written once a millisecond (a clock read only if it is stale).
                ITEM_STAMP.setOpaque(this, deferred ? clock : engine.stamp());
                BUSY.setOpaque(this, true);
                if (item instanceof Lane) {
                    Lane lane = (Lane) item;
                    try {
                        runLane(lane);
                    } catch (Throwable outsideAnyTask) {
                        // Tasks cannot get here (runTask catches everything); this is the engine failing around them,
                        // e.g. out of memory. No take is in progress any more. If we still own the lane (currentLane
                        // is cleared the moment ownership ends), hand it back rather than strand its tasks; either
                        // way keep the worker.
                        endAnyTake();
                        if (currentLane == lane) {
                            engine.readyQueue.offerLane(lane, engine.stamp());
                            currentLane = null;
                        }
                        leaveLane(); // the head is written (SequentialLane#runBatch's way out)
                        engine.reportUncaught(outsideAnyTask);
                    }
                } else {
                    // Taken just as shutdownNow began: it runs, as in ThreadPoolExecutor, and sees the interrupt.
                    runTask(((PlainTask) item).task);
                }
                BUSY.setOpaque(this, false);
            }
        } finally {
            try {
                sweepIdle(true);
            } finally {
                CURRENT.remove();
                try {
                    engine.threadExiting(); // before the slot goes: the last slot given back may end the executor
                } finally {
                    pool.exited(this); // whatever happened above, the slot is given back
                }
            }
        }
    }

    /** The sequential context of the task running now, or null; racy for other threads. */
    Object sequentialContext() {
        Lane lane = currentLane;
        return lane == null || lane.coalescing() ? null : lane.context;
    }

    /** Called by a lane this worker has just made idle. */
    void rememberIdle(Lane lane) {
        if (lane.claimRing()) {
            append(lane);
        }
    }

    private void append(Lane lane) {
        if (idleCount == IDLE_RING) {
            releaseOldest(); // never appends: the ring stays at most full
        }
        // Release store: the checker reads entries with acquire, so it sees the lane fully constructed.
        RING.setRelease(idleRing, (idleStart + idleCount) % IDLE_RING, lane);
        IDLE_COUNT.setOpaque(this, idleCount + 1);
    }


    /** Entry {@code i} of the idle ring, for the checker (racy by design; see {@link #idleRing}). */
    Lane idleLaneAcquire(int i) {
        return (Lane) RING.getAcquire(idleRing, i % IDLE_RING);
    }

    /**
     * The checker is done with {@code lane}, read from entry {@code i} (it released it, or the lane has left this
     * ring): the entry lets go of it (and of its context), unless the worker has reused the entry meanwhile. Without
     * this, a worker stuck in one long task kept up to a ring's worth of released lanes, and the contexts they name,
     * reachable until it came back.
     */
    void forgetEntry(int i, Lane lane) {
        // A CAS against the owner's plain stores to the same entry: it clears only the lane it names, so an entry the
        // owner has refilled keeps its new lane, and the owner skips an entry it finds cleared.
        RING.compareAndSet(idleRing, i % IDLE_RING, lane, null);
    }

    /** Where the live part of the idle ring starts (checker's racy view). */
    int idleStartOpaque() {
        return (int) IDLE_START.getOpaque(this);
    }

    int idleCountOpaque() {
        return (int) IDLE_COUNT.getOpaque(this);
    }

    /** Releases the lanes idle for longer than the grace, or all of them (when the worker ends). */
    void sweepIdle(boolean all) {
        long now = clock = System.nanoTime();
        engine.tick(now);
        while (idleCount > 0) {
            Lane lane = idleRing[idleStart];
            if (!all && lane != null && lane.isIdle() && now - lane.idleSince < IDLE_GRACE_NANOS) {
                return;
            }
            releaseOldest();
        }
    }

    private void releaseOldest() {
        Lane lane = idleRing[idleStart];
        RING.setRelease(idleRing, idleStart, null);
        IDLE_START.setOpaque(this, (idleStart + 1) % IDLE_RING);
        IDLE_COUNT.setOpaque(this, idleCount - 1);
        if (lane == null) {
            return; // the checker was done with it while this worker was in a long task (see forgetEntry)
        }
        if (!lane.releaseIfIdle()) {
            // Re-activated meanwhile (or closed): it stays, and leaves the ring. Never appending here keeps the ring
            // from overflowing while it is being made room in.
            lane.leaveRing();
        } else {
            lane.unmap();
        }
    }

    /**
     * A context whose previous run was on worker {@code previous} runs on this one: counted, and a JFR event. The
     * event describes the context, whose toString may throw an error the engine lets through (Messages#describe):
     * thrown from here, it took the lane with it, and handed back, the lane failed the same way at each worker it went
     * to and its tasks never ran. The event is lost instead, and the failure reported.
     */
    private void transferred(Object context, boolean coalescing, int previous) {
        countTransfer();
        try {
            Jfr.contextTransferred(engine, context, coalescing, previous, id);
        } catch (Throwable eventFailed) {
            engine.reportUncaught(eventFailed);
        }
    }

    void runLane(Lane lane) {
        // currentLane is non-null exactly while this worker owns the lane, and is set before anything that can throw:
        // run's way out of a failure around the tasks hands the lane back only if it finds it here.
        CURRENT_LANE.setRelease(this, lane);
        int last = lane.lastWorkerId;
        if (last != id) {
            lane.lastWorkerId = id;
            if (last != 0) {
                transferred(lane.context, lane.coalescing(), last);
            }
        }
        // When the turn began, without a clock read per turn: the clock was last written at this worker's previous
        // batch end, resume or sweep, so it is at or before now. A stale value makes the turn look longer than it
        // was, which only rotates the lane sooner, as a zero minTurn would. Where rotations are frequent, lanes with
        // backlogs while others wait, the previous turn ended with a batch end and its clock read, one poll ago.
        long turnStart = clock;
        int outcome;
        while ((outcome = lane.runBatch(this, engine.settings.batchSize)) == Lane.MORE || outcome == Lane.ROUND) {
            engine.tick(clock = System.nanoTime());
            // ROUND: emptied while other work waits, so it goes round whatever its turn. Staying, the worker would
            // find it empty and make it idle, the activation that sending it round saves.
            // MORE: the batch budget is spent and the lane has more. Rotate it behind the other queued work, unless
            // there is none (going round the queue would only cost an enqueue and a dequeue) or the turn is still
            // shorter than minTurn: with tiny tasks a rotation after each batch of 64 was a trip round the ready
            // queue, a wake-up check and the lane's lines moving to the other CPU every few microseconds (8 and 32
            // producers into 8 contexts: about 1.1x and 1.2x the rate with turns of 100 us,
            // docs/hand-off-experiments.md, twenty-ninth set).
            if (outcome == Lane.ROUND
                    || (!engine.readyQueue.isEmpty() && clock - turnStart >= engine.settings.minTurnNanos)) {
                requeue(lane);
                return;
            }
            lane.queuedAt = clock; // kept, as if it had gone round an empty queue
        }
        currentLane = null; // idle (no longer ours), or left to shutdownNow
        leaveLane();
        if (outcome == Lane.IDLED) {
            rememberIdle(lane);
        }
    }

    /** Sends the lane this worker owns round the ready queue, behind the work already there. */
    private void requeue(Lane lane) {
        engine.readyQueue.offerLane(lane, clock); // ownership passes to the queue here...
        currentLane = null;            // ...so nothing that can throw comes in between
        leaveLane(); // after the offer: the next owner's progress only adds to ours
        pool.signalWork();
    }

    /** A context this worker runs now ran on another worker last (a lane's batch). */
    private void countTransfer() {
        TRANSFERS.setOpaque(this, transfers + 1); // only this worker writes it
    }

    /**
     * Runs one task; nothing it throws escapes. The interrupt status is cleared right before the task starts, as
     * {@code ThreadPoolExecutor.runWorker} does, so an interrupt aimed at an earlier task (or sent while this worker
     * was between tasks) does not reach it; while the executor is stopping it is set instead, and STOP is read again
     * after clearing, so a {@code shutdownNow} that interrupted us during the clear is not undone.
     */
    void runTask(Runnable task) {
        // Release: a lane this worker rang before this task is visible to a checker that reads this count with
        // acquire (Checker#sweepIdleLanes; a plain store on x86).
        STARTED.setRelease(this, started + 1);
        if (engine.admission != null) {
            engine.admission.started(currentLane); // its place is free: wake a waiting submitter, if any
        }
        runningTask = task;
        Object slow = Jfr.beginSlowTask();
        // Last thing before the task, so that the window an interrupt can slip through is as small as it can be.
        if (engine.stopping()) {
            Thread.currentThread().interrupt();
        } else if (Thread.interrupted() && engine.stopping()) {
            Thread.currentThread().interrupt();
        }
        try {
            task.run();
        } catch (Throwable failure) {
            // Release, before the handler sees the failure (so whoever it tells finds it in failed()): a snapshot that
            // reads this count with acquire, then startedCount, sees the failed task started (WorkerPool#counters).
            FAILED.setRelease(this, failed + 1);
            engine.reportUncaught(failure);
        } finally {
            // Release: a snapshot that reads this count with acquire, then startedCount, sees a started count that
            // covers it (WorkerPool#counters; a plain store on x86).
            if (executedCounted) {
                executedCounted = false;
            } else {
                EXECUTED.setRelease(this, executed + 1);
            }
            runningTask = null;
            if (slow != null) {
                Jfr.endSlowTask(slow, engine, currentLane, task);
            }
        }
    }

    /**
     * For a future that this worker runs ({@code task} is the one running), about to complete: counts it as executed
     * now, before whoever waits on it wakes up, so that a caller who has seen it done sees it in {@code executed()}
     * (and no longer in {@code active()}); the end of {@link #runTask} then does not count it again. Counted at the
     * end instead, the future's caller read one too few in about two of five snapshots taken right after its
     * {@code get()}. False, with nothing counted, for a future this worker is not running as its task (one a task
     * runs by hand, say).
     */
    boolean countExecutedBeforeCompletion(Runnable task) {
        if (runningTask != task || executedCounted) {
            return false;
        }
        EXECUTED.setRelease(this, executed + 1); // release, as at the end of runTask
        executedCounted = true;
        return true;
    }

    /**
     * Announces that this worker is about to take a task out of a sequential lane (or to make it idle). The volatile
     * write of {@code take} is ordered before the read of the executor state (a StoreLoad), and {@code shutdownNow}
     * writes the state before reading {@code take}: so either this worker sees STOP and takes nothing, or
     * {@code shutdownNow} sees TAKING and waits ({@link #awaitNotTaking}) until the take is over. Lanes are
     * single-consumer; this keeps them so while {@code shutdownNow} drains lanes whose owner is busy in a task.
     *
     * <p>The announcement keeps the progress the word already holds (it only sets the TAKING bit), and a refused take
     * clears the bit again: so a take that sees STOP changes neither the progress nor its lane, and the word
     * {@code shutdownNow} reads after its wait is the one the last take that went ahead left.
     */
    boolean beginTake() {
        long was = (long) TAKE.getOpaque(this); // only this thread writes it
        TAKE.setVolatile(this, was | TAKING);
        if (engine.stopping()) {
            TAKE.setRelease(this, was);
            return false;
        }
        return true;
    }

    /**
     * Ends a take that went ahead: slot {@code taken} of {@code lane} is this worker's now (or, for the idle
     * transition, {@code taken} is the lane's head). The release store publishes, to whoever reads the word with
     * acquire, the progress and every write made before it (the lane's head at an earlier batch end included).
     *
     * <p>A change of lane is written in three steps, each a release store: the word to progress 0 (still TAKING),
     * the lane, then the word with the new lane's progress. A racy reader that reads the lane, the word and the lane
     * again (see {@link #takenInAcquire}) and finds the same lane twice therefore read either 0 or a figure of that
     * lane, unless the worker went to another lane and back between its reads (a statistics figure then errs for a
     * moment).
     */
    void endTake(Lane lane, long taken) {
        if ((Lane) TAKE_LANE.getOpaque(this) != lane) { // once per batch at most, in the worker's own line
            TAKE.setRelease(this, TAKING);
            TAKE_LANE.setRelease(this, lane);
        }
        TAKE.setRelease(this, taken << 1); // publishes the take to a shutdownNow that reads take next
    }

    /**
     * This worker no longer owns {@code takeLane}, whose head it wrote before giving it up: the word goes to 0 and the
     * lane to null, in that order, each a release store. A reader that still finds the lane then reads the old word
     * or 0; either way its acquire read orders the head write before its own read of the head (see
     * SequentialLane#progress). Outside any take: after {@code shutdownNow}'s wait this is the only change the pair
     * can see, and it hands nothing over that the head does not hold.
     */
    void leaveLane() {
        if ((Lane) TAKE_LANE.getOpaque(this) != null) {
            TAKE.setRelease(this, 0L);
            TAKE_LANE.setRelease(this, null);
        }
    }

    /** Ends a take in progress, if any, without progress: the way out of a failure around the tasks. */
    void endAnyTake() {
        TAKE.setRelease(this, (long) TAKE.getOpaque(this) & ~TAKING);
    }

    /**
     * The last slot this worker took from {@code lane} (or the lane's head when this worker made it idle), or -1 if
     * the word counts in another lane. Exact once {@code shutdownNow} has waited out the takes (nothing changes the
     * word's lane after that); a moment old, otherwise (see endTake).
     */
    long takenInAcquire(Lane lane) {
        if ((Lane) TAKE_LANE.getAcquire(this) != lane) {
            return -1;
        }
        long word = (long) TAKE.getAcquire(this);
        return (Lane) TAKE_LANE.getAcquire(this) == lane ? word >>> 1 : -1;
    }

    /** Called by shutdownNow after it has set STOP. */
    void awaitNotTaking() {
        int waits = 0;
        while (((long) TAKE.getVolatile(this) & TAKING) != 0) {
            waits = Waiting.pause(waits);
        }
    }

    boolean stopping() {
        return engine.stopping();
    }

    // ---- idle hand-shake --------------------------------------------------------------------------------------

    int parkState() {
        return parkState;
    }

    void parkState(int state) {
        parkState = state;
    }

    boolean casParkState(int expect, int update) {
        return PARK_STATE.compareAndSet(this, expect, update);
    }

    /** Back to ACTIVE; returns the state it leaves (PARKED, SIGNALLED or WOKEN). */
    int leaveParkState() {
        return (int) PARK_STATE.getAndSet(this, ACTIVE);
    }

    // ---- read by statistics and the checker ---------------------------------------------------------------

    /** The lane this worker runs a batch of, or null, with an acquire load (see currentLane). */
    Lane currentLaneAcquire() {
        return (Lane) CURRENT_LANE.getAcquire(this);
    }

    long startedCountOpaque() {
        return (long) STARTED.getOpaque(this);
    }

    long startedCountAcquire() {
        return (long) STARTED.getAcquire(this);
    }

    long executedCountOpaque() {
        return (long) EXECUTED.getOpaque(this);
    }

    long executedCountAcquire() {
        return (long) EXECUTED.getAcquire(this);
    }

    long failedCountOpaque() {
        return (long) FAILED.getOpaque(this);
    }

    long failedCountAcquire() {
        return (long) FAILED.getAcquire(this);
    }

    long transferCountOpaque() {
        return (long) TRANSFERS.getOpaque(this);
    }

    boolean isBusyOpaque() {
        return (boolean) BUSY.getOpaque(this);
    }

    /** The coarse clock when the item running now was taken (opaque: read by the checker). */
    long itemStampOpaque() {
        return (long) ITEM_STAMP.getOpaque(this);
    }

    /**
     * Whether this worker has been in one item (a lane's batch, or an unordered task) for longer than
     * {@code nanos} by the coarse clock {@code now}: it occupies a CPU for long stretches (or is blocked), which
     * {@link PoolPolicy#spinningPays} weighs. Racy, and coarse: both readings of the clock may lag by a few
     * milliseconds, so an item's age can be off by that much either way. A long item is then seen a little late, and
     * a brief one may be taken for long, which only makes another worker park rather than spin for a while. When
     * {@code now} is {@link Engine#STALE} (every other worker parked since the clock was last kept) the answer is no.
     */
    boolean inLongItem(long now, long nanos) {
        return isBusyOpaque() && now != Engine.STALE && now - (long) ITEM_STAMP.getOpaque(this) > nanos;
    }
}
