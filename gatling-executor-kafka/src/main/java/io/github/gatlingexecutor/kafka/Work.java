package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One polled record on its way through the processor. The polling thread creates it, keeps it in its partition's
 * in-flight list (for the commit) and hands it to a lane; a worker runs it and sets {@link #done}.
 *
 * <p>As a {@link Runnable} it is the task of {@link Ordering#UNORDERED}; ordered modes queue it in a {@link Slot}.
 */
final class Work<K, V> implements Runnable {

    private static final VarHandle NEXT;

    static {
        try {
            NEXT = MethodHandles.lookup().findVarHandle(Work.class, "next", Work.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Cleared once done: the in-flight list may keep this object for a while, it must not keep the payload. */
    ConsumerRecord<K, V> record;
    final PartitionState partition;
    final long offset;
    final RecordRunner<K, V> runner;

    /** Written once by whoever finishes the record; the polling thread reads it to advance the commit. */
    volatile boolean done;

    /** Confined to the lane (or the single task) running this record. */
    int attempts;
    boolean failedCounted;

    /** The link of a {@link Slot}'s queue; written by the polling thread, read by the lane. */
    @SuppressWarnings("unused")
    private Work<K, V> next;

    Work(ConsumerRecord<K, V> record, PartitionState partition, RecordRunner<K, V> runner) {
        this.record = record;
        this.partition = partition;
        this.offset = record == null ? -1 : record.offset();
        this.runner = runner;
    }

    void setNextRelease(Work<K, V> n) {
        NEXT.setRelease(this, n);
    }

    @SuppressWarnings("unchecked")
    Work<K, V> nextAcquire() {
        return (Work<K, V>) NEXT.getAcquire(this);
    }

    /** The {@link Ordering#UNORDERED} task: try, and on failure try again later on its own. */
    @Override
    public void run() {
        if (!runner.attempt(this)) {
            runner.retryLater(this);
        }
    }
}
