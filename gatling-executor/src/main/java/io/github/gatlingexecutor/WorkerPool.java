package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.locks.LockSupport;

/**
 * The elastic pool: how many workers exist, when one starts, when one ends, and how an idle one is woken.
 *
 * <h2>Waking without a lost signal</h2>
 * A submitter that made work visible (offered a lane or a task to the ready queue) calls {@link #signalWork}: if a
 * worker is <em>searching</em> (spinning on the ready queue) nobody needs waking; otherwise it pops the most recently
 * parked worker and unparks it. A worker gives up searching in the opposite order: it decrements {@code searching},
 * registers in {@code idle}, and then polls the ready queue once more before it parks. Both sides write before they
 * read, with volatile/CAS accesses, so in the total order of those accesses either the worker's last poll sees the
 * work, or the submitter sees the worker searching or registered. Nothing is lost, and a submitter pays for an unpark
 * only when no worker is searching (none looks, or the searchers are in their yields: see
 * {@link #yieldWhileSearching}) and one is parked, even if others are busy.
 *
 * <h2>One wake-up for a burst</h2>
 * A worker being woken counts as searching, from the submitter that wakes it until its first look at the ready queue
 * ({@link Worker#WOKEN}): a wake-up takes microseconds (about 18 us on this project's 2-core VM), and submitters in
 * that window see a searcher and wake nobody else. The woken worker wakes the next one only if it finds more than it
 * takes, as a searcher does, so a burst of submits costs one wake-up and a chain of them only as long as work is
 * left over (the rule of Go's and Tokio's schedulers, whose woken workers start out searching). The submitter counts
 * the worker before it pops one, and takes the count back if it finds none: counted only after the CAS that wakes it,
 * a worker woken early by its timed park could take the count back first. Either side's decrement is followed by a
 * look at the ready queue, so a submitter that skipped its wake-up because of the count is seen: the woken worker
 * decrements, then reads whether work is left (and passes the wake-up on), and a submitter that found no worker to
 * pop falls back to {@link PoolPolicy#noWorkerIdle} as before.
 *
 * <h2>Growing and shrinking</h2>
 * What to start, refill, bump or retire, and when a worker may spin, is decided by {@link PoolPolicy}; this class
 * carries it out. An idle worker holds no work (work lives in the ready queue and in lanes), so retiring can never
 * drop any. {@code maxThreads} is enforced by reserving a slot in {@code threads} with a CAS before a thread is
 * created.
 */
final class WorkerPool {

