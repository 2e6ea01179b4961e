package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.ContextExecutor;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The dispatch of one partition, on the executor's workers instead of the polling thread: the polling thread hands
 * it each poll's records of the partition as one list, and the router, one run at a time, decides per record.
 *
 * <ul>
 *   <li>{@link Ordering#KEY}: a record whose key nothing else holds (see {@link Slot}) runs right here, on the spot,
 *       with no executor task and no tracking object; a record whose key is held is queued in the key's slot.</li>
 *   <li>{@link Ordering#KEY_LATEST}: every record goes to its key's slot, where a newer waiting record supersedes an
 *       older one; a key with nothing waiting runs its record at once. This mode's router runs on the polling thread
 *       (see {@link #onPollingThread}).</li>
 *   <li>{@link Ordering#PARTITION}: every record runs here, in offset order; a failed one holds the router.</li>
 *   <li>{@link Ordering#UNORDERED}: on the spot, or as its own executor task.</li>
 * </ul>
 *
 * <h2>When not to run on the spot</h2>
 * Running a record here is what makes a fast handler cheap, and is wrong for a slow one: the partition's other keys
 * would wait behind it. So the router times its calls, and after {@link #SLOW_STREAK} calls in a row longer than
 * {@link #SLOW_CALL_NANOS} hands every record to the lanes for {@link #SLOW_HOLD_NANOS}, then tries again. One long
 * call alone (a stall, a lock, a failure handler that waits) is caught by the polling thread instead: it watches the
 * router between polls, and a call still running after {@link #DETACH_NANOS} loses the routing: the polling thread
 * tracks that record as in flight and starts a new run that carries on with the next records, while the call
 * finishes on its own. The key stays claimed until it does, so later records of that key still wait for it.
 *
 * <h2>The token</h2>
 * One thread at a time routes (holds the token). {@link #sched} makes runs exclusive and serial (a run starts only by
 * moving it from idle, or by a holder handing the token on), and the executor orders a run after the one that
 * submitted it. Around a call on the spot, {@link #call} is odd; the router moves it to the next even value after the
 * call, and a failed compare-and-set tells it the polling thread took the token meanwhile: it then finishes its own
 * record and touches nothing else here. Every field the next holder needs is written before {@link #call} turns odd.
 */
final class Router<K, V> implements Runnable {

    /** A call on the spot longer than this counts as slow. */
    static final long SLOW_CALL_NANOS = TimeUnit.MICROSECONDS.toNanos(10);
    /** Slow calls in a row that make the router hand records off; one preempted call must not do it. */
    static final int SLOW_STREAK = 3;
    /** How long a router that found its handler slow hands every record off before it tries again. */
    static final long SLOW_HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    /** A call on the spot running longer than this (as the polling thread sees it) loses the routing. */
    static final long DETACH_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    /** Records one run routes before it lets other tasks have the worker. */
    static final int MAX_PER_RUN = 1024;

    private static final int MIN_TABLE = 256;
    private static final int IDLE = 0;
    private static final int SCHEDULED = 1;

    private static final VarHandle CALL;
    private static final VarHandle NEXT_BATCH;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            CALL = l.findVarHandle(Router.class, "call", long.class);
            NEXT_BATCH = l.findVarHandle(Batch.class, "next", Batch.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final PartitionState ps;
    private final RecordRunner<K, V> runner;
    private final ContextExecutor executor;
    private final Ordering ordering;
    /** Slots of the partition's topic, shared by the routers of all its partitions. */
    private final ConcurrentMap<Object, Slot<K, V>> keys;
    private final String topic;

    /**
     * {@link Ordering#KEY_LATEST}: the polling thread routes, and is the only token holder. Every record of that mode
     * goes to its key's lane anyway, and a routing task would wait in the executor's queue behind the very lanes it
     * feeds (busy with slow handlers, which is when superseding matters), and that wait adds to every record's lag.
     */
    private final boolean onPollingThread;
    private final AtomicInteger sched = new AtomicInteger(IDLE);
    /** Odd while a record runs on the spot; see the class comment. */
    @SuppressWarnings("unused")
    private volatile long call;

    /**
     * Set by the polling thread when it wants this router's progress (its completions and {@link
     * PartitionState#routedUpTo}) before the run ends: a run may take up to {@link #MAX_PER_RUN} records, and with a
     * slow handler on the spot (every record of {@link Ordering#PARTITION}) that is many commit intervals. Read once
     * per record, on a line the polling thread writes once per poll at most.
     */
    private volatile boolean progressWanted;

    /** Polling thread only: the last batch offered. */
    private Batch<K, V> tailBatch;

    // Token holder only.
    private Batch<K, V> headBatch;
    private List<ConsumerRecord<K, V>> current;
    private int index;
    private Work<K, V> spare;
    private Slot<K, V> nullSlot;
    private Slot<K, V>[] table;
    private int[] hashes;
    private int shift;
    private int tableCount;
    private long seq;
    private long lastOffset = -1;
    private long publishedSeq;
    private long doneHere;
    private long slowUntil;
    private int slowStreak;
    /** {@link Ordering#PARTITION}: the record that failed and holds the partition until its retry. */
    private Work<K, V> failing;
    private volatile boolean retryDue;

    // Polling thread only: the watch.
    private long seenCall = -1;
    private long seenAt;

    Router(PartitionState ps, RecordRunner<K, V> runner, ContextExecutor executor, Ordering ordering,
           ConcurrentMap<Object, Slot<K, V>> keys) {
        this.ps = ps;
        this.runner = runner;
        this.executor = executor;
        this.ordering = ordering;
        this.keys = keys;
        this.topic = ps.tp.topic();
        this.onPollingThread = ordering == Ordering.KEY_LATEST;
        Batch<K, V> stub = new Batch<>(null);
        this.tailBatch = stub;
        this.headBatch = stub;
        this.slowUntil = System.nanoTime();
        allocate(MIN_TABLE);
    }

    // ------------------------------------------------------------------------------------------------ polling thread

    /** Polling thread: one poll's records of the partition, in offset order. */
    void offer(List<ConsumerRecord<K, V>> records) {
        Batch<K, V> b = new Batch<>(records);
        // A volatile store, so that it is ordered before the read of sched in schedule(): a run that set sched idle
        // either sees this batch or leaves sched idle for us to claim.
        NEXT_BATCH.setVolatile(tailBatch, b);
        tailBatch = b;
    }

    /** Polling thread: make sure a run will see what was offered. False if the executor refused the run. */
    boolean schedule() {
        if (onPollingThread) {
            route(Integer.MAX_VALUE);
            return true;
        }
        if (sched.get() != IDLE || !sched.compareAndSet(IDLE, SCHEDULED)) {
            return true;
        }
        try {
            executor.execute(this);
            return true;
        } catch (RejectedExecutionException e) {
            sched.set(IDLE); // offered again after the next poll
            return false;
        }
    }

    /** A run of this router the executor would not take (it is shutting down): schedule() tries again after a poll. */
    private final Runnable unscheduled = () -> sched.set(IDLE);

    /**
     * Polling thread, for a partition that is revoked: no run of this router is under way or queued, and no record
     * without a key is claimed. Under {@link Ordering#PARTITION} every record runs inside a run of the router, and
     * null-key records run in this router's own slot: a later router of the same partition shares neither, so it must
     * not start while this is false. (Keyed records are kept apart by the topic's shared slots.)
     */
    boolean stopped() {
        return sched.get() == IDLE && noKeylessPending();
    }

    /** Polling thread: ask the token holder to publish its progress after the record it is on. */
    void wantProgress() {
        if (!progressWanted) {
            progressWanted = true;
        }
    }

    /** Polling thread: a record is running on the spot. */
    boolean inCall() {
        return (call & 1) != 0;
    }

    /**
     * Polling thread: takes the routing from a call on the spot that has been running for {@link #DETACH_NANOS}
     * (as seen across its watches), and starts a run that carries on after it.
     */
    void watch(long now) {
        long c = (long) CALL.getAcquire(this);
        if ((c & 1) == 0) {
            seenCall = -1;
            return;
        }
        if (c != seenCall) {
            seenCall = c;
            seenAt = now;
            return;
        }
        // An executor that is shut down (a given one, by its owner) refuses the run that would carry on: the routing
        // taken from the call would be dropped there, and the records after it never run, while the call's own worker
        // runs them once the call returns.
        if (now - seenAt < DETACH_NANOS || executor.isShutdown() || !CALL.compareAndSet(this, c, c + 1)) {
            return;
        }
        // The token is ours: the record in the call becomes a tracked one (the router stored it as its spare before
        // the call), and whoever routes next treats the handler as slow.
        seenCall = -1;
        Work<K, V> w = spare;
        spare = null;
        ps.track(w);
        slowUntil = now + SLOW_HOLD_NANOS;
        slowStreak = 0;
        runner.handOff(executor, this, unscheduled); // given up: the executor is closing
    }

    // ------------------------------------------------------------------------------------------------- token holder

    @Override
    public void run() {
        while (route(MAX_PER_RUN)) {
            sched.set(IDLE);
            if (!hasMore() || !sched.compareAndSet(IDLE, SCHEDULED)) {
                return;
            }
        }
    }

    /** True when out of records; false when the token left this run (handed on, taken, or held by a failure). */
    private boolean route(int budget) {
        if (failing != null) {
            if (!retryDue) {
                return false;
            }
            retryDue = false;
            if (!runner.attempt(failing)) {
                // A retry the executor refuses (it is shut down) never comes: the token stays with the failed record
                // for good, so that no later record of the partition runs before it, nor is committed past it.
                runner.scheduleRetry(failing, this::retryNow);
                return false;
            }
            failing = null;
        }
        boolean mayRunHere = ordering == Ordering.KEY || ordering == Ordering.UNORDERED;
        boolean onTheSpot = mayRunHere && System.nanoTime() - slowUntil >= 0;
        long mark = 0;
        // Past the budget, the run goes on while the executor is shut down: it would refuse the run handed the rest
        // (a given executor, shut down by its owner, still runs what it took, this run included).
        for (int n = 0; n < budget || executor.isShutdown(); n++) {
            if (progressWanted) {
                // Cleared first, so that a request made while publishing is served after the next record.
                progressWanted = false;
                publish();
            }
            ConsumerRecord<K, V> r = next();
            if (r == null) {
                publish();
                return true;
            }
            long s = seq++;
            lastOffset = r.offset();
            if (ps.revoked) {
                continue; // dropped without running: the partition's next owner reads it again
            }
            if (ordering == Ordering.PARTITION) {
                if (!inPartitionOrder(r, s)) {
                    return false;
                }
                continue;
            }
            Slot<K, V> slot = null;
            int claim = 0;
            if (ordering != Ordering.UNORDERED) {
                K key = r.key();
                while (true) {
                    slot = key == null ? nullSlot() : slotOfGuarded(key, r);
                    claim = slot.claim();
                    if (claim != Slot.RETIRED) {
                        break;
                    }
                    // The sweeper took it out of use between the lookup and the claim: look again, which replaces it.
                }
            }
            // A record not run here goes to a lane, or as a task of its own, which an executor that is shut down
            // refuses: a slow handler then runs here all the same.
            if (claim != 0 || !onTheSpot && !(mayRunHere && executor.isShutdown())) {
                handOff(r, s, slot, claim == 0);
                mark = 0;
                continue;
            }
            long before = mark != 0 ? mark : System.nanoTime();
            if (!onTheSpot(r, s, slot)) {
                return false;
            }
            long after = System.nanoTime();
            if (after - before > SLOW_CALL_NANOS) {
                if (++slowStreak >= SLOW_STREAK) {
                    slowStreak = 0;
                    slowUntil = after + SLOW_HOLD_NANOS;
                    onTheSpot = false;
                }
            } else {
                slowStreak = 0;
            }
            mark = after;
        }
        publish();
        runner.handOff(executor, this, unscheduled); // the token goes with it
        return false;
    }

    /** Runs {@code r} here; false if the polling thread took the routing meanwhile. */
    private boolean onTheSpot(ConsumerRecord<K, V> r, long s, Slot<K, V> slot) {
        Work<K, V> w = spareWork(r, s);
        long c = call + 1;
        CALL.setRelease(this, c);
        int outcome = runner.tryHandle(w);
        if (!CALL.compareAndSet(this, c, c + 1)) {
            finishDetached(w, slot, outcome);
            return false;
        }
        if (outcome != RecordRunner.RETRY) {
            if (outcome == RecordRunner.DONE) {
                doneHere++;
            }
            w.record = null;
            if (slot != null) {
                slot.releaseInline();
            }
        } else {
            spare = null;
            ps.track(w);
            awaitRetry(w, slot);
        }
        return true;
    }

    /** The record object reused for calls on the spot (a new one only after the last was kept for a retry). */
    private Work<K, V> spareWork(ConsumerRecord<K, V> r, long s) {
        Work<K, V> w = spare;
        if (w == null) {
            w = new Work<>(ps, runner);
            spare = w;
        }
        w.reset(r, s);
        return w;
    }

    /** A failed record waits for its retry: holding its key's slot, or (no key order) on its own. */
    private void awaitRetry(Work<K, V> w, Slot<K, V> slot) {
        if (slot != null) {
            slot.holdFailed(w);
        } else {
            runner.retryLater(w);
        }
    }

    /** The record's call lost the routing while it ran: it is tracked now, and finishes like a handed-off one. */
    private void finishDetached(Work<K, V> w, Slot<K, V> slot, int outcome) {
        if (outcome == RecordRunner.RETRY) {
            awaitRetry(w, slot);
            return;
        }
        if (outcome == RecordRunner.DONE) {
            runner.finish(w);
        } else {
            w.record = null;
        }
        if (slot != null) {
            slot.releaseInline();
        }
    }

    private void handOff(ConsumerRecord<K, V> r, long s, Slot<K, V> slot, boolean owner) {
        Work<K, V> w = new Work<>(ps, runner);
        w.reset(r, s);
        ps.track(w);
        if (slot != null) {
            slot.publish(w, owner);
            return;
        }
        runner.handOff(executor, w, null); // given up: the executor shuts down with the processor; not committed
    }

    /** {@link Ordering#PARTITION}: false when the record failed and now holds the partition until its retry. */
    private boolean inPartitionOrder(ConsumerRecord<K, V> r, long s) {
        // Everything before r is finished (or tracked): publish that before r runs. Published only after it, the
        // records before a record that runs long (or never returns) were neither counted nor committed while it ran,
        // nor at revocation or close. A record's worth of counting per record, in this ordering only.
        publishUpTo(r.offset(), s);
        Work<K, V> w = spareWork(r, s);
        int outcome = runner.tryHandle(w);
        if (outcome != RecordRunner.RETRY) {
            if (outcome == RecordRunner.DONE) {
                doneHere++;
            }
            w.record = null;
            return true;
        }
        spare = null;
        ps.track(w);
        failing = w;
        publish();
        runner.scheduleRetry(w, this::retryNow); // refused (shut down): the token stays here for good, as above
        return false;
    }

    private void retryNow() {
        retryDue = true;
        // The token stayed with the failed record; the timer hands it on.
        runner.handOff(executor, this, unscheduled);
    }

    private void publish() {
        publishUpTo(lastOffset + 1, seq);
    }

    /**
     * Publishes the records finished here, and that every record below {@code upTo} ({@code count} of them) is done or
     * tracked.
     */
    private void publishUpTo(long upTo, long count) {
        if (doneHere > 0) {
            runner.completed.add(doneHere);
            ps.completedMany(doneHere);
            doneHere = 0;
        }
        // Not once the partition is revoked: the records dropped since then (skipped above, or DROPPED by the runner
        // on the spot) are neither run nor tracked, and a progress mark past them would let the commit that follows
        // the revocation (or the close) skip them, so their next owner would never see them. Revocation is sticky and
        // read after every drop of this run, so no drop escapes this check; the commit stays at what was routed
        // before, and the next owner processes the rest again.
        if (count != publishedSeq && !ps.revoked) {
            publishedSeq = count;
            ps.routed(upTo, count);
        }
    }

    private ConsumerRecord<K, V> next() {
        while (true) {
            List<ConsumerRecord<K, V>> c = current;
            if (c != null && index < c.size()) {
                return c.get(index++);
            }
            @SuppressWarnings("unchecked")
            Batch<K, V> b = (Batch<K, V>) NEXT_BATCH.getAcquire(headBatch);
            if (b == null) {
                current = null;
                return null;
            }
            headBatch = b;
            current = b.records;
            b.records = null; // the stub keeps this object until the next batch: not its records
            index = 0;
        }
    }

    private boolean hasMore() {
        List<ConsumerRecord<K, V>> c = current;
        return (c != null && index < c.size()) || NEXT_BATCH.getVolatile(headBatch) != null;
    }

    /**
     * {@link #slotOf}, or, for a key whose {@code hashCode} or {@code equals} throws (the key class's bug), the
     * partition's null-key slot: the record then keeps partition order with the records that have no key, and is never
     * superseded. Unguarded, the throw ended the polling thread under {@code KEY_LATEST} (which routes there), and
     * under {@code KEY} left the partition's router scheduled for good, routing nothing more and holding its commit.
     * Such a key never gets a slot of its own: a key new to this router is compared with itself before it is kept
     * (see {@link #slotOf}), so that all of its records, the first included, go the same way. Reported once per
     * partition assignment.
     */
    private Slot<K, V> slotOfGuarded(K key, ConsumerRecord<K, V> r) {
        try {
            return slotOf(key);
        } catch (OutOfMemoryError e) {
            throw e;
        } catch (Throwable keyFailed) {
            if (!brokenKeyReported) {
                brokenKeyReported = true;
                LOG.log(System.Logger.Level.WARNING, "The key of " + ps.tp + "@" + r.offset() + " (" + key.getClass()
                        .getName() + ") could not be looked up (its hashCode or equals threw, or equals is not"
                        + " reflexive); such records keep the order of the partition's records without a key",
                        keyFailed);
            }
            return nullSlot();
        }
    }

    private static final System.Logger LOG = System.getLogger(KafkaProcessor.class.getName());

    /** Whether a key that threw from hashCode or equals was reported (see {@link #slotOfGuarded}). */
    private boolean brokenKeyReported;

    /**
     * The key's slot: first from this router's own table, then from the topic's shared map. The shared map's lookup
     * walks a node, the stored key and a separate counter per record, and was most of a router's time with many keys;
     * the table here is read by this router only: open addressing over an array of hashes (a probe reads that array
     * alone) beside an array of the slots themselves, so a hit touches one slot, whose claim count and (for short
     * String keys) packed key share its line; see {@link Slot#isKey}. Fibonacci hashing spreads the hashes first:
     * keys such as "key-1230".."key-1239" have consecutive String hashes, which linear probing on the low bits would
     * pile into long runs.
     */
    private Slot<K, V> slotOf(K key) {
        Object k = keyOf(key);
        int h = k.hashCode();
        int[] hs = hashes;
        Slot<K, V>[] t = table;
        int mask = t.length - 1;
        int i = (h * 0x9E3779B9) >>> shift;
        Slot<K, V> s;
        while ((s = t[i]) != null) {
            if (hs[i] == h && isKeyOf(s, k)) {
                if (s.retired()) {
                    s = shared(k); // same key, same hash: the new slot takes the retired one's place
                    t[i] = s;
                }
                s.used = true;
                return s;
            }
            i = (i + 1) & mask;
        }
        if (!k.equals(k)) { // before it is kept: see slotOfGuarded
            throw new IllegalStateException("equals is not reflexive");
        }
        s = shared(k);
        t[i] = s;
        hs[i] = h;
        if (++tableCount * 2 > t.length) {
            rebuild();
        }
        s.used = true;
        return s;
    }

    /**
     * Whether {@code s} is the slot of {@code k}; false if the kept key's {@code equals} throws with {@code k} (a key
     * class whose equals fails on another's key), so that one broken key cannot turn others away from their slots.
     * Whatever it throws: an {@code Error} let through (an {@code AssertionError}, Kotlin's {@code TODO()}) reached
     * {@link #slotOfGuarded}, which sent the key being looked up, a healthy one, to the partition's null-key slot, where
     * its records ran beside those of the same key in its own slot. As there, only an {@code OutOfMemoryError} passes.
     */
    private static boolean isKeyOf(Slot<?, ?> s, Object k) {
        try {
            return s.isKey(k);
        } catch (OutOfMemoryError e) {
            throw e;
        } catch (Throwable notEqual) {
            return false;
        }
    }

    /** The topic's slot of a key, never a retired one. */
    private Slot<K, V> shared(Object k) {
        while (true) {
            Slot<K, V> s = keys.get(k);
            if (s == null) {
                Object kept = k instanceof LaneKey.Bytes ? ((LaneKey.Bytes) k).kept() : k;
                s = keys.computeIfAbsent(kept, x -> new Slot<>(x, runner, executor.coalescing(LaneKey.of(topic, x)),
                        ordering == Ordering.KEY_LATEST));
            }
            if (!s.retired()) {
                return s;
            }
            keys.remove(k, s); // the sweeper retired it and is about to remove it: either of us may
        }
    }

    /** Grows the table, dropping the slots the sweeper retired, so that it follows live keys too. */
    private void rebuild() {
        Slot<K, V>[] old = table;
        int live = 0;
        for (Slot<K, V> s : old) {
            if (s != null && !s.retired()) {
                live++;
            }
        }
        allocate(Math.max(MIN_TABLE, Integer.highestOneBit(Math.max(1, live)) * 4));
        Slot<K, V>[] t = table;
        int mask = t.length - 1;
        for (Slot<K, V> s : old) {
            if (s != null && !s.retired()) {
                int i = (s.hash * 0x9E3779B9) >>> shift;
                while (t[i] != null) {
                    i = (i + 1) & mask;
                }
                t[i] = s;
                hashes[i] = s.hash;
            }
        }
        tableCount = live;
    }

    private void allocate(int size) {
        table = newTable(size);
        hashes = new int[size];
        shift = 32 - Integer.numberOfTrailingZeros(size);
    }

    @SuppressWarnings("unchecked")
    private static <K, V> Slot<K, V>[] newTable(int size) {
        return (Slot<K, V>[]) new Slot<?, ?>[size];
    }

    /**
     * The key as the maps hold it: a {@code byte[]} by content, and a {@code ByteBuffer} by its remaining bytes (what
     * its {@code equals} compares), copied, since a handler that reads the buffer moves its position and so changed
     * the key kept for the slot. Kafka's {@code Bytes} (the key of its {@code BytesDeserializer}) by content too: its
     * {@code get()} hands out its array, and kept as it came, a handler that reused that array changed the kept key,
     * whose next record, equal to it no more, got a second slot and ran beside the first.
     */
    private static Object keyOf(Object key) {
        if (key instanceof byte[]) {
            return new LaneKey.Bytes((byte[]) key);
        }
        if (key instanceof org.apache.kafka.common.utils.Bytes) {
            return new LaneKey.Bytes(((org.apache.kafka.common.utils.Bytes) key).get());
        }
        if (key instanceof ByteBuffer) {
            ByteBuffer b = ((ByteBuffer) key).duplicate(); // the record's buffer keeps its position
            byte[] content = new byte[b.remaining()];
            b.get(content);
            return new LaneKey.Bytes(content);
        }
        return key;
    }

    /**
     * Polling thread, after reading {@code routedUpTo} (which the router publishes after routing): whether no record
     * without a key is claimed and unfinished. The slot is created before the first such record is routed, so a
     * reader that saw that record routed sees the slot.
     */
    boolean noKeylessPending() {
        Slot<K, V> s = nullSlot;
        return s == null || s.unclaimed();
    }

    private Slot<K, V> nullSlot() {
        Slot<K, V> s = nullSlot;
        if (s == null) {
            // Null keys are not a key: their records keep partition order, and are never superseded.
            s = new Slot<>(null, runner, executor.coalescing(LaneKey.of(ps.tp)), false);
            nullSlot = s;
        }
        return s;
    }

    /** One poll's records of the partition; the link of the router's queue. */
    private static final class Batch<K, V> {
        List<ConsumerRecord<K, V>> records;
        @SuppressWarnings("unused")
        volatile Batch<K, V> next;

        Batch(List<ConsumerRecord<K, V>> records) {
            this.records = records;
        }
    }
}
