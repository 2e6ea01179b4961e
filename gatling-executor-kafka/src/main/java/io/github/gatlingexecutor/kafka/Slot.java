package io.github.gatlingexecutor.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The records of one key (or one partition) waiting for their turn, and the task that runs them.
 *
 * <p>The slot itself is the task given to the key's <em>coalescing</em> lane: the polling thread queues records here
 * and then submits the slot. The lane guarantees one run at a time, memory visibility from one run to the next, and
 * that a submission made while a run is going on leads to another run; a submission that replaces one not yet
 * started loses nothing, because every run drains whatever the slot holds. That keeps one executor task per key per
 * poll batch (not per record), and keeps the two things an ordered key needs beyond a lane in one place: holding the
 * key back while a failed record waits for its retry (without sleeping on a worker), and, for
 * {@link Ordering#KEY_LATEST}, replacing a waiting record by a newer one with exact accounting.
 *
 * <p>The queue is a single-producer list (the polling thread appends) whose consumer is whichever worker runs the
 * lane, so neither side takes a lock.
 */
final class Slot<K, V> implements Runnable {

    /**
     * Records one run takes before the slot goes to the back of the executor's queue: one busy key cannot hog a
     * worker, and keys progress roughly in offset order, which keeps each partition's committed prefix moving.
     */
    static final int BATCH = 16;

    private static final VarHandle LATEST;

    static {
        try {
            LATEST = MethodHandles.lookup().findVarHandle(Slot.class, "latest", Work.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RecordRunner<K, V> runner;
    private final Executor lane;
    private final boolean latestOnly;

    /** Queued and not finished; the polling thread forgets a slot only when this is zero. */
    final AtomicInteger outstanding = new AtomicInteger();

    /** Polling thread only: the last record appended. */
    private Work<K, V> tail;
    /** Lane only: the last record taken; its {@code next} is the next one to take. */
    private Work<K, V> head;
    /** {@link Ordering#KEY_LATEST}: the one waiting record. */
    @SuppressWarnings("unused")
    private volatile Work<K, V> latest;

    /** Lane only: the record that failed and holds the key back until its retry is due. */
    private Work<K, V> failing;
    /** Set by the retry timer just before it submits the slot. */
    private volatile boolean retryDue;

    /** Polling thread only: the slot is in the list of slots to submit after this poll. */
    boolean toSubmit;

    Slot(RecordRunner<K, V> runner, Executor lane, boolean latestOnly) {
        this.runner = runner;
        this.lane = lane;
        this.latestOnly = latestOnly;
        Work<K, V> stub = new Work<>(null, null, runner);
        this.tail = stub;
        this.head = stub;
    }

    /** Polling thread: queue a record (the caller submits the slot afterwards). */
    void offer(Work<K, V> w) {
        outstanding.incrementAndGet();
        if (latestOnly) {
            @SuppressWarnings("unchecked")
            Work<K, V> replaced = (Work<K, V>) LATEST.getAndSet(this, w);
            if (replaced != null) {
                // Taken from the slot before any worker could take it: it never runs, and is done now.
                runner.superseded(replaced);
                outstanding.decrementAndGet();
            }
        } else {
            tail.setNextRelease(w);
            tail = w;
        }
    }

    /** Polling thread, or the retry timer: have the lane run this slot. */
    void submit() {
        lane.execute(this);
    }

    @Override
    public void run() {
        Work<K, V> f = failing;
        if (f != null) {
            if (!retryDue) {
                return; // a new record arrived while the key is held back: it waits behind the failed one
            }
            retryDue = false;
            if (!tryOne(f)) {
                return;
            }
            failing = null;
        }
        for (int n = 0; ; n++) {
            if (n == BATCH) {
                if (hasNext()) {
                    resubmit();
                }
                return;
            }
            Work<K, V> w = take();
            if (w == null || !tryOne(w)) {
                return;
            }
        }
    }

    /** Runs one record; false when it failed and now holds the key back until its retry. */
    private boolean tryOne(Work<K, V> w) {
        if (runner.attempt(w)) {
            outstanding.decrementAndGet();
            return true;
        }
        failing = w;
        if (!runner.scheduleRetry(w, this::retryNow)) {
            // The executor no longer takes tasks: the processor is closing and nothing more will be committed.
            failing = null;
            outstanding.decrementAndGet();
            return true;
        }
        return false;
    }

    private void retryNow() {
        retryDue = true;
        resubmit();
    }

    private void resubmit() {
        try {
            lane.execute(this);
        } catch (RejectedExecutionException closing) {
            // The executor is shutting down with the processor; what is left here is not committed.
        }
    }

    private Work<K, V> take() {
        if (latestOnly) {
            @SuppressWarnings("unchecked")
            Work<K, V> w = (Work<K, V>) LATEST.getAndSet(this, null);
            return w;
        }
        Work<K, V> n = head.nextAcquire();
        if (n != null) {
            head = n;
        }
        return n;
    }

    private boolean hasNext() {
        return latestOnly ? latest != null : head.nextAcquire() != null;
    }
}