    private static final VarHandle SEARCHING;
    private static final VarHandle YIELDING;
    private static final VarHandle THREADS;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SEARCHING = l.findVarHandle(WorkerPool.class, "searching", int.class);
            YIELDING = l.findVarHandle(WorkerPool.class, "yielding", int.class);
            THREADS = l.findVarHandle(WorkerPool.class, "threads", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Engine engine;
    private final Settings settings;
    final PoolPolicy policy;
    private final ConcurrentLinkedDeque<Worker> idle = new ConcurrentLinkedDeque<>();

    private volatile int searching;
    private volatile int yielding;     // searchers in a yield, not counted in searching meanwhile
    private volatile int threads;      // reserved worker slots: live workers plus ones being started
    private volatile int coreTarget;   // the core size, raised by core bumps
    private volatile int peakThreads;
    private volatile int liveThreads; // guarded by 'this' for writes: workers whose thread started and has not ended
    private int retiring; // guarded by 'this': idle auxiliary workers allowed to end that have not ended yet

    /** Copy-on-write under 'this': read without a lock by the checker, shutdown and statistics. */
    private volatile Worker[] workers = new Worker[0];
    // Guarded by 'this': the counters folded in from workers that have ended, and the pool's own counters.
    private long foldedExecuted;
    /**
     * Volatile, unlike the other folded counters: {@link #startedTasks} reads it without the lock, with
     * {@code workers}, inside {@link #folding}'s check.
     */
    private volatile long foldedStarted;
    /**
     * Odd while {@link #exited} moves an ending worker's started count from {@code workers} to {@link #foldedStarted}
     * (written under the lock, so by one thread at a time); {@link #startedTasks} sums only between two even reads of
     * the same value. Neither order of the two writes is safe alone: removed first, a read of the folded count before
     * the move and of the workers after it missed the worker's tasks (a full executor then looked that many tasks
     * fuller, and a submit with room was refused for {@code maxQueued}); folded first, a read could count them twice
     * (and admit over the limit).
     */
    private volatile int folding;
    private long foldedFailed;
    private long foldedTransfers;
    private long auxStarted;
    private long coreBumps;
    private long startFailures;
    private int coreNames;
    private int auxNames;
    private int workerIds;

    WorkerPool(Engine engine) {
        this.engine = engine;
        this.settings = engine.settings;
        this.coreTarget = settings.coreThreads;
        this.policy = new PoolPolicy(engine);
    }

    // ---- submit side --------------------------------------------------------------------------------------

    /** Work was just made visible in the ready queue: make sure some worker will look at it. */
    void signalWork() {
        if ((int) SEARCHING.getVolatile(this) > 0) {
            return; // a searching or waking worker will find it (and wakes another if it finds more than it takes)
        }
        // Every worker busy is the common case under load: it costs a read of the idle stack, not two atomic adds on
        // the line searchers write. A worker that registers after this read looks at the queue after registering.
        if (!wakeIdle()) {
            policy.noWorkerIdle(this);
        }
    }

    /**
     * Wakes one parked worker, if there is one, counted as searching until it has looked at the ready queue. Returns
     * whether it woke one. Also used for the timer while the checker is absent ({@link Checker#absent}): the woken
     * worker finds nothing, and parks again timed by the new first task.
     */
    boolean wakeIdle() {
        if (idle.peekFirst() == null) {
            return false;
        }
        SEARCHING.getAndAdd(this, 1); // for the worker we are about to wake (see "One wake-up for a burst")
        for (Worker w; (w = idle.pollFirst()) != null; ) {
            if (w.casParkState(Worker.PARKED, Worker.WOKEN)) {
                LockSupport.unpark(w.thread);
                return true;
            }
            // a stale entry: that worker found work on its own or retired
        }
        SEARCHING.getAndAdd(this, -1);
        return false;
    }

    // ---- worker side --------------------------------------------------------------------------------------

    /**
     * Called by a worker that found the ready queue empty. Returns the next item, or {@code null} when the worker must
     * end (shutdown finished, or it retired).
     */
    Object awaitWork(Worker w) {
        OUTER:
        for (;;) {
            int seenState = engine.state();
            if (seenState != Engine.RUNNING) {
                if (engine.stopping()) {
                    return null;
                }
                Object item = engine.readyQueue.poll();
                if (item != null) {
                    // As after any poll by a worker that may have been woken (the park below returns here when the
                    // state changes, its count given back): submitters that counted on it skipped their wake-ups.
                    return passingWakeUpOn(item);
                }
                if (engine.quiescent()) {
                    wakeAll(); // the others can end too
                    return null;
                }
            }
            Object item = search(w);
            if (item != null) {
                return item;
            }
            // Lanes past their grace go now (this also refreshes the clock); the younger ones stay mapped while we
            // park, and go when their grace ends (the park below is timed for it). Releasing all of them here made
            // every catch-up of a producer a release and re-creation of each lane the workers had just emptied: over
            // 1,024 contexts, a quarter of the workers' CPU samples were map removals, and the producer paid the
            // re-creation. While work is sparse they all go, and the park has no timeout, unless contexts came back
            // to lanes released too early lately (PoolPolicy#releasesAllAtPark).
            w.sweepIdle(policy.releasesAllAtPark(w));
            // Register, then look once more (see the class comment), then park.
            w.parkState(Worker.PARKED);
            idle.offerFirst(w);
            item = engine.readyQueue.poll();
            if (item != null) {
                unregister(w);
                // A submitter may have spent its wake-up on us (registered) for work other than the item we took,
                // or skipped it while we were searching.
                return passingWakeUpOn(item);
            }
            if (seenState != Engine.RUNNING && engine.quiescent()) {
                // The same hand-shake for the end of shutdown: a worker that found the executor quiescent wakes every
                // registered worker; one that registered too late for that wake-up finds it quiescent here.
                unregister(w);
                wakeAll();
                return null;
            }
            // nobody may refresh it while we park: the next submitter reads the clock itself
            engine.markClockStaleOpaque();
            w.parks++;
            long parkedAt = System.nanoTime();
            long deadline = parkedAt + settings.auxiliaryKeepAliveNanos;
            for (;;) {
                if (w.parkState() != Worker.PARKED) {
                    if (leavePark(w)) {
                        // Woken by a submitter: its work is most likely the head of the ready queue. The count it
                        // took for us was given back first, so a submitter that skipped its wake-up meanwhile has
                        // its work seen by the look at what is left.
                        w.searchBudget = PoolPolicy.budgetAfterWake(w.searchBudget, System.nanoTime() - parkedAt);
                        Jfr.refreshSlowTask();
                        item = engine.readyQueue.poll();
                        if (item != null) {
                            return passingWakeUpOn(item);
                        }
                    }
                    continue OUTER;
                }
                if (engine.state() != seenState) {
                    // Shutdown began (or turned into a stop) since we looked: re-run the checks above. Parking on
                    // with an unchanged state is right even after shutdown: the worker that finds the executor
                    // quiescent, or a submitter with new work, wakes us.
                    unregister(w);
                    continue OUTER;
                }
                // Lanes kept at parking: wake when their grace has ended and release them. They are oldest first and
                // all idled before we parked, so one timed park releases them all unless one was used again meanwhile.
                // Not left to the checker: a thread factory may have refused to make it.
                boolean sweepDue = w.idleCountOpaque() > 0;
                // Without a checker running the workers drive the timer: wake when its first task is due. Read after we
                // registered as parked; a schedule call writes its task, then wakes an idle worker (Checker#absent,
                // Checker#unattended).
                long timerWait = engine.checker.unattended() ? engine.timer.unattendedWait() : Long.MAX_VALUE;
                if (timerWait <= 0) {
                    unregister(w);
                    engine.checker.reclaimIfNeverRan(); // a published thread may have ended without running it
                    engine.timer.dispatchUnattended(); // due tasks go to their lanes; then we look for work again
                    continue OUTER;
                }
                if (sweepDue) {
                    timerWait = Math.min(timerWait, Worker.IDLE_GRACE_NANOS);
                }
                if (w.core || w.keptAsCore) {
                    if (timerWait != Long.MAX_VALUE) {
                        LockSupport.parkNanos(this, timerWait);
                    } else {
                        LockSupport.park(this);
                    }
                } else {
                    long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        if (!w.casParkState(Worker.PARKED, Worker.RETIRED)) {
                            continue; // signalled at the last moment: take the work
                        }
                        idle.removeFirstOccurrence(w);
                        if (tryRetire(w)) {
                            return null;
                        }
                        // The core size has grown to include this worker: it stays, and parks as a core worker from
                        // now on (the core size never shrinks, so every later keep-alive would refuse it too).
                        w.keptAsCore = true;
                        w.parkState(Worker.ACTIVE);
                        continue OUTER;
                    }
                    LockSupport.parkNanos(this, Math.min(remaining, timerWait));
                }
                // An interrupt makes park return at once; it carries no meaning for an idle worker (shutdownNow also
                // changes the state, checked above), so clear it rather than spin.
                Thread.interrupted();
                if (sweepDue && w.parkState() == Worker.PARKED) {
                    w.sweepIdle(false); // still registered: a submitter that signals us meanwhile is seen next round
                    engine.markClockStaleOpaque(); // the sweep refreshed it, and we park on
                }
            }
        }
    }

