package io.github.gatlingexecutor.kafka;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One assignment of one partition: a partition revoked and assigned again gets a new object, so records polled under
 * the old assignment can never be confused with the new ones.
 *
 * <p>Fields without a modifier are owned by the polling thread. Its {@link Router} publishes how far it got
 * ({@link #routedUpTo}) and appends the records it could not finish on the spot to the in-flight list; workers read
 * {@link #revoked} and {@link #draining} and count completions. No lock on the hot path.
 *
 * <h2>The committed prefix</h2>
 * A record is complete if the router finished it on the spot, or if it is in the in-flight list and {@code done}.
 * The router publishes {@link #routedUpTo} only after appending every record below it that it did not finish, and
 * the polling thread reads {@link #routedUpTo} before it walks the list: so every unfinished record below the value
 * it read is in the list it walks, and the first not-done entry (or that value) bounds the commit.
 */
final class PartitionState {

    final TopicPartition tp;
    private final Thread pollThread;
    /** Set once, by the polling thread, before the router can run. */
    Router<?, ?> router;

    /** Set when the partition is no longer ours: records of it not yet started are dropped without running. */
    volatile boolean revoked;
    /** Set while the polling thread waits for this partition's records; a completion then wakes it. */
    volatile boolean draining;
    final AtomicLong completed = new AtomicLong();

    /** One past the last offset the router is done with (ran, or appended to the in-flight list); -1 at first. */
    volatile long routedUpTo = -1;
    /** Records the router is done with in that sense. */
    volatile long routedCount;

    private static final VarHandle ROUTED_UP_TO;
    private static final VarHandle ROUTED_COUNT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            ROUTED_UP_TO = l.findVarHandle(PartitionState.class, "routedUpTo", long.class);
            ROUTED_COUNT = l.findVarHandle(PartitionState.class, "routedCount", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The router (or whoever holds its token) appends here. */
    private Work<?, ?> inFlightTail;
    /** Polling thread: the last entry found done; its successor is the oldest tracked record not known done. */
    private Work<?, ?> inFlightHead;

    long dispatched;
    /** One past the last offset handed to the router, or -1 before the first record. */
    long sentUpTo = -1;
    /**
     * At least {@link #sentUpTo}; moves past a record that could not be deserialized once it is dealt with, and up to
     * the consumer's position once every record handed out is complete (see {@code KafkaProcessor#catchUpPosition}).
     */
    long nextOffset = -1;
    /** The highest offset {@link #advance()} has returned: every record below it is complete (or -1). */
    private long complete = -1;
    /** The offset last sent in a commit (or -1); a commit is sent only when the prefix moved past it. */
    long commitRequested = -1;
    /**
     * The span (records from the oldest incomplete one to the newest polled) at which {@link #advance()} next unlinks
     * the done records behind the oldest incomplete one.
     */
    private long compactAt;
    /** Span of a list worth compacting; at least the records one compaction may keep. */
    private final long compactMin;
    boolean backPressure;
    boolean paused;

    /** A record that cannot be deserialized at the consumer's position, while it waits for its failure handler. */
    DeserializationFailure deserialization;

    PartitionState(TopicPartition tp, Thread pollThread, long compactMin) {
        this.tp = tp;
        this.pollThread = pollThread;
        this.compactMin = compactMin;
        this.compactAt = compactMin;
        Work<?, ?> stub = new Work<>(this, null);
        this.inFlightTail = stub;
        this.inFlightHead = stub;
    }

    /** Called by whoever finished a tracked record of this partition (any thread). */
    void completedOne() {
        completed.incrementAndGet();
        if (draining) {
            LockSupport.unpark(pollThread);
        }
    }

    /** The router: records it finished itself, counted once per batch. */
    void completedMany(long n) {
        completed.addAndGet(n);
    }

    /**
     * The router's progress: published after the in-flight entries below it. Release stores, not volatile ones: the
     * reader acquires {@code routedUpTo} first, which orders the count and the entries before it; no later read of the
     * router's needs them ordered (the router publishes before every record under PARTITION order, and a StoreLoad
     * fence per record bought nothing there).
     */
    void routed(long upTo, long count) {
        ROUTED_COUNT.setOpaque(this, count);
        ROUTED_UP_TO.setRelease(this, upTo);
        if (draining) {
            LockSupport.unpark(pollThread);
        }
    }

    /** The holder of the router's token: track a record that is not finished. */
    void track(Work<?, ?> w) {
        inFlightTail.setNextInFlightRelease(w);
        inFlightTail = w;
    }

    /** Polled and not completed. */
    long pending() {
        return dispatched - completed.get();
    }

    /** Drops the done head of the in-flight list; returns the offset a commit may name now (or -1). */
    long advance() {
        long routed = routedUpTo;
        long count = routedCount;
        Work<?, ?> h;
        while ((h = inFlightHead.nextInFlightAcquire()) != null && h.done) {
            inFlightHead = h;
        }
        long span = h == null ? 0 : dispatched - Math.min(h.seq, count);
        if (span < compactMin) {
            compactAt = compactMin;
        } else if (span >= compactAt) {
            compactAt = span + Math.max(compactMin, 2 * compact(h));
        }
        long bound = routed == sentUpTo ? nextOffset : routed;
        long prefix = h != null ? Math.min(h.offset, bound) : bound;
        // A prefix once complete stays complete, but the bound can fall back: after an unreadable record's failure
        // handler returned, nextOffset passes it, and once the next poll hands records to a router that has not run
        // yet, the bound is the router's progress, which stops before that record. A commit of that (on revocation
        // or close) moved the group's offset back, and the next owner handled the record again. (This assumes the
        // position never goes back within an assignment but for the seek to an unreadable record, which no earlier
        // commit passed. After one of the consumer's own resets, on a log truncation or an out-of-range offset,
        // records read again below the floor do not hold the commit back.)
        if (prefix > complete) {
            complete = prefix;
        }
        return complete;
    }

    /**
     * Unlinks the done records that follow {@code first}, the oldest incomplete one, and returns how many records are
     * left linked after it. A record that stays failed (no failure handler, or one that keeps throwing) holds the
     * commit, and the others of its partition go on completing behind it: without this the list would keep each of
     * them for as long as it fails, so memory would grow with the records polled since, not with those pending. Called
     * only when the span has grown by {@code compactMin} (or by twice what the last call kept) since, so the walks cost
     * a bounded amount per record.
     *
     * <p>Only the polling thread unlinks, and the router only ever writes the {@code next} of the list's last entry;
     * an entry whose {@code next} is set is no longer last, so neither it nor the entry before it is written by the
     * router again. The last entry is never unlinked, even if done.
     */
    private long compact(Work<?, ?> first) {
        long kept = 0;
        Work<?, ?> p = first;
        Work<?, ?> n;
        while ((n = p.nextInFlightAcquire()) != null) {
            Work<?, ?> after = n.nextInFlightAcquire();
            if (n.done && after != null) {
                p.setNextInFlightRelease(after); // the polling thread is this list's only reader
            } else {
                p = n;
                kept++;
            }
        }
        return kept;
    }

    /** Polling thread, after {@link #advance()}: every record handed to the router is complete. */
    boolean quiet() {
        return routedUpTo == sentUpTo && inFlightHead.nextInFlightAcquire() == null;
    }

    /**
     * Polling thread, after {@link #advance()}: nothing handed out for this partition still runs, the failure handler
     * of a record that cannot be deserialized included (it is handed to the executor apart from the router's records,
     * and a revocation or close gives it {@code closeTimeout} as it gives them).
     */
    boolean settled() {
        return quiet() && noFailureHandlerRunning();
    }

    /**
     * Polling thread, for a partition let go (lost, or revoked past {@code closeTimeout}, see {@code KafkaProcessor}):
     * none of its records, and no failure handler of an unreadable record of it, runs any more. What was queued is
     * dropped as it comes up.
     */
    boolean stoppedAfterRelease() {
        return router.stopped() && noFailureHandlerRunning() && calls.get() == 0;
    }

    /**
     * Handler calls of this partition's records under way, counted under {@link Ordering#UNORDERED} only (see
     * {@code RecordRunner#tryHandle}): there a record runs as a task of its own, or on in a call the router's run
     * left behind, so neither the router's state nor a key's slot says whether it still runs. A partition assigned
     * back started such a record again beside its old run. Each call counts itself before it reads {@link #revoked}
     * (both volatile), and the polling thread writes revoked before it reads this: a call it does not see here sees
     * the partition revoked and does not run.
     */
    final AtomicInteger calls = new AtomicInteger();

    private boolean noFailureHandlerRunning() {
        DeserializationFailure df = deserialization;
        return df == null || df.outcome != DeserializationFailure.RUNNING;
    }

    /** Called by the thread that ran the failure handler of {@link #deserialization}, once its outcome is set. */
    void failureHandlerEnded() {
        if (draining) {
            LockSupport.unpark(pollThread);
        }
    }

    /** A record that could not be deserialized, waiting for the failure handler or for its next try. */
    static final class DeserializationFailure {
        final long offset;
        /**
         * {@link #WAITING} until the partition's earlier records are complete, {@link #RUNNING} while the failure
         * handler runs, then {@link #ACKNOWLEDGED} or {@link #FAILED}.
         */
        volatile int outcome;
        /** What the consumer threw for it; set by the polling thread before the failure handler can run. */
        RecordDeserializationException error;
        /** Owned by the polling thread from here on. */
        int attempts;
        long retryAtNanos;
        /** The partition was resumed at this offset so that the next poll deserializes the record again. */
        boolean repolling;
        /** Counted in {@code failed()}: at its first failure that was the record's (not the heap's). */
        boolean counted;
        /** Reads of the record that ran the deserializer out of heap. */
        int heapFailures;

        static final int RUNNING = 0;
        static final int ACKNOWLEDGED = 1;
        static final int FAILED = 2;
        static final int WAITING = 3;

        DeserializationFailure(long offset) {
            this.offset = offset;
        }
    }
}
