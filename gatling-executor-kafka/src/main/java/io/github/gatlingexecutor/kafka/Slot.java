package io.github.gatlingexecutor.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;

/**
 * One key (or the null key of one partition): who may run its records now, the records waiting for their turn, and
 * the task that runs them on the slot's own <em>coalescing</em> lane.
 *
 * <h2>Claims</h2>
 * {@link #claims} counts the key's records that a router has claimed and that are not finished. A router claims
 * before it does anything with a record. Whoever moves the count from zero <em>owns</em> the key until it returns to
 * zero: either the router itself, which then runs the record on the spot ({@link #releaseInline()} afterwards), or
 * the lane, which the router then submits. Records claimed while the key is owned are published to the queue and
 * left to the owner: the router hands ownership to the lane when it releases a count above one, and the lane gives it
 * up exactly when its decrement reaches zero, taking nothing more after that. So there is never more than one owner,
 * and a record is never run by two threads, even when routers of several partitions feed one key.
 *
 * <p>Claim-then-publish (never the reverse) means the lane only ever finds claimed records; what it may meet is a
 * claim whose record is not linked yet (its router is between the two steps, or, with two routers on one key, the
 * queue's link from the earlier one is still missing). It then resubmits itself instead of waiting: that is rare (two
 * instructions wide) and never blocks a worker.
 *
 * <p>The queue is a multi-producer linked list (producers swap the tail, then link) with the owning lane as its only
 * consumer; {@link Ordering#KEY_LATEST} keeps one atomic "newest waiting" reference instead, whose previous value is
 * superseded on the spot. A slot nobody owns may be retired ({@link #retire()}) so that memory follows live keys; a
 * retired slot refuses claims and the router looks the key up again.
 */
final class Slot<K, V> implements Runnable {

    /**
     * Records one run takes before the slot goes to the back of the executor's queue: one busy key cannot hog a
     * worker, and keys progress roughly in offset order, which keeps each partition's committed prefix moving.
     */
    static final int BATCH = 16;
    /** {@link #claims} of a slot taken out of its map. */
    static final int RETIRED = Integer.MIN_VALUE;