    /**
     * Returns {@code item}, just taken by a worker that counted as searching (or was registered, or being woken), after
     * waking another worker if more is queued: submitters that saw it searching skipped their wake-ups, and one that
     * woke it may have done so for work other than this item.
     */
    private Object passingWakeUpOn(Object item) {
        if (!engine.readyQueue.isEmpty()) {
            signalWork();
        }
        return item;
    }

    /**
     * A registered worker that will not park after all (it found work, or the state changed) goes back to ACTIVE: out
     * of the idle stack if nobody popped it, else, signalled meanwhile, with the count given back if it was woken.
     */
    private void unregister(Worker w) {
        if (w.casParkState(Worker.PARKED, Worker.ACTIVE)) {
            idle.removeFirstOccurrence(w);
        } else {
            leavePark(w);
        }
    }

    /**
     * The worker leaves its park state for ACTIVE after a submitter (or {@link #wakeAll}) changed it. Returns whether a
     * submitter woke it and counted it as searching ({@link Worker#WOKEN}); that count is given back here, before the
     * caller's next look at the ready queue.
     */
    private boolean leavePark(Worker w) {
        if (w.leaveParkState() != Worker.WOKEN) {
            return false;
        }
        SEARCHING.getAndAdd(this, -1);
        return true;
    }

