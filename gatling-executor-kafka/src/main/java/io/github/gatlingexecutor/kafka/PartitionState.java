package io.github.gatlingexecutor.kafka;

import org.apache.kafka.common.TopicPartition;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One assignment of one partition: a partition revoked and assigned again gets a new object, so records polled under
 * the old assignment can never be confused with the new ones.
 *
 * <p>Fields without a modifier are owned by the polling thread. Workers only read {@link #revoked} and
 * {@link #draining} and count completions, so the hot path takes no lock.
 */
final class PartitionState {

    final TopicPartition tp;
    private final Thread pollThread;

    /** Set when the partition is no longer ours: records of it not yet started are dropped without running. */
    volatile boolean revoked;
    /** Set while the polling thread waits for this partition's records; a completion then wakes it. */
    volatile boolean draining;
    final AtomicLong completed = new AtomicLong();

    /** Records polled and not yet part of the committed prefix, in offset order. */
    final ArrayDeque<Work<?, ?>> inFlight = new ArrayDeque<>();
    long dispatched;
    /** One past the last offset handed out, or -1 before the first record; the commit when nothing is in flight. */
    long nextOffset = -1;
    /** The offset last sent in a commit (or -1); a commit is sent only when the prefix moved past it. */
    long commitRequested = -1;
    boolean backPressure;
    boolean paused;

    /** A record that cannot be deserialized at the consumer's position, while it waits for its failure handler. */
    DeserializationFailure deserialization;

    /** The lane of this partition under {@link Ordering#PARTITION} and of its null-key records otherwise. */
    Slot<?, ?> partitionSlot;

    PartitionState(TopicPartition tp, Thread pollThread) {
        this.tp = tp;
        this.pollThread = pollThread;
    }

    /** Called by whoever finished a record of this partition (any thread). */
    void completedOne() {
        completed.incrementAndGet();
        if (draining) {
            LockSupport.unpark(pollThread);
        }
    }

    /** Polled and not completed. */
    long pending() {
        return dispatched - completed.get();
    }

    /** Drops the completed head of the in-flight list; returns the offset a commit may name now (or -1). */
    long advance() {
        Work<?, ?> head;
        while ((head = inFlight.peekFirst()) != null && head.done) {
            inFlight.pollFirst();
        }
        return head != null ? head.offset : nextOffset;
    }

    /** A record that could not be deserialized, waiting for the failure handler or for its next try. */
    static final class DeserializationFailure {
        final long offset;
        /** {@link #RUNNING} while the failure handler runs, then {@link #ACKNOWLEDGED} or {@link #FAILED}. */
        volatile int outcome;
        /** Owned by the polling thread from here on. */
        int attempts;
        long retryAtNanos;
        /** The partition was resumed at this offset so that the next poll deserializes the record again. */
        boolean repolling;

        static final int RUNNING = 0;
        static final int ACKNOWLEDGED = 1;
        static final int FAILED = 2;

        DeserializationFailure(long offset) {
            this.offset = offset;
        }
    }
}
