package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The sequential lane of one context: a multi-producer, single-consumer linked queue whose {@code tail} reference is
 * also the lane's state.
 *
 * <pre>
 *   tail is an idle dummy   nothing queued or running (new, or emptied within the grace); the next submit activates it
 *   tail is a task node     active: owned by exactly one thread (activating submitter, ready queue, or a worker)
 *   tail == DEAD            released (terminal); the lane is no longer in the map
 *   tail == CLOSED          closed by shutdown (terminal); submits are rejected
 * </pre>
 *
 * A submit is one CAS on {@code tail}: it both appends the task and learns whether it activated the lane, so the
 * "enqueue, then decide whether to schedule" race of a separate flag cannot happen. The consumer side keeps
 * {@code head}, a dummy node (the last task taken), and needs no atomic instruction per task, except the hand-shake
 * with {@code shutdownNow} (see {@link Worker#beginTake}).
 *
 * <p>Each idle episode has its own idle dummy node, made by the owner as it gives the lane up. A shared IDLE sentinel
 * would allow an ABA: a submitter that read "idle" could still win its CAS after the lane had been activated, run and
 * idled again, and link its task behind a dummy nobody will read. With a fresh dummy per episode, a CAS from an idle
 * dummy succeeds only in the episode it was read in, and the submitter links behind that very dummy.
 */
final class SequentialLane extends Lane {

    static final class Node {
        Runnable task;      // written before the CAS that publishes the node; cleared by the taker
        long seq;           // 1-based position in the lane: the lane's submitted count when this node is the tail;
                            // written before the CAS that publishes the node (retried CASes rewrite it)
        final long stamp;   // Engine#stamp when accepted (0 for dummies): the task's age is read from it
        final boolean idle; // an idle dummy: the tail of a lane nobody owns
        volatile Node next; // set by the producer after its CAS; read with acquire by the consumer

        Node(Runnable task, long seq, long stamp, boolean idle) {
            this.task = task;
            this.seq = seq;
            this.stamp = stamp;
            this.idle = idle;
        }
    }

    /** Spins a worker may wait on an emptied lane for its next task while nothing else is queued (a few µs). */
    private static final int LINGER = 48;

    // Terminal sentinels: never linked, never carry a task.
    static final Node DEAD = new Node(null, 0, 0, false);
    static final Node CLOSED = new Node(null, 0, 0, false);

    private static final VarHandle TAIL;
    private static final VarHandle NEXT;
    private static final VarHandle HEAD;
    private static final VarHandle HEAD_SEEN;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(SequentialLane.class, "tail", Node.class);
            HEAD = l.findVarHandle(SequentialLane.class, "head", Node.class);
            HEAD_SEEN = l.findVarHandle(SequentialLane.class, "headSeen", long.class);
            NEXT = l.findVarHandle(Node.class, "next", Node.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile Node tail;
    /**
     * Consumer-owned: the last node taken as of the owner's last batch boundary. Every node taken since has its
     * {@code task} cleared inside the take hand-shake ({@link Worker#beginTake}/{@link Worker#endTake}), so the first
     * node still waiting is the first one after {@code head} with a task; {@link #lastTaken} finds the one before it.
     *
     * <p>Why not per task: {@code head} shares a cache line with {@code tail}, which every submit CASes, so a store
     * per task moved that line between the producer's core and the worker's twice per task. Written once per batch
     * (on MORE, on giving the lane up, and on the way out of a failure), one tail CAS costs a submitter one miss at
     * most: one hot context's stream ran about 1.3x faster (docs/benchmarks.md). With a {@code maxQueuedPerContext} limit the
     * owner writes it per task again: submitters count the waiting tasks from it, and a stale head there would
     * refuse tasks for a lane that has room.
     *
     * <p>Who reads it: the next owner, which receives the lane through the ready queue (or the activating submitter),
     * after the previous owner's last write to it; when the owner gives the lane up it points {@code head} at the new
     * idle dummy before the CAS that installs that dummy as the tail, inside a take, so a drain never reads the
     * provisional head of a CAS that is about to fail. {@code shutdownNow} reads it after every worker has left its
     * take for good and skips the cleared nodes; statistics read it racily and skip them too. Bounded submitters read
     * it with acquire: a stale value only overstates how many tasks wait, so a limit is never exceeded because of it.
     */
    private Node head;
    /**
     * Submitters' copy of {@code head.seq}, as last read: a bounded lane's submit counts from it and reads the
     * worker's {@code head} (a line the worker writes per task) only when that count says the lane is full. Never
     * ahead of the real head, so it can only overstate the count. Opaque: a hint shared by submitters.
     */
    @SuppressWarnings("unused") // accessed through HEAD_SEEN
    private long headSeen;

    SequentialLane(Engine engine, Object context) {
        super(engine, context);
        Node idle = new Node(null, 0, 0, true);
        head = idle;
        tail = idle;
    }

    @Override
    boolean coalescing() {
        return false;
    }

    @Override
    int offer(Runnable task, int limit) {
        // One node per offer, however many CASes it takes: under contention (many producers, one context) a node per
        // attempt would be garbage made while holding nothing.
        Node node = new Node(task, 0, engine.stamp(), false);
        for (;;) {
            Node t = tail;
            if (t == DEAD) {
                return RELEASED;
            }
            if (t == CLOSED) {
                return CLOSED_TO_SUBMITS;
            }
            // t.seq was written before t was published by its own CAS, which our volatile read of tail follows. The
            // count is exact against t: the CAS below succeeds only if t is still the tail, and head only moves on.
            if (limit > 0 && !t.idle && t.seq - (long) HEAD_SEEN.getOpaque(this) >= limit) {
                // Maybe full: the head seen last may be stale (it only moves on). Read the worker's, remember it.
                long headSeq = ((Node) HEAD.getAcquire(this)).seq;
                HEAD_SEEN.setOpaque(this, headSeq);
                if (t.seq - headSeq >= limit) {
                    return FULL;
                }
            }
            node.seq = t.seq + 1;
            if (TAIL.compareAndSet(this, t, node)) {
                // Release store: the consumer's acquire read of next sees node.task. Until this store the consumer
                // may see tail != head with head.next == null and waits briefly (see runBatch).
                NEXT.setRelease(t, node);
                return t.idle ? ACTIVATED : ACCEPTED;
            }
        }
    }

    @Override
    int runBatch(Worker worker, int budget) {
        Node h = head;
        try {
            return runBatch(worker, budget, h);
        } catch (Throwable outsideAnyTask) {
            // Not a task's failure (runTask keeps those); the engine failing around tasks (an OutOfMemoryError, say).
            // We still own the lane (nothing that can throw follows the CAS that gives it up), and the caller hands
            // it on: the next owner must start from the nodes taken so far, so walk to the last cleared one.
            head = lastTaken(h);
            throw outsideAnyTask;
        }
    }

    private int runBatch(Worker worker, int budget, Node h) {
        int ran = 0;
        int waits = 0;
        for (;;) {
            Node n = (Node) NEXT.getAcquire(h);
            if (n == null) {
                Node t = tail;
                if (t == h && waits < LINGER && !worker.stopping()
                        && ((waits & (Waiting.YIELD_EVERY - 1)) != 0 || engine.readyQueue.isEmpty())) {
                    // Empty, and nothing else waits: a worker with nothing to do would spin anyway, so spin here, on
                    // the lane. A hot context's next task then just appends to an active lane, with no activation,
                    // no trip through the ready queue and no wake-up. The ready queue is looked at once per yield, not
                    // per spin: its head is a line every worker and submitter writes (with 8 producers on 8 contexts,
                    // half the workers' samples were in that look).
                    if (waits == 0) {
                        if (!worker.pool.spinningPays(worker, 0)) {
                            waits = LINGER; // parked workers serve better now: give the lane up at once
                            continue;
                        }
                        worker.spinMark = System.nanoTime();
                    }
                    waits = Waiting.pauseUnlessPreempted(waits, worker);
                    if (waits != Waiting.PREEMPTED) {
                        continue;
                    }
                    waits = LINGER; // the CPU is wanted elsewhere: give the lane up now
                }
                if (t == h && ran > 0 && !worker.stopping() && !engine.readyQueue.isEmpty()) {
                    // Empty, and other work waits: keep the lane active and send it round the ready queue once
                    // more, as after a full batch, instead of making it idle. Its next tasks are then plain appends
                    // for their submitters; made idle here, the next one would pay an activation: the idle dummy's
                    // lines, which we had just written, a ready-queue offer and a wake-up check. Over many contexts
                    // at full load the lane has usually been given more by the time it comes round; if not, that
                    // visit runs nothing (ran == 0), and makes it idle: a lane goes round empty at most once per
                    // visit that ran something.
                    head = h;
                    return MORE;
                }
                if (t == h) {
                    // Empty. Give up ownership: a submitter racing with us either wins its CAS first (then ours fails
                    // and we wait for its link) or finds the idle dummy and activates the lane itself, as its owner.
                    // head changes here, so this is a take like any other for shutdownNow's hand-shake: a drain must
                    // never read the provisional head of a CAS that is about to fail. The dummy is allocated before
                    // the take begins, so nothing between beginTake and endTake can throw (an OutOfMemoryError there
                    // would leave shutdownNow waiting for a take that never ends).
                    Node idle = new Node(null, h.seq, 0, true);
                    if (!worker.beginTake()) {
                        head = h;
                        return DONE;
                    }
                    head = idle;
                    idleSince = worker.clock;
                    boolean released = TAIL.compareAndSet(this, h, idle);
                    if (!released) {
                        head = h;
                    }
                    worker.endTake();
                    if (released) {
                        return IDLED;
                    }
                    continue;
                }
                if (t == CLOSED || worker.stopping()) {
                    head = h;
                    return DONE; // shutdownNow owns what is left
                }
                // A submitter has swung tail but not yet linked its node: it is between two instructions.
                waits = Waiting.pause(waits);
                continue;
            }
            if (ran == budget) {
                head = h; // the batch boundary: the next owner starts here (see head)
                return MORE;
            }
            if (!worker.beginTake()) {
                head = h;
                return DONE; // shutdownNow: the rest of the lane is returned, not run
            }
            Runnable task = n.task;
            n.task = null; // taken: a drain or a statistics walk from a stale head skips it
            if (worker.engine.laneHeadPerTask) { // not a field of the lane: a read of its line costs the miss saved
                HEAD.setRelease(this, n); // bounded submitters count from it (a plain store on x86)
            }
            worker.endTake();
            worker.runTask(task);
            h = n;
            ran++;
            waits = 0;
        }
    }

    /**
     * The last node taken, walking from {@code h} (the head, or a node at or before the last one taken) over the nodes
     * whose task has been cleared. A task is never null, so a node with none has been taken (or drained).
     */
    private static Node lastTaken(Node h) {
        for (Node n; (n = (Node) NEXT.getAcquire(h)) != null && n.task == null; ) {
            h = n;
        }
        return h;
    }

    @Override
    boolean closeIfIdle() {
        for (;;) {
            Node t = tail;
            if (t == DEAD || t == CLOSED) {
                return true;
            }
            if (!t.idle) {
                return false;
            }
            if (TAIL.compareAndSet(this, t, CLOSED)) {
                return true;
            }
        }
    }

    @Override
    boolean releaseIfIdle() {
        Node t = tail;
        return t.idle && TAIL.compareAndSet(this, t, DEAD);
    }

    @Override
    boolean isIdle() {
        return tail.idle;
    }

    @Override
    boolean isActive() {
        Node t = tail;
        return !t.idle && t != DEAD && t != CLOSED;
    }

    @Override
    int closeAndDrain(List<Runnable> out) {
        Node t;
        do {
            t = tail;
            if (t == DEAD || t == CLOSED) {
                return 0;
            }
        } while (!TAIL.compareAndSet(this, t, CLOSED));
        if (t.idle) {
            return 0;
        }
        // Every node up to t was accepted; a link may still be in flight from its submitter, so wait for it. The
        // head may be a batch behind: the nodes taken since have no task, and are skipped (no take is in progress,
        // see Worker#awaitNotTaking, so what is cleared is taken and what is not is ours).
        int moved = 0;
        Node h = head;
        int waits = 0;
        while (h != t) {
            Node n = (Node) NEXT.getAcquire(h);
            if (n == null) {
                waits = Waiting.pause(waits);
                continue;
            }
            Runnable task = n.task;
            if (task != null) {
                out.add(task);
                n.task = null;
                moved++;
            }
            h = n;
        }
        head = h;
        return moved;
    }

    @Override
    long submittedCount() {
        Node t = tail;
        return t == DEAD || t == CLOSED ? executedCount() : t.seq;
    }

    /**
     * Statistics: the last node taken, from a racy read of {@code head} (at most a batch behind, so a walk of at most
     * {@code batchSize} nodes). A take racing the walk is seen or not: the count is a moment old either way.
     */
    private Node lastTakenNow() {
        return lastTaken((Node) HEAD.getAcquire(this));
    }

    @Override
    long executedCount() {
        return lastTakenNow().seq;
    }

    @Override
    long queuedCount() {
        Node t = tail;
        if (t == DEAD || t == CLOSED || t.idle) {
            return 0;
        }
        return Math.max(0, t.seq - (engine.laneHeadPerTask ? ((Node) HEAD.getAcquire(this)).seq : lastTakenNow().seq));
    }

    @Override
    long oldestStamp() {
        Node t = tail;
        if (t == DEAD || t == CLOSED || t.idle) {
            return NO_WAITING;
        }
        Node n = (Node) NEXT.getAcquire(lastTakenNow());
        return n == null ? NO_WAITING : n.stamp;
    }
}
