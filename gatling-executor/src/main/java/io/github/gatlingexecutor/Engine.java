package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Everything behind {@link GatlingExecutor}: the lane maps, the ready queue, the submit paths and the life cycle.
 *
 * <h2>Data path</h2>
 * A sequential or coalescing task goes to its context's lane ({@link SequentialLane}, {@link CoalescingLane}); the
 * submit that finds the lane idle activates it and puts the lane in the ready queue. An unordered task goes to the
 * ready queue itself. Workers take from the ready queue, run a bounded turn of a lane (whole batches until the turn has
 * lasted {@code minTurn}), and put it back at the end if it has more (the rotating barrel).
 *
 * <h2>Shutdown without losing or double-running a task</h2>
 * A submit looks its lane up (creating it if needed) <em>before</em> it reads the executor state, and the lane's state
 * decides acceptance. Shutdown writes the state first and then walks the lane maps. So a submit that read RUNNING
 * created its lane before the walk began, and the walk sees that lane: it either closes it (the submit's CAS then fails
 * and the task is rejected) or finds it active (the task is accepted and will run, or is returned by
 * {@code shutdownNow}). An unordered task is offered to the ready queue and the state read again afterwards; if it
 * changed, the submitter takes the task back out if it still can, and otherwise someone took it and will run or return
 * it, as in {@code ThreadPoolExecutor}.
 */
final class Engine {
    static final int RUNNING = 0;
    static final int SHUTDOWN = 1;
    static final int STOP = 2;
    static final int TERMINATED = 3;

    final Settings settings;
    /** Lanes with work and unordered tasks, in arrival order. */
    final ReadyQueue readyQueue = new ReadyQueue();
    /**
     * The lanes of each kind, by context. A map never shrinks its table, and while the executor runs it cannot be
     * swapped for a smaller one (README, "Memory follows the peak of live contexts"); at termination, when no lane can
     * be made live any more, each is replaced by an empty one (see {@link #terminated}), so that a terminated executor
     * that is still referenced does not keep tables sized for the most contexts ever live at once. Not final for that
     * alone, and not volatile: the submit path reads them as plain fields (as it read the final ones), and a thread
     * that still reads a replaced map finds no live lane there (every lane was closed or released before termination,
     * and a submit that makes one there is refused and drops it).
     */
    private ConcurrentHashMap<Object, Lane> sequentialLanes = new ConcurrentHashMap<>();
    private ConcurrentHashMap<Object, Lane> coalescingLanes = new ConcurrentHashMap<>();
    final WorkerPool pool;
    final Checker checker;
    final TaskTimer timer;
    /**
     * The threads inside this executor's thread factory now (see {@link StartGate#newThread}): a submitter or
     * scheduling caller whose submit starts a worker or the checker. The start counts as a thread on its way, which
     * termination waits for, so a {@code close()} the factory makes there would wait for itself (see {@link #close}).
     * Touched only by thread starts through a factory.
     */
    final Set<Thread> inThreadFactory = ConcurrentHashMap.newKeySet();
    /** The read side of the counters below and of the lanes: every statistics snapshot. */
    final Snapshots snapshots = new Snapshots(this);
    /**
     * The public object over this engine, set once by it. Nothing reads it: it keeps that object reachable for as long
     * as the engine is, through its threads, lane handles and futures, as a {@code ThreadPoolExecutor}'s workers keep
     * their pool. Without it, a caller that kept only lane handles left the public object to the collector while the
     * executor ran on, and whatever held it weakly lost it: Micrometer's meters then read NaN.
     */
    @SuppressWarnings("unused")
    Object owner;

    private volatile int state = RUNNING;
    /**
     * A worker start failed and left no worker alive. Work then waits with nobody to run it, and if the checker could
     * not start either, nobody to retry: a submit that appends to an active lane wakes nobody, and the lane was
     * activated when the start failed. While this is set, every submit asks for a worker first (whether it appends,
     * replaces or is refused), and so do shutdown and every wait for termination. A field of the engine, whose line
     * submitters read anyway and nobody writes per task; written only on the way in and out of this state, under the
     * pool's lock (see WorkerPool#startFailed).
     */
    private volatile boolean starved;
    /**
     * shutdownNow calls that have not finished draining. Incremented before STOP is written, so whoever sees STOP and
     * a zero here knows every accepted task has been drained or has run; termination (which drops the lane maps)
     * waits for it.
     */
    private final AtomicInteger draining = new AtomicInteger();
    private final CountDownLatch terminated = new CountDownLatch(1);
    /**
     * Threads of this executor that have left its bookkeeping and may not have died yet: a worker once it gives its
     * pool slot back, the checker once it is about to claim termination. Each adds itself before the step that may
     * let the executor terminate, so that {@link #awaitTermination} can wait for it to die and {@link #isTerminated}
     * (the public one) reads false until it has: no thread outlives termination, not even by the microseconds of its
     * exit. Weak: a thread that runs is reachable anyway, and an ended one must not be kept from the collector (a
     * retired auxiliary worker's thread, over the executor's life). Cleared and dead entries are pruned at each
     * addition.
     */
    private final ConcurrentLinkedQueue<WeakReference<Thread>> exiting = new ConcurrentLinkedQueue<>();

    /**
     * Accepted submits, per submitting thread (see {@link SubmitCounter} for why not an adder). The cells of ended
     * threads are folded at most once a second: they cost a little memory each until then.
     */
    private final SubmitCounter submitted = new SubmitCounter(1_000_000_000L);
    private final LongAdder coalesced = new LongAdder();
    private final LongAdder failedFutures = new LongAdder();
    private final AtomicLong returned = new AtomicLong();
    /**
     * Runs of periodic tasks already cancelled (by {@code shutdown()} or their caller) while they waited in a lane or
     * the ready queue, which {@code shutdownNow()} then drained: not returned (ScheduledThreadPoolExecutor drops them
     * at shutdown), but counted as executed, as the turn that would have skipped them counts it.
     */
    private final AtomicLong skippedAtStop = new AtomicLong();
    /*
     * Lanes released too early (see noteRelease and PoolPolicy#releasesAllAtPark). Written only by submitters that
     * found their context's lane released within its grace, a path that has just paid a map removal and will pay an
     * insertion; races between two such submitters only blur a heuristic. Volatile for clean 64-bit reads; no
     * ordering rests on them.
     */
    /** When the last early release was seen (System.nanoTime). */
    private volatile long lastEarlyRelease;
    /** Early releases in the current run, each after the first within {@link #EARLY_GAP_NANOS} of the one before. */
    private volatile int earlyStreak;
    /** Until when workers keep their young lanes through their parks. */
    private volatile long keepYoungLanesUntil = System.nanoTime();
    /**
     * Early releases this dense (one every 100 us, {@link #EARLY_STREAK} in a row: more than 10,000 a second, each a
     * map removal, an insertion and an allocation) cost more than a worker's timed parks. At 10,000 tasks a second over
     * 1,024 contexts, about one submit in twenty comes back within the grace: far sparser, and there the sparse
     * workers' untimed parks are what keeps the wait short.
     */
    private static final long EARLY_GAP_NANOS = 100_000L;
    private static final int EARLY_STREAK = 8;
    /** How long a dense run of early releases keeps the workers' young lanes through their parks. */
    private static final long KEEP_YOUNG_NANOS = 1_000_000_000L;
    /** Null when no capacity limit is set: the submit paths then skip admission entirely. */
    final Admission admission;
    /** A {@code maxQueuedPerContext} limit is set: sequential lanes keep their head exact per task for it. */
    final boolean laneHeadPerTask;

