package io.github.gatlingexecutor;

import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
 * waits in the executor queue. Each queue is FIFO, and a submitter attempts only while it is at the head of every
 * queue it is in, so submitters of one context (or, for {@code maxQueued}, of the executor) are admitted in arrival
 * order. A new submitter that sees anyone waiting ({@link #waiting} &gt; 0) first looks, under the lock, whether
 * someone waits for what it needs, and queues behind them if so: it never overtakes a parked submitter.
 *
 * <h2>No lost wake-up, no wake-up per task</h2>
 * A waiter increments {@link #waiting} (a locked instruction, so a full fence) before it re-checks for room; a worker
 * that makes room writes the lane's head (or decrements {@link #queued}, also locked) and reads {@link #waiting}
 * behind a full fence. Both sides write, then read: either the worker sees the waiter and wakes it, or the waiter sees
 * the room. When nobody waits, making room costs the worker that fence and one read, and no lock.
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

    /** Accepted tasks not yet started, kept only when {@link #total} is set: the reservation counter. */
    private final AtomicLong queued = new AtomicLong();
    /** Submitters parked now (or about to park); see the class comment for why it is incremented first. */
    private final AtomicInteger waiting = new AtomicInteger();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder acceptedOverLimit = new LongAdder();

    private final ReentrantLock lock = new ReentrantLock();
    /** Guarded by lock. */
    private final ArrayDeque<Waiter> executorQueue = new ArrayDeque<>();
    /** Guarded by lock: the waiters of each full sequential context; an entry is removed when it empties. */
    private final HashMap<Object, ArrayDeque<Waiter>> contextQueues = new HashMap<>();

    /** One parked submitter. Its fields are guarded by the lock. */
    private static final class Waiter {
        final Thread thread = Thread.currentThread();
        final Object context; // the sequential context it submits to, or null
        boolean inContextQueue;
        boolean inExecutorQueue;
        /** It has been at the head of the executor queue: it goes back to the front, not the end. */
        boolean hadExecutorTurn;

        Waiter(Object context) {
            this.context = context;
        }
    }

    Admission(Engine engine, Settings settings) {
        this.engine = engine;
        this.perContext = settings.maxQueuedPerContext;
        this.total = settings.maxQueued;
        this.policy = settings.overflow;
    }

    // ---- the executor-wide reservation ---------------------------------------------------------------------

    /**
     * Takes a place in the executor: {@link #ADMITTED}, or {@link #ADMITTED_OVER} when it was full and
     * {@code force} is set, or {@link #FULL_EXECUTOR} (nothing taken).
     */
    int reserve(boolean force) {
        long before = queued.getAndIncrement();
        if (before < total) {
            return ADMITTED;
        }
        if (force) {
            return ADMITTED_OVER;
        }
        release();
        return FULL_EXECUTOR;
    }

    /** Gives a place back that no task took after all (a refused or replacing submit, a task taken back). */
    void release() {
        queued.decrementAndGet(); // a locked instruction: orders the write before the read of waiting
        if (waiting.get() > 0) {
            room(null);
        }
    }

    /**
     * A worker is about to start a queued task (of the sequential lane of {@code context}, or, for null, of a
     * coalescing lane or an unordered one): its place is free. See the class comment for the fence.
     */
    void started(Object context) {
        if (total > 0) {
            queued.decrementAndGet();
        } else {
            VarHandle.fullFence(); // the lane's new head, written by the caller, before the read of waiting
        }
        if (waiting.get() > 0) {
            room(context);
        }
    }

    /** Wakes the head of the context's queue and of the executor queue: they try again. */
    private void room(Object context) {
        lock.lock();
        try {
            if (context != null) {
                ArrayDeque<Waiter> q = contextQueues.get(context);
                if (q != null) {
                    LockSupport.unpark(q.peekFirst().thread);
                }
            }
            Waiter head = executorQueue.peekFirst();
            if (head != null) {
                LockSupport.unpark(head.thread);
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- submitters ------------------------------------------------------------------------------------------

    /**
     * Before a first attempt while someone waits: {@link #BEHIND_WAITERS} if a parked submitter waits for what this
     * one needs (the sequential lane of {@code context}, or room in the executor), else {@link #ADMITTED} (go ahead).
     */
    int mustQueue(Object context) {
        if (waiting.get() == 0) {
            return ADMITTED;
        }
        lock.lock();
        try {
            boolean behind = (context != null && contextQueues.containsKey(context))
                    || (total > 0 && !executorQueue.isEmpty());
            return behind ? BEHIND_WAITERS : ADMITTED;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Parks the calling submitter until {@code attempt} admits its task, in arrival order. {@code why} is the outcome
     * that brought it here. Throws {@link RejectedExecutionException} when the wait times out, the thread is
     * interrupted (its status kept) or the executor shuts down. {@code context} keys the context queue (a sequential
     * lane's context, else null); {@code shown} is the context the message names.
     */
    void await(Object context, Object shown, int why, IntSupplier attempt, Runnable task) {
        long start = System.nanoTime();
        Waiter me = new Waiter(context);
        int last = why;
        lock.lock();
        waiting.incrementAndGet();
        try {
            join(me, why);
            for (;;) {
                if (engine.state() != Engine.RUNNING) {
                    throw engine.rejectShutdown(task);
                }
                if (atHead(me)) {
                    int outcome = attempt.getAsInt(); // never parks; may throw for shutdown
                    if (outcome == ADMITTED) {
                        return;
                    }
                    last = outcome;
                    join(me, outcome);
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw refused(task, shown, limitMessage(last, shown) + "; interrupted while waiting for room");
                }
                long remaining = policy.maxWaitNanos - (System.nanoTime() - start);
                if (remaining <= 0) {
                    throw refused(task, shown, limitMessage(last, shown) + "; no room within maxWait ("
                            + java.time.Duration.ofNanos(policy.maxWaitNanos) + ")");
                }
                lock.unlock();
                try {
                    LockSupport.parkNanos(this, remaining);
                } finally {
                    lock.lock();
                }
            }
        } finally {
            leave(me);
            waiting.decrementAndGet();
            lock.unlock();
        }
    }

    /**
     * What a refusal names: the limit, its value and, for a lane task, the context ({@code shown}, null for an
     * unordered task).
     */
    String limitMessage(int outcome, Object shown) {
        String in = shown == null ? "" : " (context " + shown + ")";
        switch (outcome) {
            case FULL_CONTEXT:
                return "maxQueuedPerContext (" + perContext + ") reached for context " + shown;
            case FULL_EXECUTOR:
                return "maxQueued (" + total + ") reached" + in;
            default:
                return "earlier submitters still wait for room" + in + " (maxQueuedPerContext "
                        + (perContext > 0 ? perContext : "unbounded") + ", maxQueued "
                        + (total > 0 ? total : "unbounded") + ")";
        }
    }

    /** A submission refused at once (the reject policy): counted, recorded, and its exception. */
    RejectedExecutionException rejectNow(Runnable task, Object shown, int outcome) {
        return refused(task, shown, limitMessage(outcome, shown));
    }

    /** An {@code offer} that returns false for capacity: counted and recorded, no exception built. */
    void refuseOffer(Object shown, int outcome) {
        countRejected();
        if (Jfr.taskRejectedEnabled()) {
            Jfr.taskRejected(engine, shown, limitMessage(outcome, shown));
        }
    }

    private RejectedExecutionException refused(Runnable task, Object context, String why) {
        countRejected();
        Jfr.taskRejected(engine, context, why);
        return new RejectedExecutionException("executor " + engine.settings.name + ": " + why + "; rejected " + task);
    }

    private void join(Waiter me, int why) {
        if (why == BEHIND_WAITERS) {
            if (me.context != null && contextQueues.containsKey(me.context)) {
                joinContext(me);
            }
            if (total > 0 && !executorQueue.isEmpty()) {
                joinExecutor(me);
            }
            if (!me.inContextQueue && !me.inExecutorQueue) {
                joinExecutor(me); // they left meanwhile: wait at the (empty) executor queue, where we try at once
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
        if (!me.inContextQueue) {
            contextQueues.computeIfAbsent(me.context, c -> new ArrayDeque<>()).addLast(me);
            me.inContextQueue = true;
        }
    }

    private void joinExecutor(Waiter me) {
        if (!me.inExecutorQueue) {
            if (me.hadExecutorTurn) {
                executorQueue.addFirst(me); // its turn came before everyone now queued
            } else {
                executorQueue.addLast(me);
            }
            me.inExecutorQueue = true;
        }
    }

    private boolean atHead(Waiter me) {
        boolean head = true;
        if (me.inContextQueue) {
            head = contextQueues.get(me.context).peekFirst() == me;
        }
        if (me.inExecutorQueue) {
            boolean first = executorQueue.peekFirst() == me;
            me.hadExecutorTurn |= first;
            head &= first;
        }
        return head;
    }

    private void leaveExecutor(Waiter me) {
        boolean wasHead = executorQueue.peekFirst() == me;
        executorQueue.remove(me);
        me.inExecutorQueue = false;
        Waiter next = executorQueue.peekFirst();
        if (wasHead && next != null) {
            LockSupport.unpark(next.thread); // whatever room we were waiting for is theirs to try
        }
    }

    /** Leaves every queue, and passes the turn on: there may be room the next ones can use. */
    private void leave(Waiter me) {
        if (me.inContextQueue) {
            ArrayDeque<Waiter> q = contextQueues.get(me.context);
            q.remove(me);
            me.inContextQueue = false;
            if (q.isEmpty()) {
                contextQueues.remove(me.context);
            } else {
                LockSupport.unpark(q.peekFirst().thread);
            }
        }
        if (me.inExecutorQueue) {
            leaveExecutor(me);
        }
    }

    /** {@code shutdown()}: every parked submitter wakes, sees the state and is rejected. */
    void shutdown() {
        if (waiting.get() == 0) {
            return;
        }
        lock.lock();
        try {
            for (Waiter w : executorQueue) {
                LockSupport.unpark(w.thread);
            }
            for (ArrayDeque<Waiter> q : contextQueues.values()) {
                for (Waiter w : q) {
                    LockSupport.unpark(w.thread);
                }
            }
        } finally {
            lock.unlock();
        }
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
        return waiting.get();
    }
}
