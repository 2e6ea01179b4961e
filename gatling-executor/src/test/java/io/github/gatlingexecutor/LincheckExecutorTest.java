package io.github.gatlingexecutor;

import io.github.gatlingexecutor.LincheckFailures.Found;
import io.github.gatlingexecutor.LincheckToyExecutor.Bug;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.jetbrains.lincheck.Lincheck;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Whole-executor race scenarios under Lincheck's model checker ({@link Lincheck#runConcurrentTest(int, Runnable)}):
 * two threads race on one executor (submits against lane release and re-creation, against {@code shutdown()},
 * against {@code shutdownNow()}, and coalescing replacement against the worker's take), and every interleaving
 * Lincheck explores is checked after the executor has terminated.
 *
 * <p>The scenarios are written against the small {@link Target} interface. They run here against
 * {@link LincheckToyExecutor}: without a bug it passes every scenario (the checks are sound), and each scenario finds
 * the bug it is written for (the checks can fail; each {@code ...Finds...} test was seen failing before it was
 * turned into an assertion that Lincheck reports the bug).
 *
 * <p>The same scenarios against {@link GatlingExecutor} itself do not complete under Lincheck 3.7: the first
 * invocation is reported as "Concurrent test has hung" after 60 s (the executor's checker thread waits with a timed
 * {@code Condition.awaitNanos} and workers spin briefly before parking, which the model checker does not get through).
 * The real engine's versions of these races are model-checked piece by piece in {@link LincheckLaneTest} (the real
 * lanes, the real submit path with test threads as workers, the real {@code shutdownNow}) and
 * {@link LincheckWorkerPoolTest} (the real idle hand-shake), and end to end by {@link StressTest}.
 */
class LincheckExecutorTest {

    /** The operations the scenarios need. */
    interface Target {
        void sequential(Object context, Runnable task);

        void coalescing(Object context, Runnable task);

        void shutdown();

        List<Runnable> shutdownNow();

        /** Waits, without a timeout, until the executor has terminated. */
        boolean awaitTermination() throws InterruptedException;

        /** Live lanes now, or -1 if the target cannot tell. */
        long liveContexts();
    }

    /** Per-lane record: how many of its tasks are inside now, and the order they ran in. */
    static final class LaneLog {
        final AtomicInteger inside = new AtomicInteger();
        final List<Probe> ran = new ArrayList<>();   // appended only by the lane's running task
        volatile boolean overlap;
    }

    /** A task that records its runs in its lane's log. */
    static final class Probe implements Runnable {
        final String name;
        final LaneLog lane;
        final AtomicInteger runs = new AtomicInteger();
        volatile boolean accepted, rejected, returned;

        Probe(String name, LaneLog lane) {
            this.name = name;
            this.lane = lane;
        }