    Engine(Settings settings) {
        this.settings = settings;
        this.admission = settings.bounded() ? new Admission(this, settings) : null;
        this.laneHeadPerTask = admission != null && admission.perContext > 0;
        this.timer = new TaskTimer(this);
        this.checker = new Checker(this);
        this.pool = new WorkerPool(this);
        Jfr.executorCreated(this);
    }

    int state() {
        return state;
    }

    // ---- the coarse clock ---------------------------------------------------------------------------------------

    /** The coarse clock's value when nobody keeps it fresh (the workers that did are parked). */
    static final long STALE = Long.MIN_VALUE;
    /** The clock is written at most this often: its readers need milliseconds, and each write costs them a miss. */
    private static final long TICK_NANOS = 1_000_000L;
    private static final VarHandle CLOCK = MethodHandles.arrayElementVarHandle(long[].class);
    /** The clock's slot in {@link #clockCell}: alone on its cache line, away from the fields every submit reads. */
    private static final int CLOCK_SLOT = 8;

    /**
     * A System.nanoTime value at most a few milliseconds old while work flows, for stamping accepted tasks without a
     * clock read per task (ages are computed when read, from a fresh clock). Workers refresh it when they read the
     * clock anyway (every few dozen items, each batch, after parking, unless a worker resumes with no idle lanes: then
     * it marks the clock STALE), the checker every {@link Checker#CLOCK_TICK_NANOS} while any worker is awake, until
     * four quiet ticks stall it; a write happens only when the value is a millisecond old. A worker about to park marks
     * it STALE, and the next submitter reads the clock itself: otherwise the first task after a quiet spell would be
     * stamped with the time work last flowed. Opaque accesses: a stamp needs a recent value, not ordering.
     */
    private final long[] clockCell = new long[2 * CLOCK_SLOT + 1];

    {
        clockCell[CLOCK_SLOT] = STALE;
    }

    long stamp() {
        long t = (long) CLOCK.getOpaque(clockCell, CLOCK_SLOT);
        if (t == STALE) {
            t = System.nanoTime();
            // Only over STALE: a worker's fresher tick must not be overwritten, and a worker that marked the clock
            // stale again since is about to park, so our value must not pose as a fresh one for long either; the
            // task we stamp wakes a worker or joins an active lane, whose worker ticks.
            restartClock(t, true);
        }
        return t;
    }

    /**
     * The coarse clock as it is, for rough durations: at most a few milliseconds behind while any worker is awake,
     * and {@link #STALE} (unknown) once the last awake worker parked. One opaque load of a line written at most once
     * a millisecond.
     */
    long coarseNowOpaque() {
        return (long) CLOCK.getOpaque(clockCell, CLOCK_SLOT);
    }

    void tick(long now) {
        long t = (long) CLOCK.getOpaque(clockCell, CLOCK_SLOT);
        if (t == STALE) {
            // As a submitter restarts it: a worker that set it with a plain store and then went into a long task left
            // it frozen at this value, with the checker asleep on it.
            restartClock(now, false);
        } else if (now - t >= TICK_NANOS) {
            CLOCK.setOpaque(clockCell, CLOCK_SLOT, now);
        }
    }

    /**
     * Brings a running clock up to date after a thread start, which can take long (a slow thread factory, a loaded
     * machine) while nobody ticks: before the first worker and the checker run, the clock holds the time of the submit
     * that asked for them, and a task submitted right after their starts was stamped with it. With a factory that took
     * 100 ms a thread, a task that had just arrived read 200 ms in {@code oldestQueuedAge()}. A CAS, not a store: over
     * a clock a worker has just marked STALE, this value would pose as fresh while nobody keeps it so ({@link #stamp}
     * sets a stale clock itself).
     */
    void tickAfterStart() {
        long t = (long) CLOCK.getOpaque(clockCell, CLOCK_SLOT);
        if (t != STALE) {
            long now = System.nanoTime();
            if (now - t >= TICK_NANOS) {
                CLOCK.compareAndSet(clockCell, CLOCK_SLOT, t, now);
            }
        }
    }

    /**
     * Sets a stale clock, and wakes the checker if it sleeps on the stale clock ({@link Checker#stalled}), or, for a
     * submitter, if it dozes while a worker is awake (see {@link Checker#clockRestarted}). The CAS is a full fence
     * before the checker's flags are read: with the checker's volatile write of its flag before its volatile read of
     * the clock (or of the park states), one of the two sees the other. Nothing if someone set the clock first.
     */
    private void restartClock(long now, boolean submitter) {
        if (CLOCK.compareAndSet(clockCell, CLOCK_SLOT, STALE, now)) {
            checker.clockRestarted(submitter);
        }
    }

    void markClockStaleOpaque() {
        CLOCK.setOpaque(clockCell, CLOCK_SLOT, STALE);
    }

    /** Whether the clock is stale, read with a volatile load (for the hand-shake of {@link Checker#stalled}). */
    boolean isClockStale() {
        return (long) CLOCK.getVolatile(clockCell, CLOCK_SLOT) == STALE;
    }

    boolean stopping() {
        return state >= STOP;
    }

    ConcurrentHashMap<Object, Lane> lanes(boolean coalescing) {
        return coalescing ? coalescingLanes : sequentialLanes;
    }

    /** Both lane maps, sequential first: for the walks that visit every lane (shutdownNow, quiescence, snapshots). */
    List<ConcurrentHashMap<Object, Lane>> laneMaps() {
        return List.of(sequentialLanes, coalescingLanes);
    }

    // ---- submit paths ---------------------------------------------------------------------------------------

    Executor laneHandle(Object context, boolean coalescing) {
        return new LaneHandle(this, context, coalescing);
    }

    void execute(Runnable command) {
        submit(command, false);
    }

    /**
     * {@code execute}, or, with {@code offer}, {@code offer}: false instead of an exception for capacity or shutdown.
     */
    boolean submit(Runnable command, boolean offer) {
        if (command instanceof SequentialRunnable) {
            return submit(SEQUENTIAL, contextOf((SequentialRunnable) command), command, null, false, offer);
        } else if (command instanceof CoalescingRunnable) {
            return submit(COALESCING, contextOf((CoalescingRunnable) command), command, null, false, offer);
        }
        return submit(PLAIN, null, command, null, false, offer);
    }

    static Object contextOf(SequentialRunnable task) {
        Object context = task.context();
        if (context == null) {
            throw new NullPointerException("context() of SequentialRunnable " + task.getClass().getName()
                    + " returned null");
        }
        return context;
    }

    static Object contextOf(CoalescingRunnable task) {
        Object context = task.context();
        if (context == null) {
            throw new NullPointerException("context() of CoalescingRunnable " + task.getClass().getName()
                    + " returned null");
        }
        return context;
    }

    static final int SEQUENTIAL = 0;
    static final int COALESCING = 1;
    static final int PLAIN = 2;