    /** Spins on the ready queue for a while (see {@link PoolPolicy#MAX_SEARCH_NANOS}), if the policy allows. */
    private Object search(Worker w) {
        int s = searching;
        // A searcher in its yield still counts against the limit: it is about to search on.
        if (!policy.maySearch(w, s + yielding) || !SEARCHING.compareAndSet(this, s, s + 1)) {
            return null;
        }
        Object item = null;
        long budget = w.searchBudget;
        try {
            long start = System.nanoTime();
            w.spinMark = start;
            for (int i = 0; item == null; ) {
                item = engine.readyQueue.poll();
                if (item == null) {
                    if (Waiting.yieldDue(i)) {
                        yieldWhileSearching();
                    }
                    if ((i = Waiting.spinUnlessPreempted(i, w)) == Waiting.PREEMPTED) {
                        break; // this CPU is wanted by another thread: park, and be woken onto a free one
                    }
                    if ((i & (Waiting.YIELD_EVERY - 1)) == 0 && w.spinMark - start > budget) {
                        break; // spinMark is the clock read at the end of that round of waits
                    }
                }
            }
        } finally {
            SEARCHING.getAndAdd(this, -1);
        }
        w.searchBudget = PoolPolicy.nextSearchBudget(budget, item != null);
        // Submitters skipped the wake-up because we were searching.
        return item == null ? null : passingWakeUpOn(item);
    }

    /**
     * A searcher's yield (see {@link Waiting}), during which it does not count as searching. A yield that hands the CPU
     * to a thread that does not give it back soon (a JIT compiler thread, another process) lasts a scheduler slice,
     * milliseconds; a submitter that saw the searcher counted would have skipped the wake-up, and its task would wait
     * that long (at 10,000 tasks a second over 1,024 contexts, the tasks whose submitter saw a searcher waited 25 us
     * to 1.2 ms at the median; docs/hand-off-experiments.md, sixth set). Meanwhile it counts as yielding: a submitter
     * still wakes a parked worker, but does not nudge the checker for it (see {@link PoolPolicy#noWorkerIdle}).
     *
     * <p>No lost signal: a submitter that found it uncounted read {@code searching} before the searcher counts itself
     * again, and had offered its work before that read; the searcher's next poll comes after it counts itself again,
     * in the search or, if the search ends there, in the look before it parks (see {@link #awaitWork}).
     */
    private void yieldWhileSearching() {
        YIELDING.getAndAdd(this, 1);
        SEARCHING.getAndAdd(this, -1);
        Thread.yield();
        SEARCHING.getAndAdd(this, 1);
        YIELDING.getAndAdd(this, -1);
    }

    /** Whether a searcher is in its yield (see {@link #yieldWhileSearching}). */
    boolean searcherYielding() {
        return yielding > 0;
    }

    /**
     * Wakes every parked worker, so it re-reads the executor state (shutdown, termination). Their idle entries stay:
     * removing one here could remove the entry a woken worker has already made anew, and a stale entry costs a
     * submitter one failed CAS.
     */
    void wakeAll() {
        for (Worker w : workers()) {
            w.casParkState(Worker.PARKED, Worker.SIGNALLED);
            LockSupport.unpark(w.thread);
        }
    }

