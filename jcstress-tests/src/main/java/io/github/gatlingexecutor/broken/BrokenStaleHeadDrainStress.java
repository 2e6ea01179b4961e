package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.ArrayList;
import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Deliberately broken: a copy of the per-batch head of a sequential lane (the owner clears each node's task as it
 * takes it and moves the lane's {@code head} only at the end of its batch) with a {@code shutdownNow} drain that
 * returns every node after {@code head} instead of skipping the cleared ones. The take hand-shake is the real one
 * (announce, then read the state). Same outcomes as {@code ShutdownNowDrainStress}, which runs the real lane; here the
 * forbidden "1, 2" (a task run and returned) shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "stopped before the first take; both returned")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "one ran, the other was returned")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "both were taken before the stop")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, or lost")
@State
public class BrokenStaleHeadDrainStress {
    static final class Node {
        Runnable task;
        Node next;
    }

    volatile boolean stop;
    volatile boolean taking;
    Node head;   // the last node taken as of the batch boundary: a dummy
    int ran;

    public BrokenStaleHeadDrainStress() {
        Node dummy = new Node();
        Node a = new Node();
        Node b = new Node();
        a.task = () -> ran++;
        b.task = () -> ran++;
        dummy.next = a;
        a.next = b;
        head = dummy;
    }

    @Actor
    public void owner() {
        Node h = head; // the batch starts here; head is written back only when the batch ends
        for (;;) {
            taking = true;
            if (stop) {
                taking = false;
                return;
            }
            Node n = h.next;
            if (n == null) {
                taking = false;
                head = h;
                return;
            }
            Runnable task = n.task;
            n.task = null; // taken
            taking = false;
            task.run();
            h = n;
        }
    }

    @Actor
    public void stopper(II_Result r) {
        stop = true;
        while (taking) {
            Thread.onSpinWait();
        }
        List<Runnable> out = new ArrayList<>();
        for (Node n = head.next; n != null; n = n.next) {
            out.add(n.task); // BUG: a node taken since the batch began has no task any more, and is not skipped
        }
        r.r2 = out.size();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
