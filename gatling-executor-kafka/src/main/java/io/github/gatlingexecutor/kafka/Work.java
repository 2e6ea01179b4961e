package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One polled record on its way through the processor, once it needs tracking: when its partition's {@link Router}
 * hands it to a key's lane, or when a run on the router itself fails or outlives the router's patience. A record the
 * router runs to completion on the spot never needs one of its own (the router reuses a spare).
 *
 * <p>A tracked record sits in its partition's in-flight list (for the commit) and, when handed off, in its
 * {@link Slot}'s queue; whoever finishes it sets {@link #done}. As a {@link Runnable} it is the task of
 * {@link Ordering#UNORDERED}.
 */
final class Work<K, V> implements Runnable {

    private static final VarHandle NEXT;
    private static final VarHandle NEXT_IN_FLIGHT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            NEXT = l.findVarHandle(Work.class, "next", Work.class);
            NEXT_IN_FLIGHT = l.findVarHandle(Work.class, "nextInFlight", Work.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Cleared once done: the in-flight list may keep this object for a while, it must not keep the payload. */
    ConsumerRecord<K, V> record;
    final PartitionState partition;
    final RecordRunner<K, V> runner;
    /** Set with {@link #record} before the object is shared (published through the lane or the in-flight list). */
    long offset = -1;
    /** How many records of the partition the router took before this one: the span behind it is counted from here. */
    long seq;

    /** Written once by whoever finishes the record; the polling thread reads it to advance the commit. */
    volatile boolean done;

    /** Confined to whoever holds the record's key (or the single task running it). */
    int attempts;
    boolean failedCounted;

    /** The link of a {@link Slot}'s queue. */
    @SuppressWarnings("unused")
    private Work<K, V> next;
    /** The link of the partition's in-flight list: appended by the router, read by the polling thread. */
    @SuppressWarnings("unused")
    private Work<?, ?> nextInFlight;

    Work(PartitionState partition, RecordRunner<K, V> runner) {
        this.partition = partition;
        this.runner = runner;
    }

    /** Only for a record no other thread can see yet: a fresh object, or the router's unshared spare. */
    void reset(ConsumerRecord<K, V> r, long seq) {
        this.record = r;
        this.offset = r.offset();
        this.seq = seq;
        this.attempts = 0;
        this.failedCounted = false;
    }

    void setNextRelease(Work<K, V> n) {
        NEXT.setRelease(this, n);
    }

    @SuppressWarnings("unchecked")
    Work<K, V> nextAcquire() {
        return (Work<K, V>) NEXT.getAcquire(this);
    }

    void setNextInFlightRelease(Work<?, ?> n) {
        NEXT_IN_FLIGHT.setRelease(this, n);
    }

    Work<?, ?> nextInFlightAcquire() {
        return (Work<?, ?>) NEXT_IN_FLIGHT.getAcquire(this);
    }

    /** The {@link Ordering#UNORDERED} task: try, and on failure try again later on its own. */
    @Override
    public void run() {
        if (!runner.attempt(this)) {
            runner.retryLater(this);
        }
    }
}
