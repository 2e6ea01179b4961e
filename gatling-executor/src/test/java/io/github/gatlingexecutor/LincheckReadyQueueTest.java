package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.LincheckLaneTest.check;
import static io.github.gatlingexecutor.LincheckLaneTest.runAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import org.jetbrains.lincheck.Lincheck;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Model checking of {@link ReadyQueue} with Lincheck: every queued item is taken exactly once (by a poll, or by the
 * submitter taking its unordered task back), nothing is lost while polls leave the tail behind a dead head, and one
 * thread's offers come out in its order. The take-back scenario also runs against a copy whose poll reads an
 * unordered task's item instead of claiming it, and must fail there.
 */
class LincheckReadyQueueTest {

    private static final int INVOCATIONS = Integer.getInteger("lincheck.invocations", 300);
    private static final int BROKEN_INVOCATIONS = Integer.getInteger("lincheck.brokenInvocations", 3_000);

    interface QueueOps {
        void offer(PlainTask task);

        Object poll();

        boolean takeBack(PlainTask task);
    }

    static QueueOps real() {
        ReadyQueue q = new ReadyQueue();
        return new QueueOps() {
            @Override
            public void offer(PlainTask task) {
                q.offerTask(task);
            }

            @Override
            public Object poll() {
                return q.poll();
            }

            @Override
            public boolean takeBack(PlainTask task) {
                return q.takeBack(task);
            }
        };
    }

    private static PlainTask task(int stamp) {
        return new PlainTask(() -> { }, stamp);
    }

    /** How many times {@code item} occurs in {@code items}, by identity. */
    private static int count(List<Object> items, Object item) {
        int n = 0;
        for (Object o : items) {
            if (o == item) {
                n++;
            }
        }
        return n;
    }

    private static void drainInto(QueueOps q, List<Object> out) {
        for (Object o; (o = q.poll()) != null; ) {
            out.add(o);
        }
    }

    /**
     * {@code a} waits in the queue; one thread offers {@code b} and polls, another polls twice, a third takes
     * {@code a} back. Then the rest is drained: {@code a} was polled or taken back, not both and not neither;
     * {@code b} was polled once; a thread that polled both got {@code a} first.
     */
    static Runnable takeBackVersusPoll(java.util.function.Supplier<QueueOps> make) {
        return () -> {
            QueueOps q = make.get();
            PlainTask a = task(1);
            PlainTask b = task(2);
            q.offer(a);
            Object[] got = new Object[3];
            boolean[] back = new boolean[1];
            runAll(() -> {
                q.offer(b);
                got[0] = q.poll();
            }, () -> {
                got[1] = q.poll();
                got[2] = q.poll();
            }, () -> back[0] = q.takeBack(a));
            List<Object> polled = new ArrayList<>();
            for (Object o : got) {
                if (o != null) {
                    polled.add(o);
                }
            }
            drainInto(q, polled);
            check(count(polled, a) + (back[0] ? 1 : 0) == 1,
                    "a polled " + count(polled, a) + " times, taken back " + back[0]);
            check(count(polled, b) == 1, "b polled " + count(polled, b) + " times");
            check(!(got[1] == b && got[2] == a), "one thread polled b before a");
        };
    }

    /**
     * An empty queue; one thread offers two tasks, another polls twice, a third offers one: polls that empty the
     * queue leave the tail on a dead head, and the offers after must still link. Each task is polled exactly once,
     * and the first thread's two come out in its order.
     */
    static Runnable offersAndPollsAtTheEmptyEnd() {
        return () -> {
            QueueOps q = real();
            PlainTask x = task(1);
            PlainTask y = task(2);
            PlainTask z = task(3);
            Object[] got = new Object[2];
            runAll(() -> {
                q.offer(x);
                q.offer(y);
            }, () -> {
                got[0] = q.poll();
                got[1] = q.poll();
            }, () -> q.offer(z));
            List<Object> polled = new ArrayList<>();
            for (Object o : got) {
                if (o != null) {
                    polled.add(o);
                }
            }
            drainInto(q, polled);
            for (PlainTask t : new PlainTask[] {x, y, z}) {
                check(count(polled, t) == 1, "task " + t.stamp + " polled " + count(polled, t) + " times");
            }
            check(polled.indexOf(x) < polled.indexOf(y), "y came out before x: " + polled);
        };
    }

