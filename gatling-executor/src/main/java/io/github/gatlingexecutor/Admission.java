package io.github.gatlingexecutor;

import java.lang.invoke.VarHandle;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntSupplier;

/**
 * Bounded capacity: the executor-wide count of waiting tasks, and the submitters parked for room under
 * {@link Overflow#block}. Exists only when a limit is set; an unbounded executor never reaches this class.
 *
 * <h2>Who waits where</h2>
 * A submitter that finds its sequential lane full waits in that context's queue; one that finds the executor full
 * waits in the executor queue. A submitter attempts only while it is at the head of every queue it is in, so
 * submitters of one context (or, for {@code maxQueued}, of the executor) are admitted in arrival order; one that
 * waits in the executor queue alone goes behind earlier waiters of its context once they wait in its context's
 * queue. A new submitter that sees anyone waiting (the waiting number &gt; 0) first looks, under the lock, whether
 * someone waits for what it needs, and queues behind them if so: it never overtakes a parked submitter.
 *
 * <p>Both kinds of queue are ordered by one arrival ticket, taken when a submitter starts to wait, not by when it
 * joined that queue. A waiter moves between queues (a context's head that finds the executor full joins the executor
 * queue; a waiter that finds its lane full leaves it), and with first-come order per queue, a waiter could head the
 * executor queue while second in its context's queue, behind the context's head, which had just joined the executor
 * queue behind it: each waited for the other until {@code maxWait}, with the executor idle. With one order for every
 * queue, the earliest waiter heads every queue it is in, so some waiter can always make its attempt.
 *
 * <h2>Wake-ups: none per task, none lost for long</h2>
 * A waiter increments the waiting number and publishes itself as the head of its queue, then fences, then checks for
 * room. A worker that starts a task has already counted it on its own line (the started count that frees a place) or
 * moved the lane's head, and then reads the waiting number: no fence and no shared write per task, so a task costs a
 * worker one read when nobody waits, and the worker never takes the admission lock (it is never parked by it). Without
 * a fence on the worker's side, a waiter that registers just as a worker makes room can miss that worker's wake-up;
 * the checker's tick ({@link #poll}, every few milliseconds while a worker is awake or a submitter waits; the first
 * waiter wakes the checker as it registers) wakes the head of every queue whose limit has room, so such a wait ends
 * within a tick; with no checker thread (a factory that fails it), each waiter parks a tick at most and looks itself.
 * Executor waiters are woken by workers only once a few places are free, and the head then admits the waiters behind
 * it while room lasts.
 */
final class Admission {
    /** Outcomes of one attempt to accept a task. */
    static final int ADMITTED = 0;
    static final int FULL_CONTEXT = 1;
    static final int FULL_EXECUTOR = 2;
    /** Not an attempt's outcome: the submitter must queue behind parked ones before it may try. */
    static final int BEHIND_WAITERS = 3;
    /** Accepted over a limit: a forced attempt (a due scheduled task, or a worker of this executor under block). */
    static final int ADMITTED_OVER = 4;

    private final Engine engine;
    final int perContext; // 0: none
    final int total;      // 0: none
    final Overflow policy;
    /** Workers wake the executor queue's head only once the count of waiting tasks is at or below this. */
    private final long wakeBelow;

    /**
     * Each counter lives alone, 64 bytes from anything else (slot {@code PAD} of a long array, {@code 2 * PAD} of an
     * int array): submitters write the accepted count, and every submitter and worker reads the waiting number on
     * every task, so sharing a cache line with each other (or with fields around them) would make those reads misses.
     */
    private static final int PAD = 8;
    /**
     * Places taken in the executor (kept only with {@link #total}): incremented by each accepted submit, decremented
     * when one gives its place back. Tasks accepted and not started = this minus the tasks workers have started
     * ({@link WorkerPool#startedTasks}), which workers count on their own lines: a worker writes nothing shared per
     * task. Slot {@code PAD}; slot {@code 3 * PAD} holds {@code startedSeen}, a lower bound of the started count
     * that submitters refresh only when the bound says the executor may be full.
     */
    private final AtomicLongArray counts = new AtomicLongArray(4 * PAD + 1);
    private static final int ACCEPTED = PAD;
    private static final int STARTED_SEEN = 3 * PAD;
    /** Submitters parked now (or about to park); see the class comment for why it is incremented first. */
    private final AtomicIntegerArray waitingCell = new AtomicIntegerArray(4 * PAD + 1);
    private final LongAdder rejected = new LongAdder();
    private final LongAdder acceptedOverLimit = new LongAdder();

    /** Package-private for a test that holds it to keep woken waiters in the queues (BackPressureTest). */
    final ReentrantLock lock = new ReentrantLock();
    /** Every waiter has been woken for shutdown (see {@link #wakeAll}). Guarded by lock. */
    private boolean wokeAll;
    /** Arrival order of waiters (see the class comment). */
    private static final Comparator<Waiter> BY_ARRIVAL = Comparator.comparingLong(w -> w.ticket);
    /** Tickets handed out so far. Guarded by lock. */
    private long arrivals;
    /** Guarded by lock; ordered by arrival. */
    private PriorityQueue<Waiter> executorQueue = new PriorityQueue<>(BY_ARRIVAL);
    /**
     * Guarded by lock: the waiters of each full sequential context, ordered by arrival; an entry is removed, through
     * its queue's own key, when it empties.
     */
    private HashMap<ContextKey, ContextQueue> contextQueues = new HashMap<>();
    /** The thread at the head of the executor queue, or null: written under the lock, read by workers without it. */
    private volatile Thread executorHead;
    /**
     * The thread at the head of each context queue, keyed by that queue's key: written under the lock, read by
     * workers without it.
     */
    private ConcurrentHashMap<ContextKey, Thread> contextHeads = new ConcurrentHashMap<>();
    /**
     * Every coalescing waiter, by its own key ({@link Waiter#coalescingKey}): written under the lock as it joins and
     * leaves the executor queue, read without it by {@link #coalescingWaits} on a thread refused the lock.
     */
    private ConcurrentHashMap<ContextKey, Thread> coalescingWaiters = new ConcurrentHashMap<>();
    /**
     * The four structures above, which never shrink, have been replaced by empty ones at termination (see
     * {@link #dropTablesOnceNobodyWaits}). Guarded by lock.
     */
    private boolean tablesDropped;
    /**
     * The executor has terminated: a holder that lets the lock go drops the tables if nobody waits (see
     * {@link #unlock}). Written before termination tries the lock; read by each holder after it has let it go.
     */
    private volatile boolean dropLeftToHolders;