    // ---- threads --------------------------------------------------------------------------------------------

    /**
     * Starts a worker if the caps allow: a core worker while below the core size, an auxiliary one (only when
     * {@code auxiliary}) up to {@code maxThreads}. Returns whether a thread was started. A failing thread factory is
     * counted and survived.
     */
    boolean tryStart(boolean auxiliary) {
        int n;
        boolean core;
        for (;;) {
            int state = engine.state();
            if (state >= Engine.STOP) {
                return false;
            }
            n = threads;
            if (n < 0) {
                return false; // terminated
            }
            core = n < coreTarget;
            if (n >= settings.maxThreads || (!core && !auxiliary)) {
                return false;
            }
            if (state == Engine.RUNNING) {
                if (THREADS.compareAndSet(this, n, n + 1)) {
                    break;
                }
            } else {
                // Shutting down: a start must not race termination (see terminateIfNoThreads).
                synchronized (this) {
                    if (engine.state() < Engine.STOP && THREADS.compareAndSet(this, n, n + 1)) {
                        break;
                    }
                }
            }
        }
        boolean started = startWorker(core, n);
        // The checker retries worker starts that fail (see Checker.inspect), so it is started with the first worker,
        // whether that start worked or not. After the worker, so that a thread factory that gives only one thread
        // gives it to a worker. It never throws; if it cannot start either, it is tried again (Checker#retryIfAbsent).
        if (engine.checker.ensureStarted() != null) {
            countStartFailure();
        }
        engine.tickAfterStart();
        return started;
    }

    /** Starts a worker in a slot already reserved; on any failure gives the slot back and leaves nothing behind. */
    private boolean startWorker(boolean core, int n) {
        // From here until the thread runs, every failure gives the reserved slot back and leaves nothing registered.
        Worker w = null;
        Thread t = null;
        StartGate gate = null;
        try {
            int id;
            String name;
            synchronized (this) {
                id = ++workerIds;
                name = settings.name + (core ? "-core-" + ++coreNames : "-aux-" + ++auxNames);
            }
            w = new Worker(engine, this, core, id);
            ThreadFactory factory = settings.threadFactory;
            if (factory == null) {
                t = settings.newOwnThread(w, name, false);
            } else {
                gate = new StartGate(w);
                t = gate.newThread(factory, "a worker", engine.inThreadFactory);
                w.gate = gate;
            }
        } catch (Throwable failure) {
            startFailed();
            return false;
        }
        w.thread = t;
        try {
            synchronized (this) {
                workers = append(workers, w);
            }
            if (gate == null) {
                t.start();
            } else {
                gate.start(t, "a worker"); // refuses a thread the factory started itself: see StartGate
            }
        } catch (Throwable failure) {
            synchronized (this) {
                workers = remove(workers, w);
            }
            startFailed();
            return false;
        }
        synchronized (this) {
            engine.starved(false); // see startFailed
        }
        return true;
    }

    private void startFailed() {
        synchronized (this) {
            // Under the lock a successful start clears the mark under, so that a start succeeding meanwhile cannot
            // clear it before this sets it and leave it set with a worker alive (every submit would then signal for
            // nothing). The count was 1: this start's own slot, so no other start is under way and no worker lives.
            if ((int) THREADS.getAndAdd(this, -1) == 1 && liveThreads <= 0) {
                engine.starved(true); // see Engine#starved
            }
        }
        countStartFailure();
        engine.threadsChanged();
    }

    /**
     * For the checker, at each look at {@code w} ({@code now}: the look's time): if the thread a configured factory
     * returned for it has ended without running it (see {@link StartGate#reclaimIfNeverRan}, which waits a grace), its
     * start failed after all. Its slot, held since, kept the
     * executor from starting another worker (it looked idle, ready to take work, to the checker too) and from
     * terminating: its tasks never ran, and {@code close()} waited for good. Gives the slot back as any failed start
     * does, so that starts are tried again. True if it did.
     */
    boolean reclaimIfNeverRan(Worker w, long now) {
        StartGate gate = w.gate;
        if (gate == null || !gate.reclaimIfNeverRan(w.thread, now)) {
            return false;
        }
        synchronized (this) {
            workers = remove(workers, w);
        }
        startFailed();
        return true;
    }