    private static final VarHandle TAIL;
    private static final VarHandle LATEST;
    private static final VarHandle CLAIMS;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(Slot.class, "tail", Work.class);
            LATEST = l.findVarHandle(Slot.class, "latest", Work.class);
            CLAIMS = l.findVarHandle(Slot.class, "claims", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RecordRunner<K, V> runner;
    private final Executor lane;
    private final boolean latestOnly;

    /** The key as the maps hold it ({@code byte[]} wrapped), and its hash: a router's cache compares these. */
    final Object key;
    final int hash;
    /**
     * A String key of at most 16 chars, all below 256, packed a byte a char: a router compares a fresh key with these
     * two longs, on the slot's own line, instead of reading the stored key and its array (two cache misses a record,
     * with many keys). -1 for any other key, compared with {@code equals}. Same length and same packed chars is the
     * same string, so this is {@code equals}, only cheaper.
     */
    private final int packedLength;
    private final long packed0;
    private final long packed1;
    /** A field, not an {@code AtomicInteger}: a router reads it on every record, and that saves a cache miss. */
    @SuppressWarnings("unused")
    private volatile int claims;
    /**
     * Set by routers on every lookup, cleared by the sweeper: a slot is retired only if no record of its key came
     * between two sweeps, so a key that recurs every few milliseconds keeps its slot. Racy on purpose: a lost write
     * only makes the sweeper retire an unowned slot that is then made again.
     */
    boolean used;

    /** Producers: the last record published. */
    @SuppressWarnings("unused")
    private volatile Work<K, V> tail;
    /** Owner only: the last record taken; its {@code next} is the next one to take. */
    private Work<K, V> head;
    /** {@link Ordering#KEY_LATEST}: the one waiting record. */
    @SuppressWarnings("unused")
    private volatile Work<K, V> latest;

    /** Owner only: the record that failed and holds the key back until its retry is due. */
    private Work<K, V> failing;
    /** Set by the retry timer just before it submits the slot. */
    private volatile boolean retryDue;

    Slot(Object key, RecordRunner<K, V> runner, Executor lane, boolean latestOnly) {
        this.key = key;
        this.hash = key == null ? 0 : key.hashCode();
        int length = -1;
        long p0 = 0;
        long p1 = 0;
        if (key instanceof String && ((String) key).length() <= 16) {
            String k = (String) key;
            length = k.length();
            for (int j = 0; j < length; j++) {
                char c = k.charAt(j);
                if (c > 0xFF) {
                    length = -1;
                    break;
                }
                if (j < 8) {
                    p0 |= (long) c << (8 * j);
                } else {
                    p1 |= (long) c << (8 * (j - 8));
                }
            }
        }
        this.packedLength = length;
        this.packed0 = length < 0 ? 0 : p0;
        this.packed1 = length < 0 ? 0 : p1;
        this.runner = runner;
        this.lane = lane;
        this.latestOnly = latestOnly;
        Work<K, V> stub = new Work<>(null, runner);
        this.tail = stub;
        this.head = stub;
    }

    /** A router's claim of one record: the count before it (zero: the caller owns the key now), or {@link #RETIRED}. */
    int claim() {
        while (true) {
            int c = claims;
            if (c < 0) {
                return RETIRED;
            }
            if (CLAIMS.compareAndSet(this, c, c + 1)) {
                return c;
            }
        }
    }

    /** Whether {@code k} (as the maps hold keys) is this slot's key; see {@link #packedLength}. */
    boolean isKey(Object k) {
        if (packedLength < 0) {
            return key.equals(k);
        }
        if (!(k instanceof String)) {
            return false;
        }
        String s = (String) k;
        int n = s.length();
        if (n != packedLength) {
            return false;
        }
        long p0 = 0;
        long p1 = 0;
        for (int j = 0; j < n; j++) {
            char c = s.charAt(j);
            if (c > 0xFF) {
                return false; // every char of this slot's key is below 256
            }
            if (j < 8) {
                p0 |= (long) c << (8 * j);
            } else {
                p1 |= (long) c << (8 * (j - 8));
            }
        }
        return p0 == packed0 && p1 == packed1;
    }

    /** Whether no record of this key is claimed and unfinished (racy: a claim may come at any time). */
    boolean unclaimed() {
        return claims == 0;
    }

    boolean retired() {
        return claims < 0;
    }

    /** Polling thread: take an unowned slot out of use; false if the key is owned. */
    boolean retire() {
        return CLAIMS.compareAndSet(this, 0, RETIRED);
    }

    /**
     * A router: queue a claimed record for the owner. {@code owner}: the claim made the caller the owner, and it
     * hands the key to the lane.
     */
    void publish(Work<K, V> w, boolean owner) {
        if (latestOnly) {
            @SuppressWarnings("unchecked")
            Work<K, V> replaced = (Work<K, V>) LATEST.getAndSet(this, w);
            if (replaced != null) {
                // Taken before any run could take it: it never runs, and is done now; its claim goes back here. This
                // decrement can end the ownership: the lane may have taken and run this record, and given back its
                // claim, in between, leaving a run of the lane queued with no claim. Harmless in this mode: every owner
                // only submits the lane, which runs one slot run at a time, so that run finds nothing, or takes the
                // next owner's record in its turn and gives back that claim.
                runner.superseded(replaced);
                release();
            }
        } else {
            @SuppressWarnings("unchecked")
            Work<K, V> previous = (Work<K, V>) TAIL.getAndSet(this, w);
            previous.setNextRelease(w);
        }
        if (owner) {
            resubmit();
        }
    }

    /** The router that owned the key finished its record: records claimed meanwhile go to the lane. */
    void releaseInline() {
        if (release() > 0) {
            resubmit();
        }
    }

    /**
     * The router that owned the key saw its record fail: the lane keeps the key (and the claim) until the record's
     * retry, which the timer starts by submitting the slot.
     */
    void holdFailed(Work<K, V> w) {
        failing = w; // read by the lane's run that the timer's submission starts: ordered by the executor
        // A retry the executor refuses (it is shut down: the processor's own as it closes, or a given one by its owner)
        // never comes: the key stays held by the failed record for good, so that no later record of the key runs
        // before it (the partition's commit never passes it either).
        runner.scheduleRetry(w, this::retryNow);
    }

    @Override
    public void run() {
        Work<K, V> f = failing;
        if (f != null) {
            if (!retryDue) {
                return;
            }
            retryDue = false;
            if (!tryOne(f)) {
                return;
            }
            failing = null;
            if (release() == 0) {
                return;
            }
        }
        // Past the batch, the run goes on while the executor is shut down: it would refuse the run handed the rest of
        // the key (a given executor, shut down by its owner, still runs what it took, this run included).
        for (int n = 0; n < BATCH || runner.executorShutDown(); n++) {
            Work<K, V> w = take();
            if (w == null) {
                if (claims > 0) {
                    resubmit(); // claimed, not yet linked: see the class comment
                }
                return;
            }
            if (!tryOne(w)) {
                return;
            }
            if (release() == 0) {
                return; // ownership ends here: a record linked but not yet counted belongs to its router's claim
            }
        }
        resubmit();
    }

    /** Runs one record; false when it failed and now holds the key back until its retry. */
    private boolean tryOne(Work<K, V> w) {
        if (runner.attempt(w)) {
            return true;
        }
        failing = w;
        runner.scheduleRetry(w, this::retryNow); // refused (shut down): the key stays held here, see holdFailed
        return false;
    }

    /** Gives back one claim; the count left. */
    private int release() {
        return (int) CLAIMS.getAndAdd(this, -1) - 1;
    }

    private void retryNow() {
        retryDue = true;
        resubmit();
    }

    private void resubmit() {
        runner.handOff(lane, this, null); // given up: the executor shuts down with the processor; not committed
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
}
