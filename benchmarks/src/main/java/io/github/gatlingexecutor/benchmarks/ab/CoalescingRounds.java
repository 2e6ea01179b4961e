package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The coalescing workload for {@link ClassLoaderAb} ({@code -Dab.workload=coalescing}): two producers update
 * {@code keys} coalescing contexts as fast as they can for {@code millis} milliseconds (each key has one producer, as
 * in the comparison runner's coalescing scenario), then wait until every key's last update has run. A round returns
 * the updates per second, in millions; a lost last update or a stale value processed after a newer one throws.
 * Public members are called reflectively.
 */
public final class CoalescingRounds {
    private static final int PRODUCERS = 2;

    private final GatlingExecutor executor;
    private final Executor[] lanes;
    private final int[][] orders = new int[PRODUCERS][];
    private final long millis;
    private final AtomicLongArray processed;
    private final long[] work;

    public CoalescingRounds(int keys, int millis) {
        if (keys % PRODUCERS != 0) {
            throw new IllegalArgumentException("keys must be a multiple of " + PRODUCERS + ": " + keys);
        }
        executor = GatlingExecutor.builder().name("ab").build();
        lanes = new Executor[keys];
        for (int k = 0; k < keys; k++) {
            lanes[k] = executor.coalescing(k);
        }
        for (int p = 0; p < PRODUCERS; p++) {
            orders[p] = Keys.uniform(keys / PRODUCERS, 1 << 16, 7 + p);
        }
        this.millis = millis;
        processed = new AtomicLongArray(keys);
        work = new long[keys];
    }

    /** Runs one round; returns millions of updates per second of the update phase. */
    public double round() throws InterruptedException {
        int keys = lanes.length;
        long[][] last = new long[PRODUCERS][keys];
        long[] counts = new long[PRODUCERS];
        CountDownLatch go = new CountDownLatch(1);
        Thread[] threads = new Thread[PRODUCERS];
        AtomicLong stale = new AtomicLong();
        for (int p = 0; p < PRODUCERS; p++) {
            int producer = p;
            threads[p] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                int[] order = orders[producer];
                long[] mine = last[producer];
                long end = System.nanoTime() + millis * 1_000_000L;
                long n = 0;
                do {
                    for (int i = 0; i < 256; i++) {
                        int key = order[(int) (n++ & 0xFFFF)] * PRODUCERS + producer;
                        long stamp = System.nanoTime();
                        mine[key] = stamp;
                        lanes[key].execute(() -> {
                            if (stamp < processed.get(key)) {
                                stale.incrementAndGet();
                            }
                            processed.set(key, stamp);
                            work[key] += stamp ^ (stamp >>> 7);
                        });
                    }
                } while (System.nanoTime() - end < 0);
                counts[producer] = n;
            }, "updater-" + p);
            threads[p].start();
        }
        long t0 = System.nanoTime();
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        long nanos = System.nanoTime() - t0;
        long deadline = System.nanoTime() + 10_000_000_000L;
        for (int k = 0; k < keys; k++) {
            long want = last[k % PRODUCERS][k];
            while (want != 0 && processed.get(k) != want) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("the last update of key " + k + " never ran");
                }
                LockSupport.parkNanos(100_000);
            }
        }
        if (stale.get() > 0) {
            throw new IllegalStateException(stale.get() + " stale values ran after newer ones");
        }
        return (counts[0] + counts[1]) / (nanos / 1e9) / 1e6;
    }

    public void close() {
        executor.close();
    }
}
