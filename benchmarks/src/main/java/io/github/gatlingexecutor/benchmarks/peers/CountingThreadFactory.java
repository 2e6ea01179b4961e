package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the threads a peer creates and how many are alive at once. Every peer that accepts a ThreadFactory gets one
 * of these, so "threads created" means the same thing for all of them.
 */
public final class CountingThreadFactory implements ThreadFactory {
    private final String prefix;
    private final ThreadFactory delegate;
    private final AtomicInteger created = new AtomicInteger();
    private final AtomicInteger alive = new AtomicInteger();
    private final AtomicInteger peak = new AtomicInteger();
    /** Every thread made, so their CPU time can be read (idle-CPU measurement). */
    private final java.util.Queue<Thread> threads = new java.util.concurrent.ConcurrentLinkedQueue<>();

    public CountingThreadFactory(String prefix) {
        this(prefix, null);
    }

    /** @param delegate makes the thread (e.g. a virtual-thread factory); null for a plain daemon platform thread */
    public CountingThreadFactory(String prefix, ThreadFactory delegate) {
        this.prefix = prefix;
        this.delegate = delegate;
    }

    @Override
    public Thread newThread(Runnable r) {
        Runnable counted = () -> {
            started();
            try {
                r.run();
            } finally {
                ended();
            }
        };
        int n = countCreation();
        Thread t;
        if (delegate != null) {
            t = delegate.newThread(counted);
        } else {
            t = new Thread(counted, prefix + "-" + n);
            // Daemon: a peer that fails to shut down must not keep the benchmark JVM alive.
            t.setDaemon(true);
        }
        if (t != null) {
            threads.add(t);
        }
        return t;
    }

    /** Counts a thread made elsewhere (ForkJoin workers cannot be made from a Runnable); returns its number. */
    int countCreation() {
        return created.incrementAndGet();
    }

    /** Called first thing on a counted thread. */
    void started() {
        peak.accumulateAndGet(alive.incrementAndGet(), Math::max);
    }

    /** Called last thing on a counted thread. */
    void ended() {
        alive.decrementAndGet();
    }

    public int createdCount() {
        return created.get();
    }

    public int alive() {
        return alive.get();
    }

    /** Records a thread made elsewhere (ForkJoin workers). */
    void track(Thread t) {
        threads.add(t);
    }

    /** CPU time used so far by the live threads this factory made (ThreadMXBean), in nanoseconds. */
    public long cpuNanos() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : threads) {
            long cpu = t.isAlive() ? mx.getThreadCpuTime(t.getId()) : -1;
            if (cpu > 0) {
                sum += cpu;
            }
        }
        return sum;
    }

    public int peak() {
        return peak.get();
    }
}
