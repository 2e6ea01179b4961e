package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.management.ManagementFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pushes a large number of distinct contexts through one executor, each used once or twice and never again, and
 * checks that lanes are released: once the work is done {@code liveContexts()} returns to 0 (within the few
 * milliseconds of release the contract allows) and the heap returns near where it started. The backlog is bounded by
 * a semaphore so that the live set stays small: what is measured is what the executor keeps per context ever used,
 * which must be nothing.
 */
class StressSoakTest {

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void twoHundredThousandContexts() throws Exception {
        soak(200_000, 2);
    }

    @Test
    @Tag("stress")
    void tenMillionContexts() throws Exception {
        soak(Long.getLong("stress.contexts", 10_000_000L), 3);
    }

    static void soak(long contexts, int producers) throws Exception {
        GatlingExecutor executor = GatlingExecutor.builder().name("soak").coreThreads(2).build();
        try {
            runContexts(executor, 20_000, producers, 0);          // warm up: classes, tables, JIT
            awaitNoLiveContexts(executor);
            long heapBefore = usedHeapAfterGc();
            long t0 = System.nanoTime();
            long[] peakLive = runContexts(executor, contexts, producers, 1L << 40);
            long seconds = Math.max(1, TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0));
            awaitNoLiveContexts(executor);
            ExecutorStatistics s = executor.statistics();
            assertEquals(0, s.liveContexts(), s.toString());
            assertEquals(0, s.queued(), s.toString());
            assertEquals(s.submitted(), s.executed() + s.coalesced(), s.toString());
            assertTrue(executor.contextStatistics().isEmpty(), "contextStatistics after quiescence");
            long heapAfter = usedHeapAfterGc();
            long allowed = (4L << 20) + 4 * contexts;               // < 4 bytes kept per context ever used
            System.out.printf("[soak] %d contexts in %d s, peak live %d, heap %d KB -> %d KB (allowed +%d KB), %s%n",
                    contexts, seconds, peakLive[0], heapBefore >> 10, heapAfter >> 10, allowed >> 10, s);
            assertTrue(heapAfter - heapBefore < allowed, "heap grew from " + heapBefore + " to " + heapAfter
                    + " bytes after " + contexts + " contexts: something per context is retained");
        } finally {
            executor.shutdown();
            assertTrue(executor.awaitTermination(30, TimeUnit.SECONDS));
        }
    }

    /** Each context gets one task, every fourth a second one; a quarter of them are coalescing. */
    private static long[] runContexts(GatlingExecutor executor, long contexts, int producers, long idBase)
            throws InterruptedException {
        Semaphore backlog = new Semaphore(20_000);
        long tasks = contexts + (contexts + 3) / 4;
        CountDownLatch done = new CountDownLatch(Math.toIntExact(tasks));
        AtomicLong coalescedOrRan = new AtomicLong();
        long[] peakLive = new long[1];
        Thread[] threads = new Thread[producers];
        Throwable[] failure = new Throwable[1];
        for (int p = 0; p < producers; p++) {
            int producer = p;
            threads[p] = new Thread(() -> {
                try {
                    for (long i = producer; i < contexts; i += producers) {
                        Long context = idBase + i;
                        boolean coalescing = (i & 3) == 1;
                        int n = (i & 3) == 0 ? 2 : 1;
                        for (int k = 0; k < n; k++) {
                            backlog.acquire();
                            Runnable task = () -> {
                                coalescedOrRan.incrementAndGet();
                                backlog.release();
                                done.countDown();
                            };
                            if (coalescing) {
                                executor.coalescing(context).execute(task);
                            } else {
                                executor.sequential(context).execute(task);
                            }
                        }
                        if (producer == 0 && i % 100_000 == 0) {
                            peakLive[0] = Math.max(peakLive[0], executor.statistics().liveContexts());
                        }
                    }
                } catch (Throwable t) {
                    failure[0] = t;
                }
            }, "soak-producer-" + p);
            threads[p].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure[0] != null) {
            throw new AssertionError("producer failed", failure[0]);
        }
        if (!done.await(10, TimeUnit.MINUTES)) {
            fail("tasks missing: " + done.getCount() + " of " + tasks + " never ran; " + executor.statistics());
        }
        return peakLive;
    }

    /** Lanes are released right after their last task returns; allow the contract's few milliseconds, bounded. */
    static void awaitNoLiveContexts(GatlingExecutor executor) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (executor.statistics().liveContexts() != 0) {
            if (System.nanoTime() > deadline) {
                fail("lanes still live 2 s after the last task ran: " + executor.statistics() + " "
                        + executor.contextStatistics());
            }
            Thread.sleep(1);
        }
    }

    static long usedHeapAfterGc() {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}