        @Override
        public void run() {
            runs.incrementAndGet();
            if (lane.inside.incrementAndGet() != 1) {
                lane.overlap = true;
            }
            lane.ran.add(this);
            lane.inside.decrementAndGet();
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    static void join(Thread... threads) {
        try {
            for (Thread t : threads) {
                t.join();
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    static void awaitTermination(Target target) {
        try {
            check(target.awaitTermination(), "did not terminate");
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    static void submit(Target target, boolean sequential, Object context, Probe p) {
        try {
            if (sequential) {
                target.sequential(context, p);
            } else {
                target.coalescing(context, p);
            }
            p.accepted = true;
        } catch (RejectedExecutionException e) {
            p.rejected = true;
        }
    }

    // ---- scenarios --------------------------------------------------------------------------------------------

    /**
     * Submits racing with the lane being emptied, released and re-created: thread A submits a1, a2 and thread B
     * submits b1 to one sequential context while the worker drains it. Every task runs exactly once, never two at a
     * time, a1 before a2, and afterwards no lane is left. Catches {@link Bug#NO_RECHECK_ON_IDLE} (seen failing: a
     * task offered while the drainer goes idle is never run).
     */
    static Runnable laneReleaseRace(Supplier<Target> factory) {
        return () -> {
            Target t = factory.get();
            LaneLog lane = new LaneLog();
            Probe a1 = new Probe("a1", lane), a2 = new Probe("a2", lane), b1 = new Probe("b1", lane);
            Thread ta = new Thread(() -> {
                submit(t, true, "ctx", a1);
                submit(t, true, "ctx", a2);
            });
            Thread tb = new Thread(() -> submit(t, true, "ctx", b1));
            ta.start();
            tb.start();
            join(ta, tb);
            t.shutdown();
            awaitTermination(t);
            for (Probe p : List.of(a1, a2, b1)) {
                check(p.accepted, p + " rejected before shutdown");
                check(p.runs.get() == 1, p + " ran " + p.runs + " times");
            }
            check(!lane.overlap, "two tasks of one lane ran at once");
            check(lane.ran.indexOf(a1) < lane.ran.indexOf(a2), "a2 ran before a1: " + lane.ran);
            check(t.liveContexts() <= 0, "a lane is still live after termination: " + t.liveContexts());
        };
    }

    /**
     * Submits racing with {@code shutdown()}: every accepted task runs exactly once (sequential and coalescing
     * lanes drain), no rejected task runs, and once one submit is rejected every later one is. Catches
     * {@link Bug#NO_RECHECK_ON_IDLE} as well (seen failing).
     */
    static Runnable submitVersusShutdown(Supplier<Target> factory) {
        return () -> {
            Target t = factory.get();
            LaneLog seq = new LaneLog(), coal = new LaneLog();
            Probe s1 = new Probe("s1", seq), c1 = new Probe("c1", coal), s2 = new Probe("s2", seq);
            Probe s0 = new Probe("s0", seq);
            submit(t, true, "ctx", s0);     // the lane is active when the race starts
            Thread ta = new Thread(() -> {
                submit(t, true, "ctx", s1);
                submit(t, false, "ctx", c1);
                submit(t, true, "ctx", s2);
            });
            Thread tb = new Thread(t::shutdown);
            ta.start();
            tb.start();
            join(ta, tb);
            awaitTermination(t);
            boolean sawRejected = false;
            for (Probe p : List.of(s0, s1, c1, s2)) {
                check(p.accepted != p.rejected, p + " neither accepted nor rejected");
                check(!(sawRejected && p.accepted), p + " accepted after an earlier submit was rejected");
                sawRejected |= p.rejected;
                check(p.runs.get() == (p.accepted ? 1 : 0), p + " accepted=" + p.accepted + " ran " + p.runs);
            }
            check(!seq.overlap && !coal.overlap, "two tasks of one lane ran at once");
            check(seq.ran.indexOf(s0) < seq.ran.indexOf(s1) || !s1.accepted, "order broken: " + seq.ran);
            check(seq.ran.indexOf(s1) < seq.ran.indexOf(s2) || !s2.accepted, "order broken: " + seq.ran);
            check(t.liveContexts() <= 0, "a lane is still live after termination");
        };
    }

    /**
     * Submits racing with {@code shutdownNow()}: every accepted task is run or returned, exactly once, never both;
     * returned tasks of a sequential lane come after every task of it that ran; nothing but accepted tasks is
     * returned. Catches {@link Bug#SHUTDOWN_CHECK_THEN_ACT} (seen failing: a task accepted after the drain is lost).
     */
    static Runnable submitVersusShutdownNow(Supplier<Target> factory) {
        return () -> {
            Target t = factory.get();
            LaneLog seq = new LaneLog(), coal = new LaneLog();
            Probe s1 = new Probe("s1", seq), s2 = new Probe("s2", seq), c1 = new Probe("c1", coal);
            List<Runnable> returned = new ArrayList<>();
            Thread ta = new Thread(() -> {
                submit(t, true, "ctx", s1);
                submit(t, false, "ctx", c1);
                submit(t, true, "ctx", s2);
            });
            Thread tb = new Thread(() -> returned.addAll(t.shutdownNow()));
            ta.start();
            tb.start();
            join(ta, tb);
            awaitTermination(t);
            for (Runnable r : returned) {
                check(r instanceof Probe, "returned something that is not a submitted task: " + r);
                Probe p = (Probe) r;
                check(p.accepted, "returned a task that was not accepted: " + p);
                check(!p.returned, "returned twice: " + p);
                p.returned = true;
            }
            for (Probe p : List.of(s1, c1, s2)) {
                check(p.accepted != p.rejected, p + " neither accepted nor rejected");
                int runs = p.runs.get();
                if (p.accepted) {
                    check(runs + (p.returned ? 1 : 0) == 1, p + " ran " + runs + " times, returned=" + p.returned);
                } else {
                    check(runs == 0, "rejected task ran: " + p);
                }
            }
            check(!(s1.returned && s2.runs.get() > 0), "s2 ran although s1, before it, was returned");
            check(!seq.overlap && !coal.overlap, "two tasks of one lane ran at once");
        };
    }

    /**
     * The coalescing hand-off: thread A submits q1 then q2, thread B submits q3, to one coalescing context, while
     * the worker takes and runs. Never two at once; the last submission (q2 or q3) runs; if q1 and q2 both run, q1
     * runs first. Catches {@link Bug#TAKE_GET_THEN_SET} (seen failing: the last task is lost) and
     * {@link Bug#COALESCING_DOUBLE_SCHEDULE} (seen failing: two tasks of the context run at once).
     */
    static Runnable coalescingHandOff(Supplier<Target> factory) {
        return () -> {
            Target t = factory.get();
            LaneLog lane = new LaneLog();
            Probe q1 = new Probe("q1", lane), q2 = new Probe("q2", lane), q3 = new Probe("q3", lane);
            Thread ta = new Thread(() -> {
                submit(t, false, "ctx", q1);
                submit(t, false, "ctx", q2);
            });
            Thread tb = new Thread(() -> submit(t, false, "ctx", q3));
            ta.start();
            tb.start();
            join(ta, tb);
            t.shutdown();
            awaitTermination(t);
            check(!lane.overlap, "two coalescing tasks of one context ran at once");
            check(q2.runs.get() + q3.runs.get() >= 1, "neither q2 nor q3 ran: the last submission was lost");
            for (Probe p : List.of(q1, q2, q3)) {
                check(p.runs.get() <= 1, p + " ran twice");
            }
            if (q1.runs.get() == 1 && q2.runs.get() == 1) {
                check(lane.ran.indexOf(q1) < lane.ran.indexOf(q2), "q2 ran before q1: " + lane.ran);
            }
            check(t.liveContexts() <= 0, "a lane is still live after termination");
        };
    }

    // ---- the scenarios are sound (a correct toy passes) and can fail (each bug is found) ----------------------

    private static final int TOY_INVOCATIONS = 2_000;
    private static final int TOY_SOUNDNESS_INVOCATIONS = Integer.getInteger("lincheck.invocations", 50);
    private static final Supplier<Target> CORRECT_TOY = () -> new LincheckToyExecutor(Bug.NONE);

    @Test
    @Timeout(120)
    void correctToyPassesLaneReleaseRace() {
        Lincheck.runConcurrentTest(TOY_SOUNDNESS_INVOCATIONS, laneReleaseRace(CORRECT_TOY));
    }

    @Test
    @Timeout(120)
    void correctToyPassesSubmitVersusShutdown() {
        Lincheck.runConcurrentTest(TOY_SOUNDNESS_INVOCATIONS, submitVersusShutdown(CORRECT_TOY));
    }

    @Test
    @Timeout(120)
    void correctToyPassesSubmitVersusShutdownNow() {
        Lincheck.runConcurrentTest(TOY_SOUNDNESS_INVOCATIONS, submitVersusShutdownNow(CORRECT_TOY));
    }

    @Test
    @Timeout(120)
    void correctToyPassesCoalescingHandOff() {
        Lincheck.runConcurrentTest(TOY_SOUNDNESS_INVOCATIONS, coalescingHandOff(CORRECT_TOY));
    }

    @Test
    @Timeout(120)
    void laneReleaseRaceFindsTheMissingRecheck() {
        assertFinds(laneReleaseRace(() -> new LincheckToyExecutor(Bug.NO_RECHECK_ON_IDLE)), Found.CHECK);
    }

    @Test
    @Timeout(120)
    void submitVersusShutdownFindsTheMissingRecheck() {
        assertFinds(submitVersusShutdown(() -> new LincheckToyExecutor(Bug.NO_RECHECK_ON_IDLE)), Found.CHECK);
    }

    @Test
    @Timeout(120)
    void submitVersusShutdownNowFindsTheUnguardedCheck() {
        assertFinds(submitVersusShutdownNow(() -> new LincheckToyExecutor(Bug.SHUTDOWN_CHECK_THEN_ACT)),
                Found.CHECK);
    }

    @Test
    @Timeout(120)
    void coalescingHandOffFindsTheTwoStepTake() {
        assertFinds(coalescingHandOff(() -> new LincheckToyExecutor(Bug.TAKE_GET_THEN_SET)), Found.CHECK);
    }

    @Test
    @Timeout(120)
    void coalescingHandOffFindsTheDoubleSchedule() {
        assertFinds(coalescingHandOff(() -> new LincheckToyExecutor(Bug.COALESCING_DOUBLE_SCHEDULE)), Found.CHECK);
    }

    static void assertFinds(Runnable scenario, Found expected) {
        LincheckFailures.assertFinds(TOY_INVOCATIONS, scenario, expected);
    }
}