    /**
     * The checker's release of a lane sent round empty ({@link ReadyQueue#takeEmptyRounds}, then
     * {@link Lane#releaseIfEmpty}) against a worker's poll and a submitter's task for that lane. The lane is claimed
     * once, by the poll or the checker; a task the submitter had accepted is never dropped with a released lane: if
     * the lane was released, the submit was told so (and would look the context up again); if the checker took it and
     * could not release it, it owns it and queues it again, with the task.
     */
    static Runnable emptyRoundScenario() {
        return () -> {
            Engine e = LincheckLaneTest.engine();
            e.readyQueue.offerTask(task(0)); // other work waits, so the emptied lane goes round once more
            Worker w = LincheckLaneTest.worker(e, null);
            SequentialLane lane = new SequentialLane(e, "ctx");
            check(lane.offer(() -> { }, 0) == Lane.ACTIVATED, "activated");
            check(lane.runBatch(w, 64) == Lane.ROUND, "sent round");
            ReadyQueue q = new ReadyQueue();
            q.offerLane(lane, 0);
            Object[] polled = new Object[1];
            int[] outcome = new int[1];
            boolean[] taken = new boolean[1];
            boolean[] released = new boolean[1];
            runAll(() -> polled[0] = q.poll(),
                    () -> q.takeEmptyRounds(l -> {
                        taken[0] = true;
                        if (l.releaseIfEmpty()) {
                            released[0] = true;
                        } else {
                            q.offerLane(l, 0); // still ours: back in the queue
                        }
                    }),
                    () -> outcome[0] = lane.offer(() -> { }, 0));
            Object again = q.poll();
            // Who holds the lane now: the poller, or the queue (the checker queued it again). Never both.
            int holders = (polled[0] == lane ? 1 : 0) + (again == lane ? 1 : 0);
            if (released[0]) {
                check(outcome[0] == Lane.RELEASED, "a released lane accepted a task: " + outcome[0]);
                check(holders == 0, "a released lane is still held: polled " + polled[0] + ", then " + again);
            } else {
                check(outcome[0] == Lane.ACCEPTED, "offer to an active lane: " + outcome[0]);
                check(holders == 1, "the lane is held " + holders + " times (taken back " + taken[0] + ")");
            }
        };
    }

    @Test
    @Timeout(120)
    void emptyRoundTakenBackVersusPollAndSubmit() {
        Lincheck.runConcurrentTest(INVOCATIONS, emptyRoundScenario());
    }

    @Test
    @Timeout(120)
    void takeBackVersusPoll() {
        Lincheck.runConcurrentTest(INVOCATIONS, takeBackVersusPoll(() -> real()));
    }

    @Test
    @Timeout(120)
    void takeBackScenarioFindsAPollThatDoesNotClaim() {
        // Lincheck 3.7 finds this bug on JDK 17 within seconds but not on JDK 25 (3,000 invocations; also not with the
        // scenario cut to two threads), as with the two-step idle of LincheckLaneTest: the check of the tool is made
        // where the tool is known to see the bug. The scenarios against the real queue run on both.
        Assumptions.assumeTrue(Runtime.version().feature() < 25,
                "Lincheck 3.7 misses this interleaving on JDK " + Runtime.version().feature());
        LincheckFailures.assertFinds(BROKEN_INVOCATIONS, takeBackVersusPoll(() -> new PollWithoutClaim()),
                LincheckFailures.Found.CHECK);
    }

    @Test
    @Timeout(120)
    void offersVersusPollsAtTheEmptyEnd() {
        Lincheck.runConcurrentTest(INVOCATIONS, offersAndPollsAtTheEmptyEnd());
    }

    /**
     * The broken variant: a linked queue like the real one in the parts the scenario reaches (link by CAS, head by
     * CAS, take-back by a CAS on the item), except that a poll reads an unordered task's item and then clears it,
     * rather than claiming it with one atomic step. A take-back between the read and the clear wins too.
     */
    static final class PollWithoutClaim implements QueueOps {
        static final class Node {
            volatile Object item;
            volatile Node next;

            Node(Object item) {
                this.item = item;
            }
        }

        private static final VarHandle HEAD;
        private static final VarHandle NEXT;
        private static final VarHandle ITEM;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                HEAD = l.findVarHandle(PollWithoutClaim.class, "head", Node.class);
                NEXT = l.findVarHandle(Node.class, "next", Node.class);
                ITEM = l.findVarHandle(Node.class, "item", Object.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private volatile Node head = new Node(null);

        @Override
        public void offer(PlainTask task) {
            Node node = new Node(task);
            for (Node p = head; ; ) {
                Node q = p.next;
                if (q == null) {
                    if (NEXT.compareAndSet(p, null, node)) {
                        return;
                    }
                } else {
                    p = q;
                }
            }
        }

        @Override
        public Object poll() {
            for (;;) {
                Node h = head;
                Node first = h.next;
                if (first == null) {
                    return null;
                }
                if (HEAD.compareAndSet(this, h, first)) {
                    Object item = first.item; // the bug: read, then clear, with a take-back free to win between
                    first.item = null;
                    if (item != null) {
                        return item;
                    }
                }
            }
        }

        @Override
        public boolean takeBack(PlainTask task) {
            for (Node p = head.next; p != null; p = p.next) {
                if (p.item == task) {
                    return ITEM.compareAndSet(p, task, null);
                }
            }
            return false;
        }
    }

    /**
     * An item taken back from the middle of the queue leaves its node linked, with no item, until a poll passes it:
     * emptiness and counts are of items, not nodes. Counted as nodes, a task its submitter took back (or an empty
     * round the checker took out) would keep the queue looking non-empty, to quiescence, to a lane's round and to
     * the pool's sizing, until some poll came by.
     */
    @Test
    void nodesWhoseItemsWereTakenBackCountAsNothing() {
        ReadyQueue q = new ReadyQueue();
        PlainTask first = new PlainTask(() -> { }, 0);
        PlainTask second = new PlainTask(() -> { }, 0);
        q.offerTask(first);
        q.offerTask(second);
        assertTrue(q.takeBack(first));
        assertEquals(1, q.countUpTo(8), "the node of the task taken back counts as nothing");
        assertTrue(q.takeBack(second));
        assertTrue(q.isEmpty(), "both tasks taken back: nothing is queued");
        assertNull(q.poll());
    }
}