    /** Submits to the sequential or coalescing lane of {@code context}; see {@link #submit(int, Object, Runnable,
     * LaneHandle, boolean, boolean)}. */
    void submitToLane(boolean coalescing, Object context, Runnable task, LaneHandle handle, boolean internal) {
        submit(coalescing ? COALESCING : SEQUENTIAL, context, task, handle, internal, false);
    }

    /**
     * Every submission ends here. {@code kind}: {@link #SEQUENTIAL} or {@link #COALESCING} (to the lane of
     * {@code context}) or {@link #PLAIN}. {@code handle}: the lane handle used, whose cached lane skips the map lookup,
     * or null. {@code internal}: a due scheduled task, which may enter after shutdown and is never refused for
     * capacity. {@code offer}: return false rather than throw for capacity or shutdown. Returns whether the task was
     * accepted (always true unless {@code offer}).
     */
    boolean submit(int kind, Object context, Runnable task, LaneHandle handle, boolean internal, boolean offer) {
        // First, whatever the outcome: a submit that appends, replaces or is refused because nothing runs must not
        // leave the stranded work without a worker (see starved).
        retryIfStarved();
        if (admission == null) {
            if (offer) {
                try {
                    attempt(kind, context, task, handle, false, false);
                } catch (RejectedExecutionException shutDown) {
                    return false;
                }
            } else {
                attempt(kind, context, task, handle, internal, false);
            }
            return true;
        }
        return submitBounded(kind, context, task, handle, internal, offer);
    }

    /** The bounded path: limits, the overflow policy, waiting submitters (see {@link Admission}). */
    private boolean submitBounded(int kind, Object context, Runnable task, LaneHandle handle, boolean internal,
                                  boolean offer) {
        Object queueKey = kind == SEQUENTIAL ? context : null;
        if (kind == COALESCING && !internal && !admission.coalescingWaits(context)
                && replacePending(context, task, handle)) {
            return true; // it takes the place of the task it replaced: no room needed, nobody overtaken
        }
        int outcome;
        try {
            if (internal) {
                // A due scheduled task is never refused for capacity: admitted over the limit if need be.
                if (attempt(kind, context, task, handle, true, true) == Admission.ADMITTED_OVER) {
                    admission.countOverLimit();
                }
                return true;
            }
            outcome = admission.mustQueue(queueKey);
            if (outcome == Admission.ADMITTED) {
                outcome = attempt(kind, context, task, handle, false, false);
                if (outcome == Admission.ADMITTED) {
                    return true;
                }
            }
            if (!offer && admission.policy.blocks() && isOwnWorker()) {
                // No self-deadlock: a task of this executor is never made to wait for room its own worker must make.
                // (An offer never waits anyway, and asks for room: it gets false like anyone's.)
                if (attempt(kind, context, task, handle, false, true) == Admission.ADMITTED_OVER) {
                    admission.countOverLimit();
                }
                return true;
            }
        } catch (RejectedExecutionException shutDown) {
            if (offer) {
                return false;
            }
            throw shutDown;
        }
        boolean waits = !offer && admission.policy.blocks();
        if (!waits && countedAsRefusedForCapacity()) {
            if (offer) {
                admission.refuseOffer(context, queueKey, outcome);
                return false;
            }
            throw admission.rejectNow(task, context, outcome);
        }
        if (state != RUNNING) {
            // Shut down since this submit looked: the refusal is for shutdown, which is not counted, whatever the
            // limits said. (Submitters that shutdown woke stay registered in the admission queues for a moment, and an
            // offer that found them there was refused as if it had to wait for room, and counted in rejected().)
            if (offer) {
                return false;
            }
            throw reject(task);
        }
        admission.await(queueKey, context, kind == COALESCING, outcome,
                () -> attempt(kind, context, task, handle, false, false), task);
        return true;
    }

    /**
     * For a submit refused for capacity without a wait (the reject policy, an offer, or a submit under block called
     * back where it cannot wait, see Admission#await): counts it in {@code rejected()} and returns true if the executor
     * still runs; false if it has been shut down since the submit looked, which makes it a refusal for shutdown, not
     * counted. The state is read last, so a count made after it could come after termination, which waits for no
     * submitter: a terminated executor read {@code rejected()} one lower than a moment later. Termination waits for
     * these few instructions instead ({@link #readyToTerminate}); their count is taken before the state is read, as a
     * waiter's count is before it reads the state (see Admission), so either this sees the shutdown or the shutdown's
     * look for termination sees this. Only refusals pay for it.
     */
    boolean countedAsRefusedForCapacity() {
        refusalsInFlight.incrementAndGet();
        try {
            if (state != RUNNING) {
                return false;
            }
            admission.countRejected();
            return true;
        } finally {
            if (refusalsInFlight.decrementAndGet() == 0 && state != RUNNING) {
                wakeForTermination(); // termination may have been held back for it
            }
        }
    }

    /** Refusals for capacity between their look at the state and their count (see countedAsRefusedForCapacity). */
    private final AtomicInteger refusalsInFlight = new AtomicInteger();

    /**
     * A coalescing submit that replaces the lane's waiting task needs no room, so it neither waits nor queues behind
     * parked submitters (but for those of its own context: see {@link Admission#coalescingWaits}): true if it did.
     * The lane is looked up before the state is read (see the class comment), and the replacement is one CAS that
     * succeeds only on an active lane, whose tasks run or are drained.
     */
    private boolean replacePending(Object context, Runnable task, LaneHandle handle) {
        Lane lane = handle == null ? null : handle.cachedLaneAcquire();
        if (lane == null) {
            lane = coalescingLanes.get(context);
        }
        if (lane == null || state != RUNNING) {
            return false;
        }
        SubmitCounter.Cell counting = submitted.begin();
        boolean replaced;
        try {
            replaced = ((CoalescingLane) lane).replacePending(task);
        } catch (RuntimeException | Error unexpected) {
            settle(submitted.abort(counting));
            throw unexpected;
        }
        if (!replaced) {
            settle(submitted.abort(counting));
            return false;
        }
        settle(submitted.commit(counting));
        if (handle != null) {
            handle.cacheLaneRelease(lane);
        }
        return true;
    }

    private boolean isOwnWorker() {
        Worker w = Worker.current();
        return w != null && w.engine == this;
    }

    /**
     * One attempt to accept {@code task}: {@link Admission#ADMITTED}; or, when bounded, {@link Admission#FULL_CONTEXT}
     * or {@link Admission#FULL_EXECUTOR} (nothing accepted), or with {@code force} {@link Admission#ADMITTED_OVER}.
     * Throws {@link RejectedExecutionException} if the executor is shut down (and the task is not internal).
     */
    private int attempt(int kind, Object context, Runnable task, LaneHandle handle, boolean internal, boolean force) {
        if (kind == PLAIN) {
            return attemptPlain(task, internal, force);
        }
        return attemptLane(kind == COALESCING, context, task, handle, internal, force);
    }

