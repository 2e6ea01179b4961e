package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The engine's ready queue: lanes with work to run and unordered tasks, first in first out; any thread offers, any
 * worker polls. A Michael-Scott linked queue (a dummy head, a tail that may lag one link behind) whose nodes also carry
 * what the statistics need: the stamp of the item's oldest waiting task and whether the item is a lane. A walk for
 * {@code oldestQueuedAge()} or {@code busiestContexts(k)} then reads nodes and nothing else: with a million lanes
 * queued, following each item to its lane (or even to its class word) was most of the cost.
 *
 * <p>Taking an item: a poll swings {@code head} to the first node, which becomes the new dummy, and then claims the
 * node's item with an atomic swap. The swap, not the head CAS, decides, because an item may also be taken back from
 * the middle of the queue by a CAS on its node: an unordered task by its submitter (a submit that finds the executor
 * shut down once its task is queued, see {@code Engine#attemptPlain}), and an emptied lane sent round once more by the
 * checker while every worker is in a long task ({@link #takeEmptyRounds}). Whichever claims the item first owns it; a
 * node whose item was taken back stays linked, with no item, and polls skip it.
 *
 * <p>An old head is linked to itself once it is left behind: a dead node kept alive by a stale reference (or promoted
 * to the old generation) then holds no chain of younger nodes with it. A walker that meets a self-linked node has
 * fallen behind the head and starts again from it.
 */
final class ReadyQueue extends ReadyQueueTail {
    static final class Node {
        /** The lane or {@link PlainTask}; cleared when taken. Published by the CAS that links the node. */
        volatile Object item;
        /** Engine#stamp of the item's oldest waiting task when it was queued (exact while it stays queued). */
        final long stamp;
        final boolean lane;
        volatile Node next;

        Node(Object item, long stamp, boolean lane) {
            this.item = item;
            this.stamp = stamp;
            this.lane = lane;
        }
    }

    private static final VarHandle HEAD;
    private static final VarHandle TAIL;
    private static final VarHandle NEXT;
    private static final VarHandle ITEM;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(ReadyQueueHead.class, "head", Node.class);
            TAIL = l.findVarHandle(ReadyQueueTail.class, "tail", Node.class);
            NEXT = l.findVarHandle(Node.class, "next", Node.class);
            ITEM = l.findVarHandle(Node.class, "item", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    ReadyQueue() {
        Node dummy = new Node(null, 0, false);
        head = dummy;
        tail = dummy;
    }

    /**
     * Queues a lane the caller owns, with the stamp of its oldest waiting task. The caller has just written the lines
     * that stamp is read from (it linked the lane's first task, or ended a batch there), and nobody but
     * {@code shutdownNow} takes from a queued lane, so the stamp stays exact while the lane waits here until then
     * (walks read the lanes themselves from then on, see Snapshots). A lane queued with nothing waiting (sent round
     * once more after it emptied, see SequentialLane#runBatch) gets {@link Lane#NO_WAITING}, which tells a walker to
     * read the lane itself: the tasks appended since are only there.
     */
    void offerLane(Lane lane, long now) {
        lane.queuedAt = now; // before the link CAS that publishes the lane to the next owner
        offer(new Node(lane, lane.oldestStamp(), true));
    }

    void offerTask(PlainTask task) {
        offer(new Node(task, task.stamp, false));
    }

    private void offer(Node node) {
        Node t = tail;
        Node p = t;
        for (;;) {
            Node q = (Node) NEXT.getAcquire(p);
            if (q == null) {
                // The CAS publishes node (its final fields and its item) to whoever reads this link with acquire.
                if (NEXT.compareAndSet(p, null, node)) {
                    // Swing the tail only when it has fallen two links behind (we linked past a node another offer
                    // added after our read of it): every other offer leaves it, and the line holding the tail moves
                    // between the threads half as often. A lagging tail costs the next offer one more link to follow.
                    if (p != t) {
                        TAIL.compareAndSet(this, t, node);
                    }
                    return;
                }
            } else if (q == p) {
                // p is a dead head (polls never touch the tail, and offers swing it lazily, so it may point at one):
                // take the tail again if it moved, else walk from the head, which is always live.
                Node t2 = tail;
                p = t2 != t ? (t = t2) : head;
            } else {
                p = q;
            }
        }
    }

    /** Takes the first item, or returns null if there is none. */
    Object poll() {
        for (;;) {
            Node h = head;
            Node first = h.next;
            if (first == null) {
                return null;
            }
            if (h == first) {
                continue; // h was left behind (self-linked) after our read of head: read it again
            }
            if (!HEAD.compareAndSet(this, h, first)) {
                continue;
            }
            // first is the new dummy and ours: nobody else polls it. The tail is left alone (a read of its line per
            // poll would cost a miss); an offer that finds it pointing at a dead head recovers from the head.
            NEXT.setRelease(h, h);
            Object item = ITEM.getAndSet(first, null); // the item may be taken back concurrently (see the class note)
            if (item != null) {
                return item;
            }
            // taken back: move on
        }
    }

    /** Whether no item is queued (racy, like any emptiness check of a concurrent queue). */
    boolean isEmpty() {
        return countUpTo(1) == 0;
    }

    /**
     * How many items are queued, counting no further than {@code max} (racy, like any walk: an item met twice by a walk
     * that fell behind the head may count twice). For emptiness and sizing, where only "fewer than max" matters.
     */
    int countUpTo(int max) {
        int n = 0;
        for (Node p = head.next; p != null && n < max; ) {
            if (p.item != null) {
                n++;
            }
            Node q = p.next;
            p = q == p ? head.next : q;
        }
        return n;
    }

    /**
     * Takes {@code task} back if no worker has taken it: a CAS on its node's item, so exactly one of this call and
     * the poll that reaches it wins. By identity, once (if the same task is queued twice, one of them goes).
     */
    boolean takeBack(PlainTask task) {
        restart:
        for (;;) {
            for (Node p = head.next; p != null; ) {
                if (p.item == task) {
                    return ITEM.compareAndSet(p, task, null);
                }
                Node q = p.next;
                if (q == p) {
                    continue restart;
                }
                p = q;
            }
            return false;
        }
    }

    /**
     * Takes out of the queue every lane that was sent round once more with nothing waiting (queued with
     * {@link Lane#NO_WAITING}, see SequentialLane#runBatch) and is still empty, and hands each to {@code owner}, which
     * then owns it as a poll would. For the checker, when no worker will come round to such lanes soon: each would
     * otherwise stay mapped, empty, and count as work waiting. Racy like any walk: a lane given work since the look is
     * still taken, and its new owner must queue it again.
     */
    void takeEmptyRounds(java.util.function.Consumer<Lane> owner) {
        for (Node p = head.next; p != null; ) {
            Object item = p.item;
            if (item != null && p.lane && p.stamp == Lane.NO_WAITING && ((Lane) item).queuedNothing()
                    && ITEM.compareAndSet(p, item, null)) {
                owner.accept((Lane) item);
            }
            Node q = p.next;
            p = q == p ? head.next : q;
        }
    }

    /**
     * Takes every lane out of the queue, for a terminated executor. A lane queued after {@code shutdownNow}'s drain of
     * the queue (by a submitter that activated it before the shutdown, a worker sending it round at its batch's end, or
     * the checker) was closed by the same shutdownNow, which took its waiting tasks, and nobody polls any more: left
     * here, it would keep its context reachable for as long as the executor is. Termination calls this, and so does a
     * submitter that offers its lane only after termination (see Engine#makeReady). After {@code shutdown()} no lane
     * is queued at termination: it comes only once none has work. Unordered tasks stay: one queued now is a refused
     * submitter's, which takes it back itself (see Engine#attemptPlain).
     */
    void dropLanes() {
        for (Node p = head.next; p != null; ) {
            Object item = p.item;
            if (item != null && p.lane) {
                ITEM.compareAndSet(p, item, null);
            }
            Node q = p.next;
            p = q == p ? head.next : q;
        }
    }

    /**
     * Receives each queued item with its stamp during a {@link #walk}. A lane comes as an {@code Object}: a cast
     * would load the lane's class word, a cache miss per lane that the walk exists to avoid; the receiver casts the
     * few it keeps.
     */
    interface Visitor {
        void lane(Object lane, long stamp);

        void task(long stamp);
    }

    /**
     * Visits the items queued now (racy: an item taken during the walk may or may not be seen, and one queued during
     * it may or may not be). Reads the nodes only, never the items' own fields. A walk that falls behind the head
     * resumes from the head, so an item may be visited twice; visitors must tolerate that.
     */
    void walk(Visitor v) {
        for (Node p = head.next; p != null; ) {
            Object item = p.item;
            if (item != null) {
                if (p.lane) {
                    v.lane(item, p.stamp);
                } else {
                    v.task(p.stamp);
                }
            }
            Node q = p.next;
            p = q == p ? head.next : q;
        }
    }
}

/**
 * The head and the tail on cache lines of their own: pollers CAS the head, offers the tail, and in one object line
 * each offer took the line from the pollers and each poll took it back. Superclass fields are laid out first, so the
 * padding classes put 64 bytes or more between the two (and between each and its neighbours in the heap).
 */
abstract class ReadyQueuePad0 {
    long p00, p01, p02, p03, p04, p05, p06, p07;
}

abstract class ReadyQueueHead extends ReadyQueuePad0 {
    volatile ReadyQueue.Node head;
}

abstract class ReadyQueuePad1 extends ReadyQueueHead {
    long p10, p11, p12, p13, p14, p15, p16, p17;
}

abstract class ReadyQueueTail extends ReadyQueuePad1 {
    volatile ReadyQueue.Node tail;
    long p20, p21, p22, p23, p24, p25, p26, p27;
}
