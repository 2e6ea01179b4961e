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
 * Deliberately broken: a copy of the take/stop hand-shake between a lane's owner and {@code shutdownNow}, in which
 * the owner reads the executor state <em>before</em> announcing its take (the real worker writes {@code phase}
 * first, then reads the state). Same outcomes as {@code ShutdownNowDrainStress}; the forbidden "1, 2" (a task run
 * and returned) shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "stopped before the first take; both returned")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "one ran, the other was returned")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "both were taken before the stop")
@Outcome(expect = FORBIDDEN, desc = "a task run and returned, or lost")
@State
public class BrokenTakeHandshakeStress {
    static final class Node {
        Runnable task;
        Node next;
    }

    volatile boolean stop;
    volatile boolean taking;
    volatile Node head;   // the next node to take
    int ran;

    public BrokenTakeHandshakeStress() {
        Node a = new Node();
        Node b = new Node();
        a.task = () -> ran++;
        b.task = () -> ran++;
        a.next = b;
        head = a;
    }

    @Actor
    public void owner() {
        for (;;) {
            if (stop) {          // BUG: the state is read before the take is announced
                return;
            }
            taking = true;
            Node n = head;
            if (n == null) {
                taking = false;
                return;
            }
            head = n.next;
            taking = false;
            n.task.run();
        }
    }

    @Actor
    public void stopper(II_Result r) {
        stop = true;
        while (taking) {
            Thread.onSpinWait();
        }
        List<Runnable> out = new ArrayList<>();
        for (Node n = head; n != null; n = n.next) {
            out.add(n.task);
        }
        head = null;
        r.r2 = out.size();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