    /**
     * The bounded path's steps are methods of their own below, so the unbounded submit does not carry their code: at
     * 444 bytes of bytecode this method had it all. At 348 bytes (332 when it was measured) it is over C2's inlining
     * limit for hot callees (325), as is SequentialLane#offer (345), so each is a call per submit ("hot method too
     * big"). Both brought under the limit were inlined, and a hot-key submit then cost more, not less (about 2 ns at
     * the minimums, docs/hand-off-experiments.md, forty-eighth set): they stay calls.
     */
    private int attemptLane(boolean coalescing, Object context, Runnable task, LaneHandle handle, boolean internal,
                            boolean force) {
        Lane cached = handle == null ? null : handle.cachedLaneAcquire();
        Lane lane = cached;
        Admission adm = admission;
        boolean reserving = adm != null && adm.total > 0; // an executor-wide limit: a place to take before the offer
        int reserved = NOT_RESERVED; // or the reservation's outcome once taken
        // Forced, the limit is passed negated: the lane's CAS that accepts the task also says if it went over.
        int limit = adm == null || coalescing ? 0 : force ? -adm.perContext : adm.perContext;
        boolean over = false;
        boolean activated = false;
        SubmitCounter.Cell counting;
        for (;;) {
            if (lane == null) {
                lane = laneOf(coalescing, context);
            }
            // The lane is looked up (or created) before the state is read: see the class comment. A timer's task is
            // not refused for shutdown; but if a shutdownNow() from the caller's code run on its way (the lookup just
            // made, the thread factory) took it in flight, it is that call's now (see TaskTimer#dispatchLocked).
            if (internal) {
                if (!timer.land(task)) {
                    giveBack(reserved);
                    discardIfUnused(lane);
                    return Admission.ADMITTED; // not accepted here, nor counted: handed back instead
                }
            } else if (state != RUNNING) {
                throw rejectLooked(lane, reserved, task);
            }
            // From here to the count, the task may be seen by a worker before this thread knows it was accepted:
            // termination waits (see SubmitCounter#begin). None of the caller's code runs in between.
            counting = submitted.begin();
            int outcome;
            try {
                if (reserving && reserved == NOT_RESERVED) {
                    reserved = reserve(adm, coalescing, lane, task, limit, force);
                    if (reserved == REPLACED_WAITING) {
                        break;
                    }
                    if (reserved == Admission.FULL_CONTEXT || reserved == Admission.FULL_EXECUTOR) {
                        settle(submitted.abort(counting));
                        if (reserved == Admission.FULL_EXECUTOR) {
                            discardIfUnused(lane); // it may have been created just now
                        }
                        return reserved;
                    }
                }
                outcome = lane.offer(task, limit);
            } catch (RuntimeException | Error unexpected) {
                settle(submitted.abort(counting));
                throw unexpected;
            }
            if (outcome == Lane.ACCEPTED) {
                break;
            }
            if (outcome == Lane.ACCEPTED_OVER) {
                over = true;
                break;
            }
            if (outcome == Lane.ACTIVATED) {
                activated = true;
                break;
            }
            if (outcome == Lane.REPLACED) {
                if (reserved >= 0) {
                    adm.release(); // the replaced task's place is ours: the one reserved is not needed
                    reserved = NOT_RESERVED;
                }
                break;
            }
            settle(submitted.abort(counting)); // not accepted this time round
            if (outcome == Lane.RELEASED) {
                if (internal) {
                    timer.takeOff(task); // in no queue again while the context is looked up once more
                }
                try {
                    lanes(coalescing).remove(context, lane); // help the releasing thread, then look up again
                    noteRelease(lane, System.nanoTime());
                    lane = laneOf(coalescing, context);
                } catch (RuntimeException | Error contextFailed) {
                    // Both run the context's hashCode and equals after a place may have been taken: a context that
                    // throws now (a lane handle's lane spared it the first look-up) must not keep the place for good.
                    giveBack(reserved);
                    throw contextFailed;
                }
                continue;
            }
            return refused(outcome, reserved, task);
        }
        settle(submitted.commit(counting)); // accepted: counted only now, whatever place it took (see submittedCount)
        if (activated) {
            makeReady(lane); // after the count: the lane is in no queue yet, so nothing can end before it
        }
        if (handle != null && lane != cached) {
            handle.cacheLaneRelease(lane); // not a store per task: producers on other cores may read the handle too
        }
        return over || reserved == Admission.ADMITTED_OVER ? Admission.ADMITTED_OVER : Admission.ADMITTED;
    }

    /** Gives back the place {@link #attemptLane} took ({@code reserved >= 0}), if any. */
    private void giveBack(int reserved) {
        if (reserved >= 0) {
            admission.release();
        }
    }

    /** {@link #attemptLane}'s reservation not taken yet (or given back: the task replaced a waiting one). */
    private static final int NOT_RESERVED = -1;
    /** Returned by {@link #reserve}: a coalescing task replaced a waiting one, and needs no room. */
    private static final int REPLACED_WAITING = -2;

    /** The lane of {@code context}, created if it has none. */
    Lane laneOf(boolean coalescing, Object context) {
        ConcurrentHashMap<Object, Lane> lanes = lanes(coalescing);
        Lane lane = lanes.get(context);
        if (lane == null) {
            Lane created = coalescing ? new CoalescingLane(this, context) : new SequentialLane(this, context);
            lane = lanes.putIfAbsent(context, created);
            if (lane == null) {
                lane = created;
            }
        }
        return lane;
    }

    /**
     * The bounded path's step before the offer: {@link #REPLACED_WAITING}, {@link Admission#FULL_CONTEXT} or
     * {@link Admission#FULL_EXECUTOR} (nothing taken), or a place taken ({@link Admission#ADMITTED}, or
     * {@link Admission#ADMITTED_OVER} with {@code force}).
     */
    private int reserve(Admission adm, boolean coalescing, Lane lane, Runnable task, int limit, boolean force) {
        // A coalescing task that replaces a waiting one takes its place: it needs no room.
        if (coalescing && ((CoalescingLane) lane).replacePending(task)) {
            return REPLACED_WAITING;
        }
        if (limit > 0 && !adm.looksFull() && ((SequentialLane) lane).full(limit)) {
            // Refused before it takes a place (see SequentialLane#full). Only when the executor has room, so that a
            // submit both limits refuse still meets the executor's first, as it did.
            return Admission.FULL_CONTEXT;
        }
        return adm.reserve(force);
    }

    /** A submit the state refused after its lane was looked up: its place is given back, its lane not left behind. */
    private RejectedExecutionException rejectLooked(Lane lane, int reserved, Runnable task) {
        giveBack(reserved);
        discardIfUnused(lane);
        return reject(task);
    }

    /** The lane refused the task ({@link Lane#FULL} or closed): its place is given back. */
    private int refused(int outcome, int reserved, Runnable task) {
        giveBack(reserved);
        if (outcome == Lane.FULL) {
            return Admission.FULL_CONTEXT;
        }
        throw reject(task);
    }

    void submitPlain(Runnable task, boolean internal) {
        submit(PLAIN, null, task, null, internal, false);
    }

