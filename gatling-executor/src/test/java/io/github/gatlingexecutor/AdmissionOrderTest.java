package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The queues of parked submitters under {@code Overflow.block}, driven directly: each waiter's attempt is scripted
 * (room in the context and in the executor are flags of the test), and the test plays the checker's tick
 * ({@link Admission#poll}) itself, so every step of an interleaving is placed on purpose.
 */
class AdmissionOrderTest {

    private static final Object C0 = "c0";

    private final Engine engine = new Engine(GatlingExecutor.builder().name("admission").coreThreads(1)
            .maxQueued(4).maxQueuedPerContext(1).overflow(Overflow.block(Duration.ofSeconds(60))).settings());
    private final Admission admission = engine.admission;

    {
        // The test plays the checker's tick (Admission#poll) itself: with no checker running, each waiter would look for
        // room once a clock tick on its own, and the interleavings below would not be the test's to place.
        LincheckLaneTest.set(engine.checker, "running", true);
    }

    /** Room for one more task in context c0, and places left in the executor; what the scripted attempts read. */
    private final AtomicBoolean contextRoom = new AtomicBoolean();
    private final AtomicInteger executorRoom = new AtomicInteger();

    private IntSupplier laneAttempt() {
        return () -> {
            if (!contextRoom.get()) {
                return Admission.FULL_CONTEXT;
            }
            if (executorRoom.get() == 0) {
                return Admission.FULL_EXECUTOR;
            }
            executorRoom.decrementAndGet();
            contextRoom.set(false); // the one place of c0 is taken
            return Admission.ADMITTED;
        };
    }

    private IntSupplier plainAttempt() {
        return () -> {
            if (executorRoom.get() == 0) {
                return Admission.FULL_EXECUTOR;
            }
            executorRoom.decrementAndGet();
            return Admission.ADMITTED;
        };
    }

    /**
     * A lane submit in the engine's own order: the executor's place is taken before the lane is offered the task
     * (Engine#attemptLane), so with both limits reached the attempt reports the executor full.
     */
    private IntSupplier executorFirstLaneAttempt() {
        return () -> {
            if (executorRoom.get() == 0) {
                return Admission.FULL_EXECUTOR;
            }
            if (!contextRoom.get()) {
                return Admission.FULL_CONTEXT;
            }
            executorRoom.decrementAndGet();
            contextRoom.set(false);
            return Admission.ADMITTED;
        };
    }

    /** {@code attempt}, counting in {@code count} the attempts that found the executor full. */
    private static IntSupplier countingExecutorFull(IntSupplier attempt, AtomicInteger count) {
        return () -> {
            int outcome = attempt.getAsInt();
            if (outcome == Admission.FULL_EXECUTOR) {
                count.incrementAndGet();
            }
            return outcome;
        };
    }

    /** A submitter parked in {@link Admission#await}; {@code outcome} is null while it waits. */
    private static final class Submitter {
        final AtomicReference<Object> outcome = new AtomicReference<>();
        final Thread thread;

        Submitter(String name, Runnable await) {
            thread = new Thread(() -> {
                try {
                    await.run();
                    outcome.set("admitted");
                } catch (RuntimeException | Error refused) {
                    outcome.set(refused);
                }
            }, name);
            thread.setDaemon(true);
            thread.start();
        }
    }

    private Submitter waitFor(String name, Object context, int why, IntSupplier attempt, int waitingAfter) {
        Submitter s = new Submitter(name, () -> admission.await(context, context, false, why, attempt, () -> { }));
        waitUntil(name + " parked", () -> admission.waitingSubmitters() == waitingAfter);
        return s;
    }

    /** {@code attempt}, counting every attempt in {@code count}. */
    private static IntSupplier counting(IntSupplier attempt, AtomicInteger count) {
        return () -> {
            count.incrementAndGet();
            return attempt.getAsInt();
        };
    }

    private void untilDone(Submitter s) {
        waitUntil(s.thread.getName() + " admitted", () -> {
            admission.poll(); // the checker's tick: wakes the head of every queue
            return s.outcome.get() != null;
        }, () -> "waiting submitters " + admission.waitingSubmitters(), 10_000);
        assertEquals("admitted", s.outcome.get(), s.thread.getName());
    }

    /**
     * A context's head that finds the executor full joins the executor queue; a later submitter of the same context
     * that already waited in the executor queue (it queued behind both kinds of waiter when it came) must not then
     * head the executor queue while second in its context's queue. With first-come order per queue the two waited
     * for each other until maxWait (60 s here), with room in both limits; with one arrival order the earlier one goes.
     */
    @Test
    @Timeout(30)
    void aContextsHeadThatMovesToTheExecutorQueueIsNotStuckBehindALaterSubmitterOfItsContext() throws Exception {
        // 1. The context is full: s1 waits in c0's queue.
        AtomicInteger s1FoundExecutorFull = new AtomicInteger();
        Submitter s1 = waitFor("s1", C0, Admission.FULL_CONTEXT, countingExecutorFull(laneAttempt(),
                s1FoundExecutorFull), 1);
        // 2. The executor is full: x waits in the executor queue.
        Submitter x = waitFor("x", null, Admission.FULL_EXECUTOR, plainAttempt(), 2);
        // 3. A later submitter of c0 queues behind s1 in c0's queue (only there: it cannot go before s1).
        Submitter s2 = waitFor("s2", C0, Admission.BEHIND_WAITERS, laneAttempt(), 3);
        // 4. One place in the executor: x goes.
        executorRoom.set(1);
        untilDone(x);
        // 5. Room in c0 but the executor full again: s1 tries, finds the executor full, joins the executor queue.
        contextRoom.set(true);
        waitUntil("s1 finding the executor full", () -> {
            admission.poll();
            return s1FoundExecutorFull.get() > 0;
        });
        // 6. Room everywhere: s1 then s2 must get in (s2 once c0 has room again after s1).
        executorRoom.set(2);
        untilDone(s1);
        assertNull(s2.outcome.get(), "s2 overtook s1 in their context");
        contextRoom.set(true);
        untilDone(s2);
        assertEquals(0, admission.waitingSubmitters());
    }

    /**
     * A submitter behind others of its context does not hold the executor queue: one that came while both queues held
     * waiters joined both, and at the executor queue's head, unable to go before its context's head, it stopped every
     * later waiter of other contexts while the executor had room (each waited out maxWait, 60 s here).
     */
    @Test
    @Timeout(30)
    void aSubmitterBehindOthersOfItsContextDoesNotHoldBackOtherWaitersWhileTheExecutorHasRoom() throws Exception {
        Submitter s1 = waitFor("s1", C0, Admission.FULL_CONTEXT, laneAttempt(), 1); // c0 full
        Submitter x = waitFor("x", null, Admission.FULL_EXECUTOR, plainAttempt(), 2); // the executor full
        Submitter s2 = waitFor("s2", C0, Admission.BEHIND_WAITERS, laneAttempt(), 3);
        Submitter y = waitFor("y", null, Admission.BEHIND_WAITERS, plainAttempt(), 4);
        executorRoom.set(2); // c0 stays full: x and y go, s1 and s2 wait for c0
        untilDone(x);
        untilDone(y);
        assertNull(s1.outcome.get());
        assertNull(s2.outcome.get());
        executorRoom.set(2);
        contextRoom.set(true);
        untilDone(s1);
        contextRoom.set(true);
        untilDone(s2);
        assertEquals(0, admission.waitingSubmitters());
    }

    /**
     * The next of a context that an admitted waiter leaves goes before later waiters of the executor: it was woken to
     * join the executor queue itself, and the head that had just admitted itself admitted the later waiter behind it
     * first, with the room the earlier one was owed.
     */
    @Test
    @Timeout(30)
    void theNextWaiterOfAContextGoesBeforeLaterWaitersOfTheExecutor() throws Exception {
        // c0 takes several tasks here (an attempt does not use its room up); the executor is full.
        IntSupplier roomy = () -> {
            if (!contextRoom.get()) {
                return Admission.FULL_CONTEXT;
            }
            if (executorRoom.get() == 0) {
                return Admission.FULL_EXECUTOR;
            }
            executorRoom.decrementAndGet();
            return Admission.ADMITTED;
        };
        AtomicInteger s1FoundExecutorFull = new AtomicInteger();
        Submitter s1 = waitFor("s1", C0, Admission.FULL_CONTEXT, countingExecutorFull(roomy, s1FoundExecutorFull), 1);
        Submitter s2 = waitFor("s2", C0, Admission.BEHIND_WAITERS, roomy, 2);
        Submitter w = waitFor("w", null, Admission.FULL_EXECUTOR, plainAttempt(), 3);
        contextRoom.set(true); // s1 finds the executor full and joins its queue, ahead of w
        waitUntil("s1 finding the executor full", () -> {
            admission.poll();
            return s1FoundExecutorFull.get() > 0;
        });
        executorRoom.set(2); // room for two: s1, then s2 (earlier than w), not w
        untilDone(s1);
        untilDone(s2);
        assertNull(w.outcome.get(), "w, a later waiter, took the room s2 was owed");
        executorRoom.set(1);
        untilDone(w);
        assertEquals(0, admission.waitingSubmitters());
    }

    /**
     * A later submitter of a context that waits in the executor queue alone (its context had no queue when it came)
     * must not overtake an earlier one of its context that its lane refused since: when a task of the context starts,
     * a place in the lane and one in the executor come free at once, and the worker wakes both heads. Whichever takes
     * the lock first, the earlier one goes first. Before, the later one attempted from the executor queue's head,
     * and won whenever it came first (in an executor: 16 of 40 runs). Here the later one is made to come first: the
     * test holds the lock while it wakes it, so it is the only thread waiting for the lock when it is let go.
     */
    @Test
    @Timeout(30)
    void aLaterSubmitterWaitingForTheExecutorDoesNotOvertakeAnEarlierOneOfItsContextWhoseLaneWasFull()
            throws Exception {
        Submitter c = waitFor("c", C0, Admission.FULL_EXECUTOR, executorFirstLaneAttempt(), 1); // no c0 queue
        Submitter x = waitFor("x", null, Admission.BEHIND_WAITERS, plainAttempt(), 2);
        AtomicInteger hAttempts = new AtomicInteger();
        Submitter h = waitFor("h", C0, Admission.BEHIND_WAITERS, counting(executorFirstLaneAttempt(), hAttempts), 3);
        // One place in the executor, c0 still full: woken, c finds its lane full and makes c0's queue, and x takes
        // the place. Only c is woken (untilDone's ticks would also wake c again, and its attempt would then put it in
        // the executor queue ahead of h, as a context's head that finds the executor full).
        executorRoom.set(1);
        LockSupport.unpark(c.thread);
        waitUntil("x admitted", () -> x.outcome.get() != null);
        assertEquals("admitted", x.outcome.get());
        assertNull(c.outcome.get());
        assertNull(h.outcome.get());
        // A task of c0 starts: room in c0 and in the executor. h is woken first and takes the lock first.
        executorRoom.set(1);
        contextRoom.set(true);
        int attemptsBefore = hAttempts.get();
        admission.lock.lock();
        try {
            LockSupport.unpark(h.thread);
            waitUntil("h waiting for the lock", () -> admission.lock.hasQueuedThread(h.thread));
        } finally {
            admission.lock.unlock();
        }
        waitUntil("h holding the lock", () -> !admission.lock.hasQueuedThread(h.thread));
        admission.lock.lock(); // h has decided and parked (or returned admitted) when we get it
        admission.lock.unlock();
        assertEquals(attemptsBefore, hAttempts.get(), "h attempted before c, the earlier waiter of its context");
        untilDone(c);
        assertNull(h.outcome.get(), "h was admitted with c's room");
        executorRoom.set(1);
        contextRoom.set(true);
        untilDone(h);
        assertEquals(0, admission.waitingSubmitters());
    }

    /**
     * The head that admits the waiters behind it first checks whether each must go behind earlier waiters of its
     * context, which looks the context up and so runs its {@code equals}. That look ran outside the catch that hands a
     * follower's failure to the follower: an {@code equals} that threw an Error (a {@code StackOverflowError} of one
     * that recurses) ended the head's own call, whose task had been accepted. Here two contexts share a hash, and the
     * follower's starts to throw once the other has a queue.
     */
    @Test
    @Timeout(30)
    void aFollowersContextWhoseEqualsThrowsFailsTheFollowerNotTheHeadThatAdmittedItself() throws Exception {
        AtomicBoolean broken = new AtomicBoolean();
        Object a1 = new CollidingContext("a1", broken);
        Object a2 = new CollidingContext("a2", broken);
        Submitter head = waitFor("head", null, Admission.FULL_EXECUTOR, plainAttempt(), 1);
        Submitter follower = waitFor("follower", a2, Admission.FULL_EXECUTOR, plainAttempt(), 2); // no queue of a2
        Submitter other = waitFor("other", a1, Admission.FULL_CONTEXT, laneAttempt(), 3); // makes a1's queue
        broken.set(true);
        executorRoom.set(1); // room for the head alone; it then looks at the follower
        untilDone(head);
        waitUntil("the follower failed", () -> follower.outcome.get() != null);
        assertInstanceOf(StackOverflowError.class, follower.outcome.get());
        broken.set(false);
        assertNull(other.outcome.get());
        executorRoom.set(1);
        contextRoom.set(true);
        untilDone(other);
        assertEquals(0, admission.waitingSubmitters());
    }

    /** A context whose hash every instance shares, and whose {@code equals} throws while {@code broken}. */
    private static final class CollidingContext {
        private final String name;
        private final AtomicBoolean broken;

        CollidingContext(String name, AtomicBoolean broken) {
            this.name = name;
            this.broken = broken;
        }

        @Override
        public int hashCode() {
            return 42;
        }

        @Override
        public boolean equals(Object o) {
            if (o == this) {
                return true;
            }
            if (broken.get()) {
                throw new StackOverflowError("equals of " + name + " (thrown on purpose)");
            }
            return o instanceof CollidingContext && ((CollidingContext) o).name.equals(name);
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