    /** A worker or the checker could not be started. */
    synchronized void countStartFailure() {
        startFailures++;
    }

    /**
     * An idle auxiliary worker may end unless that would take the pool below the core size. Its slot in
     * {@code threads} is given back only in {@link #exited}, as its thread ends, so a worker started meanwhile cannot
     * take the pool past {@code maxThreads}; {@code retiring} keeps two retirements from both passing the check.
     */
    private boolean tryRetire(Worker w) {
        synchronized (this) {
            if (!PoolPolicy.mayRetire(threads(), retiring, coreTarget)) {
                return false;
            }
            retiring++;
            w.retired = true;
            return true;
        }
    }

    /**
     * Called by every worker first thing on its own thread: from here it is a thread for statistics, and an auxiliary
     * one counts as started (and may raise the core size). Counted by the thread itself, not by its starter after
     * {@code start()}: a start that fails was never a thread (though it held a slot in {@code threads}, for the cap,
     * while the factory took its time to fail), and a starter descheduled right after {@code start()} would have let
     * the new worker run tasks before it counted (a snapshot taken by an auxiliary worker's first task read it in
     * {@code threads()} but not in {@code auxiliaryThreadsStarted()}, nor the core size it raised).
     */
    void running(Worker w) {
        boolean bumped = false;
        int newCore;
        long aux;
        synchronized (this) {
            int live = ++liveThreads;
            if (peakThreads < live) {
                peakThreads = live;
            }
            if (w.core) {
                return;
            }
            aux = ++auxStarted;
            if (policy.bumpsCore(auxStarted, coreTarget)) {
                coreTarget = coreTarget + 1;
                coreBumps++;
                bumped = true;
            }
            newCore = coreTarget;
        }
        if (bumped) {
            Jfr.coreBump(engine, newCore, aux);
        }
    }

    /** Called by every worker as its thread ends, whatever the reason. */
    void exited(Worker w) {
        // Its idle entries, which nothing else removes once it has ended (wakeAll leaves them): they kept the worker,
        // its thread and its idle ring (64 KB) reachable from a terminated executor for as long as the executor, a
        // future or a lane handle of it was kept. Nobody adds an entry for it any more.
        while (idle.removeFirstOccurrence(w)) {
            // all of them
        }
        synchronized (this) {
            folding++;
            try {
                workers = remove(workers, w);
                foldedStarted += w.startedCountOpaque();
            } finally {
                folding++; // even again whatever the copy met (it allocates): left odd, every read would wait for good
            }
            foldedExecuted += w.executedCountOpaque();
            foldedFailed += w.failedCountOpaque();
            foldedTransfers += w.transferCountOpaque();
            if (w.retired) {
                retiring--;
            }
            liveThreads--; // counted by this thread in running(), which came first
            THREADS.getAndAdd(this, -1);
        }
        Jfr.threadRetired(engine, w, w.retired ? "idle for auxiliaryKeepAlive"
                : engine.isShutdown() ? "executor shut down" : "ended by a failure outside any task");
        engine.threadsChanged();
    }

    /**
     * Termination and thread starts exclude each other under this lock: the executor terminates only with no worker
     * slot taken, and once it has, no slot is taken again (see {@link #tryStart}). The checker's thread is published
     * under this lock too ({@link Checker#ensureStarted}): unless the caller is the checker, a published one means the
     * claim is the checker's.
     */
    synchronized boolean terminateIfNoThreads(boolean byChecker) {
        if (!byChecker && engine.checker.published()) {
            return false;
        }
        // Claiming the count with a CAS makes a start that read a stale "0 threads" fail its own CAS.
        if (!THREADS.compareAndSet(this, 0, TERMINATED_SLOTS)) {
            return false;
        }
        engine.markTerminated();
        return true;
    }