    private int attemptPlain(Runnable task, boolean internal, boolean force) {
        if (internal) {
            if (!timer.land(task)) {
                return Admission.ADMITTED; // taken in flight by a shutdownNow() from the factory (see attemptLane)
            }
        } else if (state != RUNNING) {
            throw reject(task);
        }
        Admission adm = admission;
        int reserved = Admission.ADMITTED;
        if (adm != null && adm.total > 0) {
            reserved = adm.reserve(force);
            if (reserved == Admission.FULL_EXECUTOR) {
                return reserved;
            }
        }
        PlainTask item = new PlainTask(task, stamp());
        SubmitCounter.Cell counting = submitted.begin(); // see attemptLane
        try {
            readyQueue.offerTask(item);
        } catch (RuntimeException | Error unexpected) {
            settle(submitted.abort(counting));
            throw unexpected;
        }
        if (!internal && state != RUNNING && readyQueue.takeBack(item)) {
            settle(submitted.abort(counting));
            if (adm != null && adm.total > 0) {
                adm.release();
            }
            throw reject(task); // shut down meanwhile and nobody took it: it was never accepted
        }
        settle(submitted.commit(counting)); // accepted: counted only now, whatever place it took (see submittedCount)
        // After the count, as a lane's activation: a thread start runs the caller's thread factory, which termination
        // must not wait for as it waits for a submit in flight.
        pool.signalWork();
        return reserved;
    }

    /**
     * A submit found {@code released}, its context's lane, released: if that came soon after the lane went idle, the
     * lane was released too early (see {@link PoolPolicy#releasesAllAtPark}). A lane released before it ever went idle
     * (discarded by a rejected submit) has no idle stamp and counts as old. {@code now}: System.nanoTime (the rule's
     * tests run it on a clock of their own).
     */
    void noteRelease(Lane released, long now) {
        long idleSince = released.idleSince;
        if (idleSince == 0 || now - idleSince >= Worker.IDLE_GRACE_NANOS) {
            return; // never idle (discarded by a rejected submit), or released after its grace, as it should be
        }
        long gap = now - lastEarlyRelease;
        lastEarlyRelease = now;
        int streak = gap < EARLY_GAP_NANOS ? earlyStreak + 1 : 1;
        if (streak == EARLY_STREAK) {
            streak = 0;
            keepYoungLanesUntil = now + KEEP_YOUNG_NANOS;
        }
        earlyStreak = streak;
    }

    /** Whether lanes were released too early, densely, within the last second (see {@link #noteRelease}). */
    boolean releasedEarlyLately(long now) {
        return now - keepYoungLanesUntil < 0;
    }

    /**
     * A submit that is rejected may have created its lane: it must not stay behind. An idle lane is released (a
     * submitter racing us then looks up again and is rejected too); after termination nothing will ever run, so the
     * lane is just dropped from the map.
     */
    private void discardIfUnused(Lane lane) {
        if (lane.releaseIfIdle() || state == TERMINATED) {
            lane.unmap();
        }
    }

    void makeReady(Lane lane) {
        readyQueue.offerLane(lane, stamp());
        pool.signalWork();
        if (state == TERMINATED) {
            readyQueue.dropLanes(); // activated before shutdownNow closed it, offered only after termination
        }
    }

    RejectedExecutionException rejectShutdown(Runnable task) {
        return reject(task);
    }

    private RejectedExecutionException reject(Runnable task) {
        return new RejectedExecutionException("executor " + settings.name + " has been shut down; rejected "
                + Messages.describe(task));
    }

    /** Submits a future (or a due scheduled task) to wherever its kind says. */
    void dispatch(TaskFuture<?> f, boolean internal) {
        switch (f.kind) {
            case TaskFuture.SEQUENTIAL:
                submitToLane(false, f.context, f, null, internal);
                break;
            case TaskFuture.COALESCING:
                submitToLane(true, f.context, f, null, internal);
                break;
            default:
                submitPlain(f, internal);
        }
    }

    <T> Future<T> submit(Runnable task, T result) {
        TaskFuture<T> f = TaskFuture.of(this, task, Executors.callable(task, result));
        dispatch(f, false);
        return f;
    }

    <T> Future<T> submit(Callable<T> task) {
        TaskFuture<T> f = TaskFuture.of(this, task, task);
        dispatch(f, false);
        return f;
    }

    /**
     * The deadline of a wait of {@code nanos} from now, for the timed calls, which all wait by its difference from the
     * clock. A timeout of zero or less has passed: it counts as zero, because now plus a value near
     * {@code Long.MIN_VALUE} wraps round to a deadline that reads as centuries away (a timeout of
     * {@code Long.MIN_VALUE} nanoseconds, which {@code TimeUnit.toNanos} gives for any large negative timeout, waited
     * for good). A large positive one may wrap too, harmlessly: its difference from any later reading is still right.
     */
    static long deadlineIn(long nanos) {
        return System.nanoTime() + Math.max(nanos, 0L);
    }

    // ---- scheduling -----------------------------------------------------------------------------------------

    <V> ScheduledFuture<V> schedule(Runnable command, Callable<V> callable, long delay, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        Object task = command != null ? command : callable;
        @SuppressWarnings("unchecked")
        Callable<V> c = command != null ? (Callable<V>) Executors.callable(command) : callable;
        ScheduledTask<V> st = ScheduledTask.of(this, task, c, triggerTime(delay, unit), 0);
        hashNow(st);
        if (!timer.scheduleNew(st, delay <= 0)) {
            throw reject(st);
        }
        return st;
    }

    ScheduledFuture<?> schedulePeriodic(Runnable command, long initialDelay, long period, boolean fixedRate,
                                        TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (period <= 0) {
            throw new IllegalArgumentException((fixedRate ? "period" : "delay") + " must be positive, was "
                    + period);
        }
        long p = Math.max(1, Math.min(unit.toNanos(period), Settings.MAX_DURATION_NANOS));
        ScheduledTask<Void> st = ScheduledTask.of(this, command, Executors.callable(command, null),
                triggerTime(initialDelay, unit), fixedRate ? p : -p);
        hashNow(st);
        if (!timer.scheduleNew(st, initialDelay <= 0)) {
            throw reject(st);
        }
        return st;
    }

    /**
     * A delayed lane task's context is hashed when the task comes due, at its lane's lookup, on the checker: a
     * {@code hashCode} that throws would fail the task there, long after the call. Hashed once here, it throws at the
     * call (SPEC point 11), and nothing is scheduled. (One whose {@code hashCode} throws only later still fails its
     * future when due, and is not counted as a task that ran.)
     */
    private static void hashNow(ScheduledTask<?> task) {
        Object context = task.context;
        if (context != null) {
            context.hashCode();
        }
    }

    private static long triggerTime(long delay, TimeUnit unit) {
        // Clamped so that differences between trigger times cannot overflow.
        long d = Math.min(Math.max(unit.toNanos(delay), 0), Settings.MAX_DURATION_NANOS);
        return System.nanoTime() + d;
    }

    /**
     * A periodic task finished a run ({@code skipped} false) or had its pending run replaced in a coalescing lane
     * ({@code skipped}): queue its next run, or stop it if the executor is shutting down. A skipped task never
     * started, so from {@code shutdownNow} on it is the caller's: the timer takes it until {@code shutdownNow}'s
     * last drain (see {@link #stopAndDrain}) instead of refusing it, and only a refusal cancels it.
     */
    void reschedule(ScheduledTask<?> task, boolean skipped) {
        if (!timer.schedule(task, skipped)) {
            task.cancel(false);
        }
    }

