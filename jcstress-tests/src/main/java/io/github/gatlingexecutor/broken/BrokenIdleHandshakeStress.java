package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * Deliberately broken: a copy of the idle hand-shake in which the worker, after finding the queue empty, registers as
 * idle and parks without looking at the queue once more. A submitter that offered in between saw no idle worker, so
 * nobody wakes the worker. The real protocol's worker would park forever (that is how {@code IdleHandshakeStress}
 * fails: its run never finishes); this copy gives up after 100 ms instead, so that the lost wake-up shows as the
 * forbidden outcome "false, true". Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "true, true", expect = ACCEPTABLE, desc = "the worker took the submitted work")
@Outcome(expect = FORBIDDEN, desc = "the worker came back without the work")
@State
public class BrokenIdleHandshakeStress {
    static final int ACTIVE = 0, PARKED = 1, SIGNALLED = 2;

    final ConcurrentLinkedQueue<Object> ready = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedDeque<BrokenIdleHandshakeStress> idle = new ConcurrentLinkedDeque<>();
    final AtomicInteger parkState = new AtomicInteger(ACTIVE);
    final Object item = new Object();
    volatile Thread workerThread;

    @Actor
    public void worker(ZZ_Result r) {
        workerThread = Thread.currentThread();
        for (;;) {
            Object found = ready.poll();
            if (found != null) {
                r.r1 = found == item;
                return;
            }
            parkState.set(PARKED);
            idle.offerFirst(this);
            // BUG: no second poll of the ready queue here
            long deadline = System.nanoTime() + 100_000_000L;
            while (parkState.get() == PARKED) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    r.r1 = false;   // nobody woke us although work was offered: the wake-up was lost
                    return;
                }
                LockSupport.parkNanos(left);
            }
            parkState.set(ACTIVE);
        }
    }

    @Actor
    public void submitter(ZZ_Result r) {
        ready.offer(item);
        for (BrokenIdleHandshakeStress w; (w = idle.pollFirst()) != null; ) {
            if (w.parkState.compareAndSet(PARKED, SIGNALLED)) {
                LockSupport.unpark(w.workerThread);
                break;
            }
        }
        r.r2 = true;
    }
}
