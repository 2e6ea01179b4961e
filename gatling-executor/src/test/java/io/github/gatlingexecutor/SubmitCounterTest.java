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
 * the cells of ended threads folded at the next read, the live ones kept; virtual threads counted without cells.
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
                    counter.increment();
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
            Thread thread = new Thread(counter::increment);
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
                counter.increment();
                counter.increment();
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
            counter.increment();
            counter.increment();
            counted.countDown();
            await(end);
            counter.increment();
        });
        thread.start();
        counted.await();
        counter.increment(); // this thread's own cell
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
                counter.increment();
            }).get(); // the worker then runs out of work: it goes idle, and erases its thread locals
        }
        assertEquals(submits, counter.sum());
        assertTrue(counter.cells() <= submitters.size(),
                counter.cells() + " cells for " + submitters.size() + " submitting threads");
    }

    @Test
    void foldsNoMoreOftenThanAsked() throws Exception {
        SubmitCounter counter = new SubmitCounter(Long.MAX_VALUE);
        Thread thread = new Thread(counter::increment);
        thread.start();
        thread.join();
        assertEquals(1, counter.sum());
        assertEquals(1, counter.cells(), "not folded: the last fold is not old enough");
        assertEquals(1, counter.sum());
    }

    @Test
    void virtualThreadsCountWithoutCells() throws Exception {
        Method start;
        try {
            start = Thread.class.getMethod("startVirtualThread", Runnable.class);
        } catch (NoSuchMethodException beforeJdk21) {
            assumeTrue(false, "no virtual threads on this JDK");
            return;
        }
        SubmitCounter counter = new SubmitCounter(0);
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < 100; t++) {
            all.add((Thread) start.invoke(null, (Runnable) () -> {
                for (int i = 0; i < 100; i++) {
                    counter.increment();
                }
            }));
        }
        for (Thread thread : all) {
            thread.join();
        }
        assertEquals(10_000, counter.sum());
        assertEquals(0, counter.cells(), "a virtual thread takes no cell");
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
