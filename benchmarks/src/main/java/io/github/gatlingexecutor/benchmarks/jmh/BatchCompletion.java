package io.github.gatlingexecutor.benchmarks.jmh;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts the tasks of a benchmark's batches as they run, and parks the submitting thread (not spinning: the machine
 * may have only two cores) until the last task of its batch has run, which unparks it.
 */
final class BatchCompletion {
    private final AtomicLong done = new AtomicLong();
    private volatile Thread waiter;
    private long target;

    /** Called by the submitting thread before it submits {@code batch} tasks; returns the count to wait for. */
    long begin(int batch) {
        waiter = Thread.currentThread();
        long goal = done.get() + batch;
        target = goal;
        return goal;
    }

    /** Called by each task as it runs. */
    void finished() {
        if (done.incrementAndGet() == target) {
            LockSupport.unpark(waiter);
        }
    }

    /** Parks until {@code goal} tasks have run; returns it, for JMH to consume. */
    long await(long goal) {
        while (done.get() < goal) {
            LockSupport.parkNanos(100_000);
        }
        return goal;
    }
}
