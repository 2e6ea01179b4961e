package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The sequential lane of one context: a multi-producer, single-consumer linked queue whose {@code tail} reference is
 * also the lane's state.
 *
 * <pre>
 *   tail == IDLE      new lane, nothing queued; the next submit activates it
 *   tail == a node    active: owned by exactly one thread (activating submitter, ready queue, or a worker)
 *   tail == DEAD      released (terminal); the lane is no longer in the map
 *   tail == CLOSED    closed by shutdown (terminal); submits are rejected
 * </pre>
 *
 * A submit is one CAS on {@code tail}: it both appends the task and learns whether it activated the lane, so the
 * "enqueue, then decide whether to schedule" race of a separate flag cannot happen. The consumer side keeps
 * {@code head}, a dummy node (the last task taken), and needs no atomic instruction per task, except the hand-shake
 * with {@code shutdownNow} (see {@link Worker#beginTake}).
 */
final class SequentialLane extends Lane {

    static final class Node {
        Runnable task;      // written before the CAS that publishes the node; cleared by the taker
        final long seq;     // 1-based position in the lane: the lane's submitted count when this node is the tail
        volatile Node next; // set by the producer after its CAS; read with acquire by the consumer

        Node(Runnable task, long seq) {
            this.task = task;
            this.seq = seq;
        }
    }

    // Sentinels: never linked, never carry a task.
    static final Node IDLE = new Node(null, 0);
    static final Node DEAD = new Node(null, 0);
    static final Node CLOSED = new Node(null, 0);

    private static final VarHandle TAIL;
    private static final VarHandle NEXT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(SequentialLane.class, "tail", Node.class);
            NEXT = l.findVarHandle(Node.class, "next", Node.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile Node tail = IDLE;
    /**
     * Consumer-owned: the last node taken (a dummy whose task is gone). Only the lane's owner reads or writes it; the
     * activating submitter reads it while the lane is idle (no owner), ordered by its CAS on {@code tail}.
     */
    private Node head = new Node(null, 0);

    SequentialLane(Engine engine, Object context) {
        super(engine, context);
    }

    @Override
    boolean coalescing() {
        return false;
    }

    /** Appends {@code task}. Lock-free: one CAS, retried only when another submitter of this context won. */
    int offer(Runnable task) {
        for (;;) {
            Node t = tail;
            if (t == DEAD) {
                return RELEASED;
            }
            if (t == CLOSED) {
                return CLOSED_TO_SUBMITS;
            }
            // The sequence number is fixed before the CAS: if the CAS succeeds, t was the tail, so t.seq (written
            // before t's own CAS, which our volatile read of tail follows) is the right predecessor number.
            Node prev = t == IDLE ? head : t;
            Node node = new Node(task, prev.seq + 1);
            if (TAIL.compareAndSet(this, t, node)) {
                // Release store: the consumer's acquire read of next sees node.task. Until this store the consumer
                // may see tail != head with head.next == null and waits briefly (see runBatch).
                NEXT.setRelease(prev, node);
                return t == IDLE ? ACTIVATED : ACCEPTED;
            }
        }
    }

    @Override
    int runBatch(Worker worker, int budget) {
        Node h = head;
        int ran = 0;
        int waits = 0;
        for (;;) {
            Node n = (Node) NEXT.getAcquire(h);
            if (n == null) {
                Node t = tail;
                if (t == h) {
                    // Empty. Release the lane: a submitter racing with us either wins its CAS first (then ours fails
                    // and we wait for its link) or finds DEAD and looks the context up again.
                    if (TAIL.compareAndSet(this, h, DEAD)) {
                        unmap();
                        return DONE;
                    }
                    continue;
                }
                if (t == CLOSED || worker.stopping()) {
                    return DONE; // shutdownNow owns what is left
                }
                // A submitter has swung tail but not yet linked its node: it is between two instructions.
                waits = Backoff.pause(waits);
                continue;
            }
            if (ran == budget) {
                return MORE;
            }
            if (!worker.beginTake()) {
                return DONE; // shutdownNow: the rest of the lane is returned, not run
            }
            Runnable task = n.task;
            n.task = null;
            head = n;
            worker.endTake();
            worker.runTask(task);
            h = n;
            ran++;
            waits = 0;
        }
    }

    @Override
    boolean closeIfIdle() {
        for (;;) {
            Node t = tail;
            if (t == DEAD || t == CLOSED) {
                return true;
            }
            if (t != IDLE) {
                return false;
            }
            if (TAIL.compareAndSet(this, IDLE, CLOSED)) {
                return true;
            }
        }
    }

    @Override
    boolean releaseIfIdle() {
        return TAIL.compareAndSet(this, IDLE, DEAD);
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
        if (t == IDLE) {
            return 0;
        }
        // Every node up to t was accepted; a link may still be in flight from its submitter, so wait for it.
        int moved = 0;
        Node h = head;
        int waits = 0;
        while (h != t) {
            Node n = (Node) NEXT.getAcquire(h);
            if (n == null) {
                waits = Backoff.pause(waits);
                continue;
            }
            out.add(n.task);
            n.task = null;
            h = n;
            moved++;
        }
        head = h;
        return moved;
    }

    @Override
    long submittedCount() {
        Node t = tail;
        return t == IDLE || t == DEAD || t == CLOSED ? executedCount() : t.seq;
    }

    @Override
    long executedCount() {
        return head.seq;
    }
}
