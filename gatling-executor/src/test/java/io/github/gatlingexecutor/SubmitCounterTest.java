package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.ref.WeakReference;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * {@link SubmitCounter}: exact once the submitters are done, whichever threads they were and whether they still run;
 * the cells of ended threads folded at the next read, the live ones kept; virtual threads counted without cells; a
 * claim of termination held back by every submit in flight but the claimer's own.
 */
class SubmitCounterTest {

    @Test
    void countsEverySubmitOfThreadsThatComeAndGo() throws Exception {
        SubmitCounter counter = new SubmitCounter(0);
        int threads = 64;
        int each = 10_000;
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread thread = new Thread(() -> {
                await(start);
                for (int i = 0; i < each; i++) {
                    count(counter);
                }
            });
            thread.start();
            all.add(thread);
        }
        await(start);
        // Read while they count and end: every read folds the cells of the threads ended by then. A fold that took a
        // running thread's cell, or counted an ended one's twice, shows as a read below an earlier one or above the
        // total.
        long last = 0;
        int reads = 0;
        while (all.stream().anyMatch(Thread::isAlive)) {
            long seen = counter.sum();
            reads++;
            assertTrue(seen >= last && seen <= (long) threads * each, "read " + reads + ": " + seen + " after " + last);
            last = seen;
        }
        for (Thread thread : all) {
            thread.join();
        }
        assertEquals((long) threads * each, counter.sum(), "after every thread ended");
        assertEquals(0, counter.cells(), "the ended threads' cells are folded");
        assertEquals((long) threads * each, counter.sum(), "folding keeps the count");
    }

    /**
     * Where threads come and go and nothing reads the count (an idle executor's checker dozes), each new thread's
     * registration folds the cells of the ended ones: they kept every ended submitter's {@code Thread}, and its
     * context class loader, until the next read (an outside audit: 3,000 threads kept).
     */
    @Test
    void aNewThreadFoldsTheCellsOfEndedThreadsWithoutARead() throws Exception {
        SubmitCounter counter = new SubmitCounter(0);
        for (int t = 0; t < 100; t++) {
            Thread thread = new Thread(() -> count(counter));
            thread.start();
            thread.join();
        }
        assertTrue(counter.cells() <= 1, "cells held with no read: " + counter.cells());
        assertEquals(100, counter.sum());
    }

    /**
     * Between folds (at most one a second, at a read or a registration) the cells of threads that ended stay, and an
     * idle executor may see neither a read nor a registration for good: a cell that held its thread kept every
     * submitter of the last burst, and its context class loader, reachable (an outside audit: 200 threads and their
     * loader, after 3 s idle). Cells hold their threads weakly now; the count, in the cell, stays exact, and a fold
     * takes a collected thread's cell.
     */
    @Test
    void theCellsOfEndedThreadsKeepNoThreadReachableBetweenFolds() throws Exception {
        SubmitCounter counter = new SubmitCounter(TimeUnit.HOURS.toNanos(1)); // never due
        List<WeakReference<Thread>> ended = new ArrayList<>();
        for (int t = 0; t < 20; t++) {
            Thread thread = new Thread(() -> {
                count(counter);
                count(counter);
            });
            thread.start();
            thread.join();
            ended.add(new WeakReference<>(thread));
        }
        assertEquals(20, counter.cells(), "no fold was due");
        TestSupport.waitUntil("the ended threads collected", () -> {
            System.gc();
            return ended.stream().allMatch(r -> r.get() == null);
        });
        assertEquals(40, counter.sum(), "the counts of collected threads");
        counter.foldEndedNow();
        assertEquals(0, counter.cells(), "a fold takes the cells of collected threads");
        assertEquals(40, counter.sum(), "folding keeps the count");
    }

    @Test
    void keepsTheCellOfAThreadThatLivesAndFoldsItWhenItEnds() throws Exception {
        SubmitCounter counter = new SubmitCounter(0);
        CountDownLatch counted = new CountDownLatch(1);
        CountDownLatch end = new CountDownLatch(1);
        Thread thread = new Thread(() -> {
            count(counter);
            count(counter);
            counted.countDown();
            await(end);
            count(counter);
        });
        thread.start();
        counted.await();
        count(counter); // this thread's own cell
        assertEquals(3, counter.sum());
        assertEquals(2, counter.cells(), "both threads live");
        end.countDown();
        thread.join();
        assertEquals(4, counter.sum(), "the last increment before the thread ended is seen");
        assertEquals(1, counter.cells(), "only the live thread keeps a cell");
    }

    /**
     * A thread whose thread locals are erased while it lives registers again: the common pool's workers erase theirs
     * each time they go idle (JDK 17 and 25). It takes its own cell back: before, each registration made a new one,
     * never folded while the thread lived (an outside audit's probe held thousands for one thread).
     */
    @Test
    void aThreadWhoseThreadLocalsAreErasedKeepsOneCell() throws Exception {
        SubmitCounter counter = new SubmitCounter(Long.MAX_VALUE); // no fold: the cells left are the ones made
        Set<Thread> submitters = ConcurrentHashMap.newKeySet();
        int submits = 2_000;
        for (int i = 0; i < submits; i++) {
            ForkJoinPool.commonPool().submit(() -> {
                submitters.add(Thread.currentThread());
                count(counter);
            }).get(); // the worker then runs out of work: it goes idle, and erases its thread locals
        }
        assertEquals(submits, counter.sum());
        assertTrue(counter.cells() <= submitters.size(),
                counter.cells() + " cells for " + submitters.size() + " submitting threads");
    }

    @Test
    void foldsNoMoreOftenThanAsked() throws Exception {
        SubmitCounter counter = new SubmitCounter(Long.MAX_VALUE);
        Thread thread = new Thread(() -> count(counter));
        thread.start();
        thread.join();
        assertEquals(1, counter.sum());
        assertEquals(1, counter.cells(), "not folded: the last fold is not old enough");
        assertEquals(1, counter.sum());
    }

    @Test
    void virtualThreadsCountWithoutCells() throws Exception {
        SubmitCounter counter = new SubmitCounter(0);
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < 100; t++) {
            all.add(startVirtual(() -> {
                for (int i = 0; i < 100; i++) {
                    count(counter);
                }
            }));
        }
        for (Thread thread : all) {
            thread.join();
        }
        assertEquals(10_000, counter.sum());
        assertEquals(0, counter.cells(), "a virtual thread takes no cell");
    }

    /**
     * A thread that claims termination waits for a submit between its offer and its count, and then reads the count
     * made: the task may already have run, and a count made after termination made the figures of a terminated
     * executor rise. An abort (a submit refused after all) releases it as well, counting nothing.
     */
    @Test
    void aClaimWaitsForTheSubmitsInFlightOfOtherThreads() throws Exception {
        SubmitCounter counter = new SubmitCounter(0);
        for (boolean accepted : new boolean[] {true, false}) {
            CountDownLatch begun = new CountDownLatch(1);
            CountDownLatch settle = new CountDownLatch(1);
            long before = counter.sum();
            boolean[] told = new boolean[1];
            Thread submitter = new Thread(() -> {
                SubmitCounter.Cell c = counter.begin();
                SubmitCounter.Cell nested = counter.begin(); // a submit from within the first: both hold the claim
                begun.countDown();
                counter.commit(nested);
                await(settle);
                told[0] = accepted ? counter.commit(c) : counter.abort(c);
            });
            submitter.start();
            begun.await();
            long[] seen = {-1};
            Thread claimer = new Thread(() -> {
                if (counter.othersSettled()) { // false would say the claimer or a virtual thread is in flight
                    seen[0] = counter.sum();
                }
            });
            claimer.start();
            claimer.join(200); // it cannot return while the submit is in flight: a return here is the failure
            assertTrue(claimer.isAlive(), "the claim did not wait for the submit in flight");
            settle.countDown();
            claimer.join();
            submitter.join();
            assertEquals(before + (accepted ? 2 : 1), seen[0], "the claimer reads the count made before the mark went");
            assertTrue(!told[0], "nobody asked the submitter to claim");
        }
    }

    /**
     * A claimer that is itself in flight (a replaced future's {@code done()}, run by the replacing submit, that ends
     * the executor) does not wait for its own mark, which would never clear; it is told at its own commit or abort to
     * claim then, and only once.
     */
    @Test
    void aClaimerInFlightItselfIsToldToClaimAtItsCommit() {
        SubmitCounter counter = new SubmitCounter(0);
        SubmitCounter.Cell c = counter.begin();
        assertTrue(!counter.othersSettled(), "a claimer in flight must not claim");
        assertTrue(counter.commit(c), "the commit says to claim now");
        assertTrue(counter.othersSettled(), "settled");
        assertTrue(!counter.commit(counter.begin()), "told once only");
        c = counter.begin();
        assertTrue(!counter.othersSettled(), "in flight again");
        assertTrue(counter.abort(c), "an abort says to claim as well");
        assertEquals(2, counter.sum());
    }

    /** A thread that died between its begin and its commit (killed between two instructions) holds nothing back. */
    @Test
    void aThreadThatDiedInFlightHoldsNoClaimBack() throws Exception {
        SubmitCounter counter = new SubmitCounter(Long.MAX_VALUE);
        Thread thread = new Thread(counter::begin);
        thread.start();
        thread.join();
        assertEquals(1, counter.cells(), "its cell is still there, in flight");
        assertTrue(counter.othersSettled());
    }

    /**
     * A virtual thread in flight holds a claim back without being waited for (it has no cell to spin on): its commit
     * says to look for termination again, behind the full fence of its shared count.
     */
    @Test
    void aVirtualThreadInFlightPutsTheClaimOffToItsCommit() throws Exception {
        SubmitCounter counter = new SubmitCounter(0);
        CountDownLatch begun = new CountDownLatch(1);
        CountDownLatch settle = new CountDownLatch(1);
        boolean[] claim = new boolean[1];
        Thread virtual = startVirtual(() -> {
            SubmitCounter.Cell c = counter.begin();
            begun.countDown();
            await(settle);
            claim[0] = counter.commit(c);
        });
        begun.await();
        assertTrue(!counter.othersSettled(), "a virtual thread in flight holds the claim back");
        settle.countDown();
        virtual.join();
        assertTrue(claim[0], "its commit says to look again");
        assertTrue(counter.othersSettled());
        assertEquals(1, counter.sum());
    }

    /** Starts {@code body} on a virtual thread; the test is skipped on a JDK without them (before 21). */
    private static Thread startVirtual(Runnable body) throws Exception {
        Method start;
        try {
            start = Thread.class.getMethod("startVirtualThread", Runnable.class);
        } catch (NoSuchMethodException beforeJdk21) {
            assumeTrue(false, "no virtual threads on this JDK");
            throw new AssertionError(beforeJdk21); // not reached: the assumption throws
        }
        return (Thread) start.invoke(null, body);
    }

    private static void count(SubmitCounter counter) {
        counter.commit(counter.begin());
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