    /** The thread count after termination: negative, so every reservation CAS fails. */
    private static final int TERMINATED_SLOTS = Integer.MIN_VALUE / 2;

    int threads() {
        return Math.max(0, threads);
    }

    int coreTarget() {
        return coreTarget;
    }

    /**
     * Tasks started so far, by every worker that ever ran: lock-free, for bounded admission. Never more than the true
     * count at the moment of the call, and an ending worker's tasks are in it (see {@link #folding}): a read that
     * overlaps the few writes of a worker's end waits for them, as for any thread between two steps that holds
     * nothing we need (see {@link Waiting}).
     */
    long startedTasks() {
        for (int waits = 0; ; waits = Waiting.pause(waits)) {
            int before = folding;
            if ((before & 1) != 0) {
                continue;
            }
            long sum = foldedStarted;
            for (Worker w : workers) {
                sum += w.startedCountOpaque();
            }
            if (folding == before) {
                return sum;
            }
        }
    }

    Worker[] workers() {
        return workers;
    }

    /**
     * Worker starts under way: a slot taken ({@link #tryStart}) whose worker is not listed yet, while the factory makes
     * its thread. Racy (two reads), and at worst one off for a moment while a worker ends.
     */
    int startsInProgress() {
        int listed = workers.length;
        return Math.max(0, threads() - listed);
    }

    /**
     * Fills the pool part of a statistics snapshot: {executed, failed, transfers, auxStarted, coreBumps,
     * startFailures, busy workers, started, core size, threads, peak threads}. The core size is read under the lock
     * its bumps take, with their count: read after it, a snapshot taken while a bump landed showed a core size of the
     * configured one plus a bump its count did not have yet. The threads too, which a new worker counts under the
     * same lock with its auxiliary start (see {@link #running}): read after it, a worker counted in between was a
     * thread without a start. Threads are the workers running now, not the slots of starts in progress.
     */
    synchronized long[] counters() {
        long executed = foldedExecuted;
        long failed = foldedFailed;
        long transfers = foldedTransfers;
        long running = 0;
        long started = foldedStarted;
        for (Worker w : workers) {
            // Failed and executed first, each with acquire, then started: a task counts as started before it counts
            // as failed or executed (release stores), so this order gives started >= failed and started >= executed
            // for every worker. Read the other way round, a task that started and ended between the two reads
            // counted as executed (or failed) only, and the snapshot's submitted (raised to what had left the queue)
            // came out below it. Failed is counted before executed (before the handler is called), so a snapshot
            // may see a failure whose task has not yet counted as executed; Snapshots#executor covers that.
            failed += w.failedCountAcquire();
            long ended = w.executedCountAcquire();
            long began = w.startedCountOpaque();
            executed += ended;
            started += began;
            transfers += w.transferCountOpaque();
            // A task between its start and its end (its handler included), from the counts the snapshot's queued and
            // executed come from, not from the busy flag, which also covers a worker lingering on an emptied lane.
            // Read in that order, a worker that ended one task and began the next in between shows 2: it runs one.
            running += Math.min(1, began - ended);
        }
        int live = Math.max(0, liveThreads);
        return new long[] {executed, failed, transfers, auxStarted, coreBumps, startFailures, running, started,
                coreTarget, live, Math.max(peakThreads, live)};
    }

    void interruptAll() {
        for (Worker w : workers()) {
            try {
                w.thread.interrupt();
            } catch (SecurityException ignored) {
                // a thread from a custom factory we may not interrupt: it will still see STOP
            }
        }
    }

    private static Worker[] append(Worker[] a, Worker w) {
        Worker[] b = Arrays.copyOf(a, a.length + 1);
        b[a.length] = w;
        return b;
    }

    private static Worker[] remove(Worker[] a, Worker w) {
        for (int i = 0; i < a.length; i++) {
            if (a[i] == w) {
                Worker[] b = new Worker[a.length - 1];
                System.arraycopy(a, 0, b, 0, i);
                System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                return b;
            }
        }
        return a;
    }
}