    /**
     * A submitter is about to replace a coalescing lane's pending periodic run ({@code skipEnds} when its CAS failed,
     * or once the task is back on the timer). Counted from before the CAS, so {@code shutdownNow}, which closes every
     * coalescing lane with a CAS on the same slot, sees every replacement that won against its close and waits for
     * its put-back. Only this rare case pays the count; a plain coalescing submit does not. Termination does not
     * read it: a periodic task is a {@code Future}, so its replacement is also counted by {@link #completionBegins},
     * from before this count begins until after it ends.
     */
    void skipBegins() {
        skipsInFlight.incrementAndGet();
    }

    void skipEnds() {
        skipsInFlight.decrementAndGet();
    }

    /**
     * A submitter is about to replace a coalescing lane's pending task that is a {@code Future} ({@code completionEnds}
     * once the CAS failed, or once that future is cancelled, or, a periodic task, put back or cancelled): counted
     * from before the CAS. The replacement may run, and a shut-down executor find itself quiescent (or a shutdownNow
     * close the lane), before this thread completes the replaced future; terminated then, the executor had a future
     * of its own neither done, nor cancelled, nor returned. So termination waits for the count
     * ({@link #readyToTerminate}), which anyone who reaches quiescence or closes the lane reads after the replacing CAS
     * it saw. Not waited for by shutdownNow: a caller's own future's cancel or done() may be the code that calls it.
     * Only replacements of futures pay the count; a plain coalescing submit does not.
     */
    void completionBegins() {
        completionsInFlight.incrementAndGet();
    }

    void completionEnds() {
        if (completionsInFlight.decrementAndGet() == 0 && state >= SHUTDOWN) {
            wakeForTermination(); // termination may have been held back for it
        }
    }

    /** Replaced futures not yet completed by their replacing submitters (see {@link #completionBegins}). */
    private final AtomicInteger completionsInFlight = new AtomicInteger();

    /**
     * Set on a thread while it cancels a future that its coalescing submit replaced (see {@link #completionBegins}).
     * That cancel may be the caller's own code (a {@code FutureTask}'s {@code done()}), run while termination waits
     * for it: a {@code close()} from there would wait for itself, so it throws instead ({@link #close}). Only
     * replacements of futures pay for it.
     */
    private final ThreadLocal<Boolean> cancellingReplaced = new ThreadLocal<>();

    /** Cancels {@code future}, which a coalescing submit on this thread replaced (see {@link #cancellingReplaced}). */
    void cancelReplacedFuture(Future<?> future) {
        if (cancellingReplaced.get() != null) {
            future.cancel(false); // nested, in the code of an outer one's cancel: that one clears the mark
            return;
        }
        cancellingReplaced.set(Boolean.TRUE);
        try {
            future.cancel(false);
        } finally {
            cancellingReplaced.remove();
        }
    }

    /**
     * A coalescing task was replaced before it started. A periodic task's run is skipped and its schedule goes on; any
     * other future is cancelled (if the replacing submit is the timer's dispatch, once the timer's lock is released).
     */
    void replaced(Runnable replaced) {
        countCoalesced();
        if (ScheduledTask.isPeriodic(replaced)) {
            ((ScheduledTask<?>) replaced).skipRun();
        } else if (replaced instanceof Future) {
            timer.cancelReplaced((Future<?>) replaced);
        }
    }

    // ---- failures and counters ------------------------------------------------------------------------------

    /** One accepted coalescing task will not run: replaced, or submitted again while pending (see CoalescingLane). */
    void countCoalesced() {
        coalesced.increment();
    }

    void reportUncaught(Throwable failure) {
        Thread t = Thread.currentThread();
        Thread.UncaughtExceptionHandler h = settings.exceptionHandler != null ? settings.exceptionHandler
                : t.getUncaughtExceptionHandler();
        try {
            h.uncaughtException(t, failure);
        } catch (Throwable ignored) {
            // a handler that throws must not take the worker down with it
        }
    }

    void countFailedFuture(int delta) {
        failedFutures.add(delta);
    }

    /**
     * Tasks accepted, each counted by its submit once it is accepted, bounded or not. Not by the place a bounded
     * submit takes in the executor, though that would spare it this increment: a place is taken before the submit
     * knows it is accepted, and given back when its lane's own limit, a shutdown or its context's look-up refuses it
     * after all, so a read between the two counted a task never accepted, in {@code submitted()} and in
     * {@code queued()}, and the next read counted one fewer: the count went down.
     */
    long submittedCount() {
        return submitted.sum();
    }

    /**
     * For the checker, once {@link #readyToTerminate}: waits for the submits in flight, whose tasks may already have
     * run (see {@link SubmitCounter#othersSettled}); false if a virtual thread's is, which looks for termination again
     * after its count.
     */
    boolean submitsSettled() {
        return submitted.othersSettled();
    }

    long coalescedCount() {
        return coalesced.sum();
    }

    long returnedCount() {
        return returned.get();
    }

    /** See {@link #skippedAtStop}. */
    long skippedAtStopCount() {
        return skippedAtStop.get();
    }

    long failedFutureCount() {
        return failedFutures.sum();
    }

    /**
     * The lanes mapped, and, once {@code shutdownNow} has closed and unmapped the lanes (see stopAndDrain), those a
     * worker still runs a task of: a context with a task running is live, as {@code contextStatistics()} lists it.
     * Two workers are never in one lane. Racy, as every statistic, and for a few instructions a lane may count once
     * too often: one the drain has closed but not yet unmapped, and one its worker made idle (or a release made DEAD)
     * just before, while the worker still names it as its lane.
     *
     * <p>Once terminated, none: a lane mapped then is a refused submit's, which maps its context's lane before it reads
     * the state (see the class comment) and unmaps it after; counted, it showed a terminated executor with a live
     * context for as long as that submit took (a terminated {@code ThreadPoolExecutor} likewise reports no thread).
     */
    long liveContexts() {
        if (state == TERMINATED) {
            return 0;
        }
        long mapped = sequentialLanes.mappingCount() + coalescingLanes.mappingCount();
        if (!stopping()) {
            return mapped;
        }
        for (Worker w : pool.workers()) {
            Lane lane = w.currentLane;
            if (lane != null && lane.isFinished()) {
                mapped++;
            }
        }
        return mapped;
    }

    // ---- life cycle -----------------------------------------------------------------------------------------

    private synchronized boolean advanceState(int target) {
        if (state >= target) {
            return false;
        }
        state = target;
        return true;
    }

    void shutdown() {
        if (advanceState(SHUTDOWN)) {
            timer.cancelPeriodic();
        }
        if (admission != null) {
            admission.shutdown(); // parked submitters wake and are rejected
        }
        retryIfStarved();
        wakeForTermination();
    }

    void starved(boolean noWorker) {
        if (starved != noWorker) {
            starved = noWorker;
        }
    }

    /**
     * Asks for a worker if the last start failed with none alive (see {@link #starved}); a start after STOP is refused.
     */
    private void retryIfStarved() {
        if (starved) {
            pool.signalWork();
        }
    }

    /**
     * Whether a thread this executor needs could not be started and nothing has started it since: no worker lives
     * ({@link #starved}), or the checker is absent ({@link Checker#absent}), so a worker stuck in a task is not
     * noticed; or the checker's thread is published and has not begun its rounds: for microseconds in a start, or for
     * good when the thread from a configured factory ended without running it (see {@link Checker#reclaimIfNeverRan}).
     * Waiters then ask again themselves ({@link #askingWait}).
     */
    boolean startsFailed() {
        return starved || checker.absent() || (checker.published() && !checker.running());
    }

