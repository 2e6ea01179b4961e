package io.github.gatlingexecutor.broken;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A copy of the sequential lane's state protocol (tail as state, a fresh idle dummy per idle episode, DEAD when
 * released) with two switchable bugs, for the deliberately broken jcstress tests.
 */
final class BrokenSeqLane {
    static final int ACCEPTED = 0, ACTIVATED = 1, RELEASED = 2;

    static final class Node {
        final Runnable task;
        final boolean idle;
        volatile Node next;

        Node(Runnable task, boolean idle) {
            this.task = task;
            this.idle = idle;
        }
    }

    static final Node DEAD = new Node(null, false);
    private static final VarHandle TAIL;

    static {
        try {
            TAIL = MethodHandles.lookup().findVarHandle(BrokenSeqLane.class, "tail", Node.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final boolean twoStepIdle;
    private final boolean twoStepRelease;
    private volatile Node tail;
    private Node head;

    BrokenSeqLane(boolean twoStepIdle, boolean twoStepRelease) {
        this.twoStepIdle = twoStepIdle;
        this.twoStepRelease = twoStepRelease;
        Node idle = new Node(null, true);
        head = idle;
        tail = idle;
    }

    int offer(Runnable task) {
        for (;;) {
            Node t = tail;
            if (t == DEAD) {
                return RELEASED;
            }
            Node n = new Node(task, false);
            if (TAIL.compareAndSet(this, t, n)) {
                t.next = n;
                return t.idle ? ACTIVATED : ACCEPTED;
            }
        }
    }

    void runBatch() {
        Node h = head;
        for (;;) {
            Node n = h.next;
            if (n == null) {
                if (tail == h) {
                    Node idle = new Node(null, true);
                    head = idle;
                    if (twoStepIdle) {
                        tail = idle;                       // BUG: an offer since the check is lost
                        return;
                    }
                    if (TAIL.compareAndSet(this, h, idle)) {
                        return;
                    }
                    head = h;
                }
                Thread.onSpinWait();
                continue;
            }
            n.task.run();
            head = n;
            h = n;
        }
    }

    boolean releaseIfIdle() {
        Node t = tail;
        if (!t.idle) {
            return false;
        }
        if (twoStepRelease) {
            tail = DEAD;                                   // BUG: an activation since the check is lost
            return true;
        }
        return TAIL.compareAndSet(this, t, DEAD);
    }
}