    /**
     * A sequential context as the admission maps key it. Its hash is taken once, by the submitter that makes the key
     * (on the caller's thread, where a context that throws must throw), and an entry is removed through the very key
     * that made it, which the maps find by identity. So a context whose {@code hashCode} or {@code equals} starts to
     * throw while its submitters wait cannot keep the lock held, the waiting number raised or an entry mapped: the way
     * out of a wait hashed the context again, and an exception there skipped the unlock. One context object is
     * always equal to itself, whatever its {@code equals} does; a look-up key meets a mapped one through the
     * context's {@code equals}, and one that throws reads as unequal for that look only (waiters of such a context
     * may then queue apart; each meets the failure at its own attempt). Two mapped keys equal only by identity: the
     * removal through a mapped key, which meets every other mapped key of its bucket, can then never take another
     * queue's entry, whatever the contexts' {@code equals} does meanwhile.
     */
    private static final class ContextKey {
        final Object context;
        private final int hash;
        /**
         * Set once, before the key is mapped: by the queue made for it, or by a coalescing waiter for its entry in
         * {@link #coalescingWaiters}. Read only where two mapped keys meet: in the removals and puts through a mapped
         * key, under the lock.
         */
        private boolean mapped;
        /** The checker has reported that this context throws (see {@link #poll}). Read and written by it only. */
        boolean reported;

        ContextKey(Object context) {
            this.context = context;
            this.hash = context.hashCode();
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            if (o == this) {
                return true;
            }
            if (!(o instanceof ContextKey) || ((ContextKey) o).hash != hash) {
                return false;
            }
            ContextKey other = (ContextKey) o;
            if (context == other.context) {
                return true;
            }
            if (mapped && other.mapped) {
                return false;
            }
            return sameContext(context, other.context);
        }
    }

    /** The waiters of one full sequential context, by arrival, and the key its entries are mapped and removed by. */
    private static final class ContextQueue extends PriorityQueue<Waiter> {
        private static final long serialVersionUID = 1L;
        final transient ContextKey key;

        ContextQueue(ContextKey key) {
            super(BY_ARRIVAL);
            this.key = key;
            key.mapped = true; // computeIfAbsent maps it next
        }
    }

    /** One parked submitter. Its fields are guarded by the lock. */
    private static final class Waiter {
        final Thread thread = Thread.currentThread();
        final Object context; // the sequential context it submits to, or null
        /**
         * A key to look its context's queue up with, hashed here, on its own thread, where a context that throws
         * must throw; never mapped. Null without a sequential context.
         */
        final ContextKey lookup;
        final Object coalescing; // the coalescing context it submits to, or null
        /** Its entry's key in {@link #coalescingWaiters}, hashed here as {@link #lookup} is; null if not coalescing. */
        final ContextKey coalescingKey;
        final IntSupplier attempt;
        /** Its place in every queue it joins: taken once, when it starts to wait. */
        long ticket;
        /** The queue of its context it waits in, or null. */
        ContextQueue contextQueue;
        boolean inExecutorQueue;
        /** Admitted by the head on its behalf. */
        boolean admitted;
        /** Failed (shutdown, or its context's equals/hashCode threw) while the head tried to admit it. */
        Throwable failure;
        /** The outcome of its last attempt, for the message if it gives up. */
        int last;

        Waiter(Object context, Object coalescing, IntSupplier attempt) {
            this.context = context;
            this.lookup = context == null ? null : new ContextKey(context);
            this.coalescing = coalescing;
            this.coalescingKey = coalescing == null ? null : new ContextKey(coalescing);
            if (coalescingKey != null) {
                coalescingKey.mapped = true; // one entry per waiter: removed by its own key alone
            }
            this.attempt = attempt;
        }
    }

    Admission(Engine engine, Settings settings) {
        this.engine = engine;
        this.perContext = settings.maxQueuedPerContext;
        this.total = settings.maxQueued;
        this.policy = settings.overflow;
        this.wakeBelow = total - Math.max(1, Math.min(64, total / 16));
    }

    // ---- the executor-wide reservation ---------------------------------------------------------------------

    /**
     * Takes a place in the executor: {@link #ADMITTED}, or {@link #ADMITTED_OVER} when it was full and
     * {@code force} is set, or {@link #FULL_EXECUTOR} (nothing taken). Exact: the count the place is taken from is
     * compared with a started count that is never above the true one (the true one is read when that says "full"),
     * and the CAS succeeds only if that count is still the count. A refused submit writes nothing: taking a place and
     * giving it back made full producers write the executor's busiest line for nothing, and held a place another
     * submitter could have had.
     */
    int reserve(boolean force) {
        for (;;) {
            long before = counts.get(ACCEPTED);
            boolean room = before - counts.getOpaque(STARTED_SEEN) < total || before - refreshStarted() < total;
            if (!room && !force) {
                return FULL_EXECUTOR;
            }
            if (counts.compareAndSet(ACCEPTED, before, before + 1)) {
                return room ? ADMITTED : ADMITTED_OVER;
            }
        }
    }