    /**
     * For a caller about to wait up to {@code left} nanoseconds for this executor's work ({@code Long.MAX_VALUE}: no
     * bound): while a thread start has failed (see {@link #startsFailed}), asks for the thread again and returns how
     * long to wait before asking once more (at most a check period, never negative); otherwise {@code left}. The
     * caller may be the only one left to ask: with no worker alive, or every worker stuck in a task and no checker to
     * notice, nothing inside the executor will. Never blocks on a start elsewhere.
     */
    long askingWait(long left) {
        checker.reclaimIfNeverRan();
        if (!startsFailed()) {
            return left;
        }
        retryIfStarved();
        checker.retryIfAbsent();
        return Math.max(Math.min(left, settings.checkPeriodNanos), 0);
    }

    /** Replacing submits of periodic runs in flight (see {@link #skipBegins}). */
    private final AtomicInteger skipsInFlight = new AtomicInteger();

    List<Runnable> shutdownNow() {
        draining.incrementAndGet();
        try {
            return stopAndDrain();
        } finally {
            draining.decrementAndGet();
            wakeForTermination();
        }
    }

    private List<Runnable> stopAndDrain() {
        advanceState(STOP);
        if (admission != null) {
            admission.shutdown(); // parked submitters wake, see the state and are rejected
        }
        // The timer first. Its lock waits out a dispatch in progress, whose task then lies in a lane or the ready
        // queue for the drains below; after that the timer dispatches nothing (it re-reads STOP under the lock).
        // Drained last, a task dispatched between the ready-queue drain and the timer drain would be in neither.
        // Periodic tasks are not cancelled: those waiting for a run are returned, as ScheduledThreadPoolExecutor
        // does. One running now is cancelled when its run ends (its reschedule is refused).
        List<ScheduledTask<?>> notDue = timer.drain();
        // A shutdown() called just before this one may still be cancelling periodic tasks it took out of the timer:
        // their runs waiting in lanes must be seen cancelled by the lane drain below, not returned and cancelled after.
        timer.awaitPeriodicCancels();
        List<Runnable> out = new ArrayList<>();
        // From here no worker starts taking a task out of a sequential lane; wait out the takes already begun.
        for (Worker w : pool.workers()) {
            w.awaitNotTaking();
        }
        pool.interruptAll();
        for (Object item; (item = readyQueue.poll()) != null; ) {
            if (item instanceof PlainTask) {
                out.add(((PlainTask) item).task);
            }
        }
        // Each lane is unmapped once closed: no task can enter it any more, and a submit that comes now looks its
        // context up, meets STOP and drops the lane it made (see discardIfUnused). Left mapped until termination, a
        // lane whose worker ran on in a task that outlived the interrupt kept counting as live (see liveContexts).
        for (ConcurrentHashMap<Object, Lane> lanes : laneMaps()) {
            for (Lane lane : lanes.values()) {
                lane.closeAndDrain(out);
                lane.unmap();
            }
        }
        // A periodic task's run whose future is done waits for nothing: shutdown() cancelled it (as
        // ScheduledThreadPoolExecutor does, which removes it from its queue then), or its caller did. Returned, it
        // would be a future that is already cancelled, which the caller can neither run nor wait for.
        int drained = out.size();
        out.removeIf(r -> ScheduledTask.isPeriodic(r) && ((ScheduledTask<?>) r).isDone());
        skippedAtStop.addAndGet(drained - out.size());
        returned.addAndGet(out.size());
        out.addAll(notDue);
        // A submit that replaced a periodic task's pending run before its lane closed puts the task back on the timer
        // for its next period; it never started, so it is the caller's. Every such submit announced itself before its
        // CAS (skipBegins), and the lanes are closed now, so no new one can begin: wait for the put-backs (a few
        // instructions each, under the timer's lock), then take them. Not when this thread holds that lock (a
        // shutdownNow from a context's hashCode or the thread factory, on a dispatch): the put-backs wait for it, so
        // the wait would never end; a put-back that comes after the drain below is refused and cancels its task.
        if (!timer.isHeldByCurrentThread()) {
            for (int waits = 0; skipsInFlight.get() != 0; ) {
                waits = Waiting.pause(waits);
            }
        }
        out.addAll(timer.drainAfterStop());
        return out;
    }

    /**
     * After a change that may let the executor terminate: idle workers re-check quiescence, and the checker (or, when
     * its thread never started, the caller) claims termination if it is due.
     */
    void wakeForTermination() {
        pool.wakeAll();
        if (!checker.wake() && readyToTerminate() && submitted.othersSettled()) {
            terminated(false); // no checker thread: claimed here instead (safe from any thread)
        }
    }

    /**
     * After a submit's {@link SubmitCounter#commit} or {@link SubmitCounter#abort}: {@code lookAgain} (the call's
     * result) says termination may have been put off for it, and then, if the executor is shut down, it is looked for.
     * Not otherwise: a platform thread's commit is an opaque and a release store, not the fence a read of the state
     * after them would need; termination's claimer waits for them instead (see {@link SubmitCounter#othersSettled}).
     */
    private void settle(boolean lookAgain) {
        if (lookAgain && state != RUNNING) {
            wakeForTermination();
        }
    }

    /**
     * Shut down, no worker left, and no accepted task left anywhere (or all of it drained by shutdownNow). After a
     * shutdownNow, also no {@code shutdown()}'s cancels of periodic tasks under way ({@link TaskTimer#cancelling}):
     * a shutdownNow made under the timer's lock, which those cancels need, finishes without waiting for them. In
     * either case, also no replaced future still to be cancelled, nor a replaced periodic run still to be put back or
     * cancelled (see {@link #completionBegins}), read last: after the walk or drain that saw its replacement; and no
     * submitter still counted as waiting for room, on its way out after the shutdown woke it (see
     * {@link Admission#nobodyWaits}), nor a refusal for capacity not yet counted (see
     * {@link #countedAsRefusedForCapacity}). Whoever claims termination on this answer then waits for the submits in
     * flight ({@link SubmitCounter#othersSettled}), which it may only do once this holds.
     */
    boolean readyToTerminate() {
        return state >= SHUTDOWN && pool.threads() == 0
                && (stopping() ? draining.get() == 0 && !timer.cancelling() : quiescent())
                && completionsInFlight.get() == 0
                && (admission == null || admission.nobodyWaits() && refusalsInFlight.get() == 0);
    }

    /**
     * After shutdown: true if no accepted work is left anywhere, in which case every lane has also been closed so no
     * late submit can slip in. Called by idle workers (the last one out ends the pool) and by the checker.
     *
     * <p>A lane closed here is unmapped at once, even when a lane further on still has work and the answer is false:
     * closed is final (its own release, from IDLE, can no longer happen), so a lane left mapped would count in
     * {@code liveContexts()} until termination, with nothing queued and nothing running. A submit that looked it up
     * before finds it closed and is refused, as the class comment has it; one that looks up after finds no lane, makes
     * one and is refused by the state (a due scheduled task cannot be that submit: none is left when this runs). Only
     * the call that closes a lane unmaps it (a released one is its releaser's to unmap): the walk is made again and
     * again, and each removal calls the context's {@code hashCode}, whose failure would be reported each time.
     */
    boolean quiescent() {
        if (!timer.noDelayedWork() || !readyQueue.isEmpty()) {
            return false;
        }
        for (ConcurrentHashMap<Object, Lane> lanes : laneMaps()) {
            for (Lane lane : lanes.values()) {
                if (!closeAndUnmapIfIdle(lane)) {
                    return false;
                }
            }
        }
        return readyQueue.isEmpty();
    }