    /**
     * Whether the executor looks full, without taking a place: true may be stale (the started count read is never
     * above the true one, and is refreshed only when the cheap read says full), so a caller that then takes a place
     * with {@link #reserve} gets the exact answer.
     */
    boolean looksFull() {
        long before = counts.get(ACCEPTED);
        return before - counts.getOpaque(STARTED_SEEN) >= total && before - refreshStarted() >= total;
    }

    private long refreshStarted() {
        long started = engine.pool.startedTasks();
        if (started - counts.getOpaque(STARTED_SEEN) > 0) {
            counts.setOpaque(STARTED_SEEN, started); // racing refreshers may leave a lower value: only conservative
        }
        return started;
    }

    /** Tasks accepted and not started, now (with {@link #total} only). */
    private long queuedNow() {
        return counts.get(ACCEPTED) - refreshStarted();
    }

    /**
     * Gives a place back that no task took after all: the submit was refused by its lane's own limit, or replaced a
     * waiting coalescing task, or its task was taken back at shutdown. Wakes the executor queue's head only if this
     * leaves room.
     */
    void release() {
        counts.decrementAndGet(ACCEPTED);
        if (waitingCell.get(2 * PAD) > 0 && queuedNow() < total) {
            wakeExecutorHead();
        }
    }

    /**
     * The checker's regular look: wake the head of every queue whose limit has room. Workers wake the executor
     * queue's head only once a few places are free, and may miss a waiter that registered just as they made room
     * (see {@link #started}); this bounds both waits to a clock tick.
     */
    void poll() {
        if (waitingCell.get(2 * PAD) == 0) {
            return;
        }
        if (total > 0 && queuedNow() < total) {
            wakeExecutorHead();
        }
        for (Map.Entry<ContextKey, Thread> head : contextHeads.entrySet()) {
            ContextKey key = head.getKey();
            boolean room;
            try {
                Lane lane = engine.lanes(false).get(key.context);
                room = lane == null || lane.queuedCount() < perContext;
            } catch (RuntimeException | Error contextFailed) {
                // The context's hashCode or equals threw (it broke after its tasks were accepted). The checker must
                // not die of it (termination and the timer depend on it). Reported once; the waiter is woken, and its
                // own attempt throws on its own thread, at the call that waits, and leaves (see ContextKey).
                if (!key.reported) {
                    key.reported = true;
                    engine.reportUncaught(contextFailed);
                }
                room = true;
            }
            if (room) {
                LockSupport.unpark(head.getValue());
            }
        }
    }

    /**
     * A worker has just counted a task as started ({@code lane}: its lane, or null for an unordered task): its place
     * is free. Nothing shared is written here and no fence is paid, so a task costs the worker one read of the
     * waiting number. The price: a waiter that registers just as this worker makes room may miss the wake-up; the
     * checker's next tick finds the room (see {@link #poll}).
     */
    void started(Lane lane) {
        if (waitingCell.getOpaque(2 * PAD) > 0) {
            if (lane != null && !lane.coalescing() && !contextHeads.isEmpty()) {
                try {
                    wakeContextHead(lane.context);
                } catch (RuntimeException | Error contextFailed) {
                    // The context's hashCode or equals threw. Thrown on, it skipped the task about to run (its slot
                    // already taken): lost. The checker's poll finds the waiter through its entry, and reports it.
                }
            }
            // Executor waiters are woken once a few places are free, not at every task: a wake-up per task would
            // cost a worker a system call per task exactly when the executor is busiest. Once woken, the head admits
            // the waiters behind it while room lasts.
            if (total > 0 && executorHead != null && queuedNow() <= wakeBelow) {
                wakeExecutorHead();
            }
        }
    }

    /*
     * Waking is lock-free, from the published heads: a worker must never wait for the admission lock (the checker
     * would take a worker parked on it for a blocked one and start threads). A stale head only costs a spurious
     * wake-up; a missed one cannot happen, because a waiter publishes itself as head before its last check for room
     * (see await).
     */
    private void wakeContextHead(Object context) {
        Thread t = contextHeads.get(new ContextKey(context));
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private void wakeExecutorHead() {
        Thread t = executorHead;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** Wakes the published head of every queue, without the lock. */
    private void wakeHeads() {
        wakeExecutorHead();
        for (Thread head : contextHeads.values()) {
            LockSupport.unpark(head);
        }
    }

    /** Publishes the current heads of the executor queue and of {@code q}, if not null (under the lock). */
    private void publishHeads(ContextQueue q) {
        Waiter head = executorQueue.peek();
        executorHead = head == null ? null : head.thread;
        if (q != null) {
            if (q.isEmpty()) {
                contextHeads.remove(q.key);
            } else {
                contextHeads.put(q.key, q.peek().thread);
            }
        }
    }

    // ---- submitters ------------------------------------------------------------------------------------------

    /**
     * Before a first attempt while someone waits: {@link #BEHIND_WAITERS} if a parked submitter waits for what this
     * one needs (the sequential lane of {@code context}, or room in the executor), else {@link #ADMITTED} (go ahead).
     */
    int mustQueue(Object context) {
        if (waitingCell.get(2 * PAD) == 0) {
            return ADMITTED;
        }
        if (!lockUnlessTimerHeld()) {
            return publishedWaiterAhead(context) ? BEHIND_WAITERS : ADMITTED;
        }
        try {
            boolean behind = (context != null && contextQueues.containsKey(new ContextKey(context)))
                    || (total > 0 && !executorQueue.isEmpty());
            return behind ? BEHIND_WAITERS : ADMITTED;
        } finally {
            unlock();
        }
    }

    /**
     * Whether a submitter to the coalescing lane of {@code context} is parked (or about to park). A replacement needs
     * no room, but one made now would overtake it, and its older task would then replace the newer one: the last
     * task submitted must be the last to arrive. Such a submit waits behind it instead.
     */
    boolean coalescingWaits(Object context) {
        if (waitingCell.get(2 * PAD) == 0) {
            return false;
        }
        if (!lockUnlessTimerHeld()) {
            return coalescingWaiters.containsKey(new ContextKey(context)); // published, as the heads are
        }
        try {
            for (Waiter w : executorQueue) { // coalescing submitters wait for maxQueued only: in this queue
                if (w.coalescing != null && sameContext(context, w.coalescing)) {
                    return true;
                }
            }
            return false;
        } finally {
            unlock();
        }
    }

    /**
     * Takes the lock, or, on a thread that holds the timer's lock, tries to: false if it is held elsewhere. A thread
     * holding the timer's lock gets here only from the caller's code a dispatch runs (a context's hashCode or equals,
     * or the thread factory, calling the executor back), and a holder of this lock may wait for the timer's: a waiter
     * whose admitted task replaces a coalescing lane's pending scheduled task cancels it, and a cancelled scheduled
     * task leaves the timer under its lock. Waiting here, the two would wait for each other for good, and the checker
     * and every schedule* with them. A caller refused the lock answers from the published heads instead (see
     * publishedWaiterAhead and shutdown); such a submit cannot wait for room either (see await).
     */
    private boolean lockUnlessTimerHeld() {
        if (engine.timer.isHeldByCurrentThread()) {
            return lock.tryLock();
        }
        lock.lock();
        return true;
    }

    /**
     * {@link #mustQueue}'s answer without the lock, for a thread that could not take it (see
     * {@link #lockUnlessTimerHeld}): whether a queue that holds what a submit to {@code context} needs has a published
     * head. A queue's head is published under the lock whenever the queue changes, before its waiter parks, so a
     * queue that is not empty has one; a busy lock alone says nothing about them (its holder may be a new submitter
     * looking, or a head admitting its followers): refusing on it would refuse submits with room and nobody ahead.
     */
    private boolean publishedWaiterAhead(Object context) {
        return (total > 0 && executorHead != null)
                || (context != null && contextHeads.containsKey(new ContextKey(context)));
    }

    /**
     * {@code equals} of two contexts, one that throws reading as unequal for that look only: waiters of such a context
     * may queue apart, and each meets the failure at its own attempt (see {@link ContextKey}).
     */
    private static boolean sameContext(Object a, Object b) {
        if (a == b) {
            return true;
        }
        try {
            return a.equals(b);
        } catch (VirtualMachineError fatal) {
            throw fatal;
        } catch (RuntimeException | Error failed) {
            return false;
        }
    }

    /**
     * Parks the calling submitter until its task is admitted, in arrival order. {@code why} is the outcome that brought
     * it here. Throws {@link RejectedExecutionException} when the wait times out, the thread is interrupted (its status
     * kept) or the executor shuts down. {@code context} keys the context queue (a sequential lane's context, else
     * null); {@code shown} is the context the message names; {@code coalescing}: the task goes to the coalescing lane
     * of {@code shown}.
     *
     * <p>The waiter at the head of the executor queue that finds room admits itself and then, while room lasts, the
     * waiters behind it, running their attempts for them under the lock and waking them already admitted. Admitting
     * one waiter per wake-up would keep every producer of a full executor in the queue for good (each finds the other
     * still queued when it comes back with its next task), and each task would cost a park and a wake-up.
     */
    void await(Object context, Object shown, boolean coalescing, int why, IntSupplier attempt, Runnable task) {
        if (lock.isHeldByCurrentThread() || engine.timer.isHeldByCurrentThread() || engine.checker.isCurrentThread()) {
            // Called back from the caller's code that the executor runs where it must not wait (a worker of its own
            // never gets here: it is admitted over the limit). Under this lock: a context's equals or hashCode (a new
            // submitter's look for waiters of its context, a head's attempts for its followers) or the thread factory
            // (a worker started by such an attempt); the lock is reentrant, and the park below lets go of one hold
            // only, so a wait here would keep it: the waiters this one went behind could not be admitted, nor anyone
            // submit while someone waits, nor shutdown() wake a waiter. Under the timer's lock (a context's hashCode
            // or the factory at a dispatch): every schedule* and shutdown() would wait for it. On the checker's thread
            // (those, and the factory of an auxiliary worker): no stuck worker would be looked for, no worker started,
            // no waiter woken by its tick, the very help room may need. Each for the whole maxWait. Refused at once,
            // as under reject, and counted the same way (Engine#countedAsRefusedForCapacity): under the admission
            // lock, a new submitter's look may have found the last waiter gone, and nothing then keeps the executor
            // from ending between the submit's look at the state and this count.
            if (!engine.countedAsRefusedForCapacity()) {
                throw engine.rejectShutdown(task);
            }
            throw refused(task, shown, why == BEHIND_WAITERS ? limitAhead(context) : why,
                    "; called back from code the executor runs where "
                    + "it cannot wait for room (a context's equals or hashCode, or the thread factory, while it admits "
                    + "waiting submitters, dispatches a scheduled task or checks its workers)");
        }
        long start = System.nanoTime();
        Waiter me = new Waiter(context, coalescing ? shown : null, attempt);
        // Why the wait ended without the task, decided under the lock; the refusal is built after it is released: its
        // message names the task and the context, whose toString is the caller's code, and while anyone waits every
        // submitter passes through this lock (a toString that took 2 s held every submit of the executor for 2 s).
        int refused = 0;
        lock.lock();
        // The checker ticks for waiters only once it has seen one: it may have read none and gone to sleep for want of
        // flow (or dozed) until its next look, a check period away. Counted first, then the wake-up; the checker
        // clears its request, reads the count, then parks only if no request came (and an unpark before its park
        // leaves a permit): either it reads this waiter or it is woken to read again. Only the first waiter wakes it:
        // while it reads any, it ticks every few milliseconds (a wake-up a waiter kept it from ever parking under
        // sustained back-pressure, and each of its rounds takes this lock).
        if (waitingCell.incrementAndGet(2 * PAD) == 1) {
            engine.checker.wake();
        }
        try {
            me.ticket = ++arrivals;
            me.last = why;
            join(me, why);
            for (;;) {
                if (me.admitted) {
                    return; // by the head, on our behalf
                }
                Throwable failure = me.failure; // met by the head while admitting us (shutdown, say)
                if (failure instanceof RuntimeException) {
                    throw (RuntimeException) failure;
                }
                if (failure != null) {
                    throw (Error) failure; // a context's hashCode or equals (see admitFollowers)
                }
                if (engine.state() != Engine.RUNNING) {
                    refused = REFUSED_SHUTDOWN;
                    break;
                }
                if (mayAttempt(me)) {
                    // The published head (and waiting) before the look at the lane's head or the counts: a worker
                    // that made room before this look is seen by it (see the class comment for one that makes room
                    // during it).
                    VarHandle.fullFence();
                    if (tryAdmit(me)) {
                        leave(me); // first: the followers' head must not be us
                        admitFollowers();
                        return;
                    }
                }
                if (Thread.currentThread().isInterrupted()) {
                    refused = REFUSED_INTERRUPTED;
                    break;
                }
                long now = System.nanoTime();
                long remaining = policy.maxWaitNanos - (now - start);
                if (remaining <= 0) {
                    refused = REFUSED_MAX_WAIT;
                    break;
                }
                Long callerDeadline = Invocations.invokeDeadline();
                if (callerDeadline != null) {
                    long left = callerDeadline - now;
                    if (left <= 0) {
                        refused = REFUSED_CALLER_TIMEOUT;
                        break;
                    }
                    remaining = Math.min(remaining, left);
                }
                unlockWakingIfShutDown();
                try {
                    if (!engine.checker.running()) {
                        // No checker thread running (its factory failed it, or its start is under way and may still
                        // fail): nothing ticks poll(), which wakes the head of a queue whose limit has room, and so
                        // catches a worker's missed wake-up and the room workers leave below wakeBelow without waking
                        // anyone. The waiter looks once a tick itself, and asks for the checker again (outside the
                        // lock: it calls the thread factory; its backoff spaces the calls out).
                        engine.checker.retryIfAbsent();
                        remaining = Math.min(remaining, Checker.CLOCK_TICK_NANOS);
                    }
                    LockSupport.parkNanos(this, remaining);
                } finally {
                    lock.lock();
                }
            }
        } finally {
            try {
                if (refused > REFUSED_SHUTDOWN && me.last == BEHIND_WAITERS) {
                    me.last = limitAhead(me); // before leave, which takes it out of the queue it waited in
                }
                leave(me);
            } finally {
                // Whatever leave met (it calls no context code, but a map may run out of memory): never left raised
                // or held, or every later wait for room, and shutdown, would wait for good.
                if (refused > REFUSED_SHUTDOWN) {
                    // For capacity: counted before this waiter stops counting as waiting, which may let the executor
                    // terminate (on this very thread, see below): counted after, a terminated executor read it late.
                    countRejected();
                }
                int stillWaiting = waitingCell.decrementAndGet(2 * PAD);
                unlockWakingIfShutDown();
                if (stillWaiting == 0 && engine.state() != Engine.RUNNING) {
                    engine.wakeForTermination(); // the last waiter out: termination waits for it (see nobodyWaits)
                }
            }
        }
        switch (refused) {
            case REFUSED_SHUTDOWN:
                throw engine.rejectShutdown(task);
            case REFUSED_INTERRUPTED:
                throw refused(task, shown, me.last, "; interrupted while waiting for room");
            case REFUSED_MAX_WAIT:
                throw refused(task, shown, me.last, "; no room within maxWait ("
                        + java.time.Duration.ofNanos(policy.maxWaitNanos) + ")");
            default:
                throw new CallerTimedOut(refusal(task, shown, me.last,
                        "; no room within the caller's invokeAll or invokeAny timeout"));
        }
    }

    /** Why {@link #await} ended without admitting its task. */
    private static final int REFUSED_SHUTDOWN = 1;
    private static final int REFUSED_INTERRUPTED = 2;
    private static final int REFUSED_MAX_WAIT = 3;
    private static final int REFUSED_CALLER_TIMEOUT = 4;

    /**
     * One attempt for {@code w} (under the lock): true if its task is accepted; otherwise it joins the queue of the
     * limit that refused it. An exception (shutdown) propagates.
     */
    private boolean tryAdmit(Waiter w) {
        int outcome = w.attempt.getAsInt(); // never parks
        if (outcome == ADMITTED) {
            return true;
        }
        w.last = outcome;
        join(w, outcome);
        return false;
    }

    /**
     * After the head's own admission: admits the waiters now at the head of the executor queue, in order, while their
     * attempts succeed, and wakes each one admitted (or failed by shutdown). Stops at the first that does not fit:
     * it stays the head, and room made later wakes it.
     */
    private void admitFollowers() {
        for (Waiter w; (w = executorQueue.peek()) != null; ) {
            try {
                if (behindItsContext(w)) {
                    continue; // it left the executor queue for its context's
                }
                if (w.contextQueue != null && w.contextQueue.peek() != w) {
                    return; // it also waits behind others of its context: its turn comes from there
                }
                if (engine.state() != Engine.RUNNING) {
                    // Shutdown wakes every waiter, which then refuses itself outside the lock: an attempt made here
                    // would build its refusal, which names the task, under it (a narrower window remains, a shutdown
                    // that begins during the attempt).
                    return;
                }
                if (!tryAdmit(w)) {
                    return;
                }
                w.admitted = true;
            } catch (RuntimeException | Error failed) {
                // Its own call throws it, as if it had made the attempt itself. An Error too (a context's hashCode
                // or equals, a StackOverflowError of one that recurses included): thrown from here, it reached the
                // head's caller, whose own task was already accepted.
                w.failure = failed;
            }
            leave(w);
            LockSupport.unpark(w.thread);
        }
    }

    /**
     * What a refusal names: the limit, its value and, for a lane task, the context ({@code shown}, null for an
     * unordered task).
     */
    String limitMessage(int outcome, Object shown) {
        String name = Messages.describe(shown);
        String in = shown == null ? "" : " (context " + name + ")";
        switch (outcome) {
            case FULL_CONTEXT:
                return "maxQueuedPerContext (" + perContext + ") reached for context " + name;
            case FULL_EXECUTOR:
                return "maxQueued (" + total + ") reached" + in;
            default:
                // BEHIND_WAITERS: every refusal resolves it to the limit those ahead wait for first (limitAhead);
                // one that did not would name the executor's limit, or the lane's where the executor has none.
                return limitMessage(limitWaitedFor(null), shown);
        }
    }

    /**
     * A submission refused at once (the reject policy), counted already (see Engine#countedAsRefusedForCapacity):
     * recorded, and its exception.
     */
    RejectedExecutionException rejectNow(Runnable task, Object shown, int outcome) {
        return refused(task, shown, outcome, "");
    }

    /** An {@code offer} that returns false for capacity, counted already: recorded, no exception built. */
    void refuseOffer(Object shown, Object queueKey, int outcome) {
        if (Jfr.taskRejectedEnabled()) {
            int limit = outcome == BEHIND_WAITERS ? limitAhead(queueKey) : outcome;
            Jfr.taskRejected(engine, shown, limitMessage(limit, shown));
        }
    }

    /**
     * A task of a timed {@code invokeAll} or {@code invokeAny} whose timeout passed while it waited for room: refused
     * and counted like one whose {@code maxWait} ran out; the call then ends as its contract says (see
     * {@link Invocations#invokeAll}).
     */
    static final class CallerTimedOut extends RejectedExecutionException {
        private static final long serialVersionUID = 1L;

        CallerTimedOut(String message) {
            super(message);
        }
    }

    private RejectedExecutionException refused(Runnable task, Object context, int outcome, String after) {
        return new RejectedExecutionException(refusal(task, context, outcome, after));
    }

    /**
     * Reports a refusal for capacity, already counted by its caller ({@code outcome}: the limit, see
     * {@link #limitMessage}, its message followed by {@code after}); returns its message. Counted before: the message
     * names the context and the task, whose {@code toString} is the caller's code and may take its time, and a
     * refusal counted only after it was missing from the snapshots taken meanwhile, and came into {@code rejected()}
     * after the executor had terminated, if it did meanwhile (a waiter counts as it leaves, see await; one refused at
     * once is counted by the engine, see Engine#countedAsRefusedForCapacity).
     */
    private String refusal(Runnable task, Object context, int outcome, String after) {
        String why = limitMessage(outcome, context) + after;
        Jfr.taskRejected(engine, context, why);
        return "executor " + engine.settings.name + ": " + why + "; rejected " + Messages.describe(task);
    }

    /*
     * Invariant: a waiter of a context queue is in the executor queue only while it heads its context queue. One
     * behind others of its context cannot be admitted before them, so at the executor queue's head it would hold every
     * waiter of other contexts back while the executor had room (one slow context stalled them all). It joins the
     * executor queue when its turn in its context comes and its attempt finds the executor full; its ticket then puts
     * it ahead of everyone who came after it.
     */
    private void join(Waiter me, int why) {
        if (why == BEHIND_WAITERS) {
            if (me.context != null && contextQueues.containsKey(new ContextKey(me.context))) {
                joinContext(me); // behind its context's waiters (its ticket is the newest): not the head
            } else {
                // Behind the executor's waiters; or they left meanwhile: then at the empty queue, where we try at once.
                joinExecutor(me);
            }
        } else if (why == FULL_CONTEXT) {
            if (me.inExecutorQueue) {
                // Waiting for the lane now: holding the executor queue's head meanwhile would stall other contexts.
                leaveExecutor(me);
            }
            joinContext(me);
        } else if (why == FULL_EXECUTOR) {
            joinExecutor(me);
        }
    }

    private void joinContext(Waiter me) {
        if (me.contextQueue == null) {
            ContextQueue q = contextQueues.computeIfAbsent(new ContextKey(me.context), ContextQueue::new);
            Waiter head = q.peek();
            q.add(me);
            me.contextQueue = q;
            if (head != null && q.peek() == me && head.inExecutorQueue) {
                // An earlier arrival (one the executor admitted and its lane then refused) heads the context now:
                // the head it displaced leaves the executor queue (see join), and comes back when its turn returns.
                leaveExecutor(head);
            }
            publishHeads(q);
        }
    }

    private void joinExecutor(Waiter me) {
        if (!me.inExecutorQueue) {
            executorQueue.add(me); // by its ticket: ahead of everyone who came later, wherever they wait
            me.inExecutorQueue = true;
            if (me.coalescingKey != null) {
                coalescingWaiters.put(me.coalescingKey, me.thread);
            }
            publishHeads(null);
        }
    }

    /**
     * Whether {@code me} may make its attempt now: it heads every queue it is in. A context's head that is not in the
     * executor queue while earlier arrivals wait there for room joins it first (see join): room the executor makes is
     * theirs before it is ours.
     */
    private boolean mayAttempt(Waiter me) {
        if (behindItsContext(me)) {
            return false;
        }
        if (me.contextQueue != null) {
            if (me.contextQueue.peek() != me) {
                return false;
            }
            Waiter first = executorQueue.peek();
            if (!me.inExecutorQueue && first != null && first.ticket < me.ticket) {
                joinExecutor(me);
                return false;
            }
        }
        return !me.inExecutorQueue || executorQueue.peek() == me;
    }

    /**
     * Whether {@code w}, a sequential waiter in no context queue, had to go behind earlier waiters of its context, and
     * went. It waits in the executor queue alone when its context had no queue as it came (it found the executor
     * full, or queued behind the executor's waiters); an earlier waiter of its context whose lane refused it since has
     * made one. Attempting from the executor queue, {@code w} would overtake that waiter when both are woken by the
     * same room (a task of the context starting frees a place in the lane and one in the executor). So before any
     * attempt it joins that queue, by its ticket, and leaves the executor queue (see join: one behind others of its
     * context does not hold it). The look-up runs the context's {@code equals} only, and lets out of it only what
     * {@link #sameContext} lets through, a {@link VirtualMachineError} (an {@code equals} that recurses without end):
     * the head that runs this for a follower hands that to the follower (see admitFollowers).
     */
    private boolean behindItsContext(Waiter w) {
        if (w.lookup == null || w.contextQueue != null) {
            return false;
        }
        ContextQueue q = contextQueues.get(w.lookup);
        if (q == null || q.peek().ticket > w.ticket) {
            return false; // none of its context waits there, or all came after it: they wait behind it
        }
        if (w.inExecutorQueue) {
            leaveExecutor(w);
        }
        q.add(w);
        w.contextQueue = q;
        publishHeads(q);
        return true;
    }

    private void leaveExecutor(Waiter me) {
        boolean wasHead = executorQueue.peek() == me;
        executorQueue.remove(me);
        me.inExecutorQueue = false;
        if (me.coalescingKey != null) {
            coalescingWaiters.remove(me.coalescingKey); // found by identity (see ContextKey)
        }
        publishHeads(null);
        Waiter next = executorQueue.peek();
        if (wasHead && next != null) {
            LockSupport.unpark(next.thread); // whatever room we were waiting for is theirs to try
        }
    }

    /**
     * For a waiter refused before an attempt of its own (it queued behind others and never reached the head): the
     * limit it waited for, which its refusal names. Behind waiters of its context, the one their head last met (the
     * lane's, or the executor's when that head waits for executor room); in the executor queue, {@code maxQueued}.
     * Under the lock.
     */
    private int limitAhead(Waiter me) {
        ContextQueue q = me.contextQueue;
        Waiter head = q == null ? null : q.peek();
        return limitWaitedFor(head == me ? null : head);
    }

    /**
     * What a submit that went behind parked submitters without an attempt of its own waits for (an offer refused for
     * them, or a submit called back where it cannot wait, see {@link #await}): the limit its refusal names. {@code
     * queueKey}: a sequential lane's context, whose waiters it went behind if it has any, else null (it went behind the
     * executor's). Under the lock where this thread may take it; without it, the published heads alone.
     */
    int limitAhead(Object queueKey) {
        if (queueKey == null) {
            return limitWaitedFor(null);
        }
        if (!lockUnlessTimerHeld()) {
            return perContext > 0 && contextHeads.containsKey(new ContextKey(queueKey)) ? FULL_CONTEXT
                    : limitWaitedFor(null);
        }
        try {
            ContextQueue q = contextQueues.get(new ContextKey(queueKey));
            return limitWaitedFor(q == null ? null : q.peek());
        } finally {
            unlock();
        }
    }

    /** The limit that {@code head}, the first waiter ahead, last met; for none, the executor's if it has one. */
    private int limitWaitedFor(Waiter head) {
        if (head != null && (head.last == FULL_CONTEXT || head.last == FULL_EXECUTOR)) {
            return head.last;
        }
        return total > 0 ? FULL_EXECUTOR : FULL_CONTEXT;
    }

    /** Leaves every queue, and passes the turn on: there may be room the next ones can use. */
    private void leave(Waiter me) {
        ContextQueue q = me.contextQueue;
        if (q != null) {
            q.remove(me);
            me.contextQueue = null;
            if (q.isEmpty()) {
                contextQueues.remove(q.key); // found by identity: mapped keys equal only themselves (ContextKey)
            } else {
                Waiter next = q.peek();
                if (!next.inExecutorQueue && !executorQueue.isEmpty()) {
                    // Its context's head now, it takes its place among the executor's waiters at once: left to join
                    // when it wakes, it found the room gone to later waiters the head admitted meanwhile.
                    joinExecutor(next);
                }
                LockSupport.unpark(next.thread);
            }
            publishHeads(q);
        }
        if (me.inExecutorQueue) {
            leaveExecutor(me);
        }
    }

    /** {@code shutdown()}: every parked submitter wakes, sees the state and is rejected. */
    void shutdown() {
        if (waitingCell.get(2 * PAD) == 0) {
            return;
        }
        if (!lockUnlessTimerHeld()) {
            // Called back under the timer's lock while the lock is held elsewhere (see lockUnlessTimerHeld): the heads
            // are woken from where they are published; each refuses itself and, leaving, wakes the next of its queue.
            // The holder wakes the heads it publishes after this look (see unlockWakingIfShutDown).
            wakeHeads();
            return;
        }
        try {
            wakeAll();
        } finally {
            unlock();
        }
    }

    /** Wakes every waiter (under the lock), once: after that, no attempt admits or queues anyone (see below). */
    private void wakeAll() {
        if (wokeAll) {
            return;
        }
        wokeAll = true;
        for (Waiter w : executorQueue) {
            LockSupport.unpark(w.thread);
        }
        for (PriorityQueue<Waiter> q : contextQueues.values()) {
            for (Waiter w : q) {
                LockSupport.unpark(w.thread);
            }
        }
    }

    /**
     * Lets the lock go, first waking every waiter if the executor is shut down. A {@code shutdown()} that could not
     * take the lock (one made under the timer's lock) woke only the heads published as it looked; this holder may have
     * published others since, past its look at the state (its attempt, or one it made for a follower, queued a waiter
     * as the head of another queue). Those are published before the fence below: either that shutdown saw them, or the
     * read after it sees the state. Once a holder has seen the state and woken everyone, every later holder's attempts
     * see it too and throw, so nobody is queued again: one wake-up of all is enough (and n waiters refusing
     * themselves do not wake each other n times over).
     */
    private void unlockWakingIfShutDown() {
        try {
            VarHandle.fullFence();
            if (engine.state() != Engine.RUNNING) {
                wakeAll();
            }
        } finally {
            unlock();
        }
    }

    /** At termination: see {@link #dropTablesOnceNobodyWaits}; left to the holder if the lock is taken (see unlock). */
    void terminated() {
        dropLeftToHolders = true;
        dropIfLeftToHolders();
    }

    /**
     * Lets the lock go: every holder but the drop below lets it go through here. Termination drops the tables only if
     * it gets the lock at once (a holder may be running a context's hashCode or equals, which may wait for anything,
     * this termination included), and left to the holder, the drop was lost whenever that holder did not see the end:
     * the last waiter out, which saw the executor running just before it let the lock go, or a new submitter's look for
     * waiters, which took the lock as the last one left and never looks at the state. So termination marks first and
     * then tries the lock, and a holder lets the lock go first and then reads the mark. A try that fails found the lock
     * held (the lock's state is volatile): that holder's unlock comes after the try in the one order of volatile
     * accesses, its read of the mark later still, so it sees the mark and tries in turn, and a try of its that fails
     * hands the drop to a later holder still. Before termination this is one volatile read, paid by holders only: never
     * by a worker, nor by a submit while nobody waits.
     */
    private void unlock() {
        lock.unlock();
        dropIfLeftToHolders();
    }

    /**
     * Drops the tables if termination has left that to holders, unless the lock is busy (its holder's unlock comes
     * here too) or still held by this thread (a reentrant hold, from a context's code called back under the lock:
     * the outer unlock comes here, and a drop now would swap the tables under the look that holds them). Only a try:
     * a thread holding the timer's lock may get here (see {@link #lockUnlessTimerHeld}); and it wakes nobody.
     */
    private void dropIfLeftToHolders() {
        if (dropLeftToHolders && !lock.isHeldByCurrentThread() && lock.tryLock()) {
            try {
                dropTablesOnceNobodyWaits();
            } finally {
                lock.unlock(); // dropped, or a late waiter is in: the last one out drops them as it lets the lock go
            }
        }
    }

    /**
     * Under the lock, once the executor has terminated: when no submitter waits, replaces the waiters' queue and maps
     * with empty ones. Their tables never shrink, and a terminated executor kept through a future or a lane handle kept
     * them sized for the most submitters ever parked at once (4 MB after 100,000 virtual submitters waited for room in
     * as many contexts). After shutdown no submitter parks: a late one that looked at the state before it joins the
     * new, small ones and leaves at once (see await), and whoever reads a map without the lock reads one that is
     * empty. Called at termination, which waits for nobody to wait: by termination itself or, if the lock is held
     * then, by its holder as it lets it go; and by a late waiter, the last one out, as it lets the lock go (see
     * unlock). One way for every case: the mark termination leaves.
     */
    private void dropTablesOnceNobodyWaits() {
        if (tablesDropped || waitingCell.get(2 * PAD) != 0 || !executorQueue.isEmpty() || !contextQueues.isEmpty()) {
            return;
        }
        tablesDropped = true;
        executorQueue = new PriorityQueue<>(BY_ARRIVAL);
        contextQueues = new HashMap<>();
        contextHeads = new ConcurrentHashMap<>();
        coalescingWaiters = new ConcurrentHashMap<>();
    }

    // ---- counters --------------------------------------------------------------------------------------------

    void countRejected() {
        rejected.increment();
    }

    void countOverLimit() {
        acceptedOverLimit.increment();
    }

    long rejected() {
        return rejected.sum();
    }

    long acceptedOverLimit() {
        return acceptedOverLimit.sum();
    }

    int waitingSubmitters() {
        return waitingCell.get(2 * PAD);
    }

    /**
     * Whether no submitter is inside {@link #await} (for termination). Shutdown wakes every waiter, but each is
     * counted until it has left, which takes its thread's next turn on a CPU: a terminated executor read
     * {@code waitingSubmitters()} 3 or 4 for a moment after six parked submitters were woken (67 rounds of 300), and 0
     * later, a figure changing after termination. So termination waits for the last one out, who wakes it (see
     * await); none parks after shutdown, so the wait is a matter of microseconds.
     */
    boolean nobodyWaits() {
        return waitingCell.get(2 * PAD) == 0;
    }

    /**
     * Whether the waiters' tables have been replaced by empty ones (for tests in this package): read before this call's
     * own unlock, which may drop them after termination (see unlock), so the answer is what earlier holders left.
     */
    boolean tablesDropped() {
        lock.lock();
        try {
            return tablesDropped;
        } finally {
            unlock();
        }
    }

    /** Context queues mapped now (for tests in this package). */
    int contextQueueCount() {
        lock.lock();
        try {
            return contextQueues.size();
        } finally {
            unlock();
        }
    }
}