    /** {@link #quiescent}'s step per lane: false if the lane has work; a lane this call closes, it unmaps. */
    private static boolean closeAndUnmapIfIdle(Lane lane) {
        boolean finishedBefore = lane.isFinished();
        if (!lane.closeIfIdle()) {
            return false;
        }
        if (!finishedBefore) {
            lane.unmap();
        }
        return true;
    }

    /** A worker ended, or failed to start. */
    void threadsChanged() {
        if (state >= SHUTDOWN && pool.threads() == 0) {
            checker.reclaimIfNeverRan(); // a checker thread that never ran would be left termination for good
            if (!checker.wake() && readyToTerminate() && submitted.othersSettled()) {
                terminated(false); // no checker thread to do it
            }
        }
    }

    /**
     * The checker's last act ({@code byChecker}), or that of a thread that found no checker thread to wake: terminates
     * if no worker slot is taken, under the pool's lock so that no worker can start at the same moment, and, when not
     * {@code byChecker}, only while no checker thread is published (one published meanwhile claims it itself). Returns
     * whether the executor is terminated.
     */
    boolean terminated(boolean byChecker) {
        if (state == TERMINATED) {
            return true;
        }
        if (!pool.terminateIfNoThreads(byChecker)) {
            return false;
        }
        try {
            // Emptied (of lanes a submitter failed to unmap, see Lane#unmap), then replaced with their tables: see
            // sequentialLanes.
            sequentialLanes.clear();
            coalescingLanes.clear();
            sequentialLanes = new ConcurrentHashMap<>();
            coalescingLanes = new ConcurrentHashMap<>();
            if (admission != null) {
                admission.terminated(); // the waiting submitters' tables, likewise
            }
            readyQueue.dropLanes(); // lanes queued after shutdownNow's drain, closed by it (see ReadyQueue#dropLanes)
            submitted.foldEndedNow();
            Jfr.executorTerminated(this);
        } finally {
            // Whatever failed above (its thread reports it): the state is TERMINATED, and a waiter not told would
            // wait for good, since nobody claims termination twice.
            terminated.countDown();
        }
        return true;
    }

    /** Called by the pool under its lock. */
    synchronized void markTerminated() {
        state = TERMINATED;
    }

    boolean isShutdown() {
        return state >= SHUTDOWN;
    }

    /** Terminated as far as the engine goes (the state): what the engine itself acts on. */
    boolean isTerminated() {
        return state == TERMINATED;
    }

    /** {@code isTerminated()} as callers see it: terminated, and every thread of the executor dead. */
    boolean terminatedAndThreadsGone() {
        if (state != TERMINATED) {
            if (state >= SHUTDOWN) {
                checker.reclaimIfNeverRan(); // a caller polling for the end may be the only one to look
            }
            return false;
        }
        for (WeakReference<Thread> ref : exiting) {
            Thread t = ref.get();
            if (t != null && t.isAlive()) {
                return false;
            }
        }
        return true;
    }

    /** Called by a thread of this executor on its way out (see {@link #exiting}). */
    void threadExiting() {
        Thread self = Thread.currentThread();
        boolean listed = false;
        for (WeakReference<Thread> ref : exiting) {
            Thread t = ref.get();
            if (t == self) {
                listed = true; // the checker may try to claim termination more than once
            } else if (t == null || !t.isAlive()) {
                exiting.remove(ref);
            }
        }
        if (!listed) {
            exiting.add(new WeakReference<>(self));
        }
    }

    boolean awaitTermination(long nanos) throws InterruptedException {
        long deadline = deadlineIn(nanos);
        // Once terminated, nothing is waited for but threads between their last act for the executor and their end
        // (microseconds): true whatever the caller's interrupt status, which stays as it was, as the JDK's pools do
        // (the latch's await would throw on it, and clear it, even at a count of zero). A timeout that has passed
        // waits for nothing, so it cannot be interrupted either: false, the status kept (ThreadPoolExecutor's answer).
        if (state != TERMINATED && (nanos <= 0 || !awaitTerminated(deadline))) {
            return false;
        }
        boolean interrupted = false;
        try {
            for (WeakReference<Thread> ref : exiting) {
                Thread t = ref.get();
                while (t != null && t.isAlive()) {
                    try {
                        TimeUnit.NANOSECONDS.timedJoin(t, deadline - System.nanoTime()); // at once when <= 0
                        if (t.isAlive()) {
                            return false;
                        }
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
            return true;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Waits for termination. While a thread start has failed (see {@link #startsFailed}), the wait asks for the thread
     * once per check period: accepted work must still run, and nothing else may be left to ask (a factory that failed
     * for the checker too, or every worker stuck in a task with no checker). {@code close()} then returns once the
     * factory works again.
     */
    private boolean awaitTerminated(long deadline) throws InterruptedException {
        for (;;) {
            if (terminated.await(askingWait(deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return true;
            }
            if (deadline - System.nanoTime() <= 0) {
                return false;
            }
        }
    }

    void close() {
        Worker w = Worker.current();
        // The checker's thread counts as the executor's own too: it calls the thread factory for auxiliary workers,
        // and termination waits for it to end, so a close() made by the factory there would wait for itself. So does
        // any thread while it is in the factory (a submitter starting a worker): termination waits for that start;
        // and any thread that holds the timer's lock (a context's hashCode or the factory, at a dispatch): every look
        // for termination takes that lock, and the dispatch under way counts as work (TaskTimer#noDelayedWork); and
        // any thread in the cancel of a future its coalescing submit replaced, which termination waits for.
        String where = w != null && w.engine == this ? "a task"
                : inThreadFactory.contains(Thread.currentThread()) ? "the thread factory"
                : checker.isCurrentThread() ? "the checker thread"
                : cancellingReplaced.get() != null ? "the cancel of a future a coalescing submit replaced"
                : timer.isHeldByCurrentThread() ? "code run by a scheduled task's dispatch"
                : null;
        if (where != null) {
            // The JDK's executors start the shutdown and then wait for themselves for good. The caller asked for the
            // shutdown, so it starts; only the wait, which cannot end while the calling thread is the executor's, is
            // refused.
            shutdown();
            throw new IllegalStateException("close() called from " + where + " of executor " + settings.name
                    + ": shut down, but it cannot wait for its own termination (call shutdown() there, and"
                    + " awaitTermination or close() from a thread outside the executor)");
        }
        if (terminatedAndThreadsGone()) {
            return;
        }
        shutdown();
        boolean interrupted = false;
        for (;;) {
            try {
                if (awaitTermination(TimeUnit.DAYS.toNanos(1))) {
                    break;
                }
            } catch (InterruptedException e) {
                if (!interrupted) {
                    shutdownNow();
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    String stateName() {
        switch (state) {
            case RUNNING:
                return "running";
            case SHUTDOWN:
                return "shutting down";
            case STOP:
                return "stopping";
            default:
                return "terminated";
        }
    }
}
