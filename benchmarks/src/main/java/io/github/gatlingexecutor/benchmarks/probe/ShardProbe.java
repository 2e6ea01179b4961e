package io.github.gatlingexecutor.benchmarks.probe;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A design probe for the hand-off engine, not an executor: it answers whether per-key order on a small pool can cost
 * what a pinned single-thread executor costs while a key can still leave a worker that is stuck. It has no shutdown
 * semantics, no limits, no statistics beyond the per-context counts, swallows a task's throwable, and is used only by
 * the comparison runner ({@code -Dprobe.shard=true}). Results: {@code docs/hand-off-experiments.md}, "A shard design
 * probe".
 *
 * <p><b>Shards.</b> A key hashes to a shard: an unbounded multi-producer queue of (context, task) entries in linked
 * array chunks, whose submitters claim a slot with one {@code getAndAdd}. A shard has one owner at a time and only the
 * owner takes from it, so a key's entries run in queue order on one thread. A submit writes the shard's producer
 * index and its slot, and no line that a worker writes per task. The owner and the consumer index share one word
 * ({@code ctl}); the owner claims up to a batch of entries with one CAS on it, so taking a shard from its owner is
 * one CAS that the owner's next claim loses.
 *
 * <p><b>Moving work off a stuck worker.</b> An idle worker that sees entries waiting in a shard whose {@code ctl}
 * has not moved for {@code takeoverNanos} takes the shard over. The contexts of the entries the old owner claimed
 * and has not finished are <em>diverted</em>: while a diversion lasts, the shard's owner hands that context's
 * entries, in order, to the old owner's side queue instead of running them. The context keeps its order, and
 * everything else in the shard runs on the new owner. The old owner ends its diversions when its side queue is
 * empty. While a shard has a diversion, claims take the shard's lock; otherwise a claim takes no lock.
 *
 * <p><b>Per-context records</b> (with {@code lanes}): the state the executor keeps per context for its statistics
 * and limits. The submitter counts on the record's producer line (one CAS) and the worker on its consumer line (a
 * release store). A sweep every millisecond releases a record that was idle for a whole period, with one CAS on the
 * producer count. A released record stays usable as a handle: its next submit revives it, or moves to the key's
 * live record. No line is written by both sides per task.
 *
 * <p><b>Counts kept by the worker alone</b> ({@code -Dprobe.ownerRecords}, bare variant only): 1, a count on a line of
 * the handle that no submit reads; 2, a count found through a worker-local map, as a record looked up by context
 * would be. They ask whether the records' cost is the record or the producer's write to it.
 */
public final class ShardProbe implements AutoCloseable {
    /** Entries per chunk; each entry is two slots (context, task). */
    static final int CHUNK = 1024;
    /** Tasks a worker takes from one shard before it looks at its side queue and its other shards. */
    static final int BATCH = 64;
    /** How long an idle worker spins and yields before it parks. */
    static final long SPIN_NANOS = Long.getLong("probe.spinNanos", 50_000L);
    /**
     * A parked worker wakes after this long to look for a stuck shard (the executor would leave this to its checker),
     * doubling up to {@link #MAX_PARK_NANOS} while it finds nothing, so an idle worker beside one hot key does not
     * take a CPU from its producer or its worker every 200 us.
     */
    static final long PARK_NANOS = 200_000;
    static final long MAX_PARK_NANOS = 5_000_000;
    static final long SWEEP_NANOS = 1_000_000;
    static final long SCAN_NANOS = 5_000;
    static final int OWNER_SHIFT = 40;
    static final long INDEX_MASK = (1L << OWNER_SHIFT) - 1;

    private final Shard[] shards;
    private final Worker[] workers;
    private final boolean lanes;
    private final long takeoverNanos;
    private final ConcurrentHashMap<Object, Lane> laneMap = new ConcurrentHashMap<>();
    private volatile boolean stopped;

    public ShardProbe(int workerCount, int shardsPerWorker, boolean lanes, long takeoverNanos, ThreadFactory threads) {
        this.lanes = lanes;
        this.takeoverNanos = takeoverNanos;
        this.shards = new Shard[workerCount * shardsPerWorker];
        this.workers = new Worker[workerCount];
        for (int i = 0; i < workers.length; i++) {
            workers[i] = new Worker(i);
        }
        for (int i = 0; i < shards.length; i++) {
            shards[i] = new Shard(i % workerCount);
            workers[i % workerCount].owned.add(shards[i]);
        }
        for (Worker w : workers) {
            w.thread = threads.newThread(w);
            w.thread.start();
        }
    }

    /**
     * The submit handle of {@code key}. Bare: an object that knows its shard. With lanes: the key's live per-context
     * record itself, which keeps working after its release (its next submit revives it or moves to the live one).
     */
    public Executor handle(Object key) {
        int h = key.hashCode();
        h ^= h >>> 16;
        Shard shard = shards[Math.floorMod(h, shards.length)];
        if (!lanes) {
            return new Handle(shard, key);
        }
        return laneMap.computeIfAbsent(key, k -> new Lane(k, shard));
    }

    /** The bare variant's handle, in three lines: padding, what a submit reads (shard, key), what a worker writes. */
    abstract static class HandlePad0 {
        long p00, p01, p02, p03, p04, p05, p06, p07;
    }

    abstract static class HandleFields extends HandlePad0 {
        Shard shard;
        Object key;
    }

    abstract static class HandlePad1 extends HandleFields {
        long p10, p11, p12, p13, p14, p15, p16, p17;
    }

    abstract static class HandleConsumer extends HandlePad1 {
        long executed;
    }

    static final VarHandle HANDLE_EXECUTED;

    static {
        try {
            HANDLE_EXECUTED = MethodHandles.lookup().findVarHandle(HandleConsumer.class, "executed", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Owner-side records: 0 none, 1 a count on the handle's own line, 2 a worker-local map lookup per task. */
    static final int OWNER_RECORDS = Integer.getInteger("probe.ownerRecords", 0);

    /**
     * The bare variant's handle. A diversion knows a context by its handle, so each key must have one handle (the
     * comparison runner keeps one per key).
     */
    final class Handle extends HandleConsumer implements Executor {
        long p20, p21, p22, p23, p24, p25, p26, p27;

        Handle(Shard shard, Object key) {
            this.shard = shard;
            this.key = key;
        }

        @Override
        public void execute(Runnable task) {
            Objects.requireNonNull(task, "task");
            shard.offer(workers, this, task);
        }
    }

    @Override
    public void close() {
        stopped = true;
        for (Worker w : workers) {
            LockSupport.unpark(w.thread);
        }
        for (Worker w : workers) {
            try {
                w.thread.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** One link of a shard's queue. */
    static final class Chunk {
        static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(Object[].class);
        final long base;
        final Object[] slots = new Object[2 * CHUNK];
        /** For a producer whose index lies behind the producer hint; cleared when the consumer moves past. */
        Chunk prev;
        volatile Chunk next;

        Chunk(long base, Chunk prev) {
            this.base = base;
            this.prev = prev;
        }
    }

    record Entry(Object context, Runnable task) {
    }

    /** Padding so the producer line shares no cache line with the consumer line or another object. */
    abstract static class ShardPad0 {
        long p00, p01, p02, p03, p04, p05, p06, p07;
    }

    abstract static class ShardProducer extends ShardPad0 {
        /** Next index to claim. */
        volatile long pIdx;
        /** The newest chunk, a hint for producers. */
        volatile Chunk producerChunk;
        /** 1 while the owner is about to park or parked; read by each submit on the line it writes anyway. */
        volatile int sleeping;
    }

    abstract static class ShardPad1 extends ShardProducer {
        long p10, p11, p12, p13, p14, p15, p16, p17;
    }

    abstract static class ShardConsumer extends ShardPad1 {
        /** owner << OWNER_SHIFT | next index to take. */
        volatile long ctl;
        /** Written by the owner only (after a successful take); a new owner walks forward from it. */
        Chunk consumerChunk;
        /**
         * The index of the entry the owner runs now, or the end of its claimed batch once the batch has run. Entries
         * from here to the consumer index are claimed and not finished, so whoever takes the shard over must divert
         * their contexts. Written with release before each task (so a reader that acquires it sees every earlier
         * task's effects), and before the claim's CAS.
         */
        long runIdx;
        /** Diversions in force; non-zero sends every take through the lock. */
        volatile int diverted;
    }

    static final class Shard extends ShardConsumer {
        static final VarHandle P_IDX;
        static final VarHandle CTL;
        static final VarHandle RUN_IDX;
        static final VarHandle SLEEPING;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                P_IDX = l.findVarHandle(ShardProducer.class, "pIdx", long.class);
                SLEEPING = l.findVarHandle(ShardProducer.class, "sleeping", int.class);
                CTL = l.findVarHandle(ShardConsumer.class, "ctl", long.class);
                RUN_IDX = l.findVarHandle(ShardConsumer.class, "runIdx", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        long p20, p21, p22, p23, p24, p25, p26, p27;
        final Object lock = new Object();
        /** Context -> the worker whose side queue takes its entries; guarded by {@link #lock}. */
        final HashMap<Object, Worker> diversions = new HashMap<>();

        Shard(int owner) {
            Chunk first = new Chunk(0, null);
            producerChunk = first;
            consumerChunk = first;
            ctl = (long) owner << OWNER_SHIFT;
        }

        void offer(Worker[] workers, Object context, Runnable task) {
            // The getAndAdd is a full fence: the read of 'sleeping' below cannot pass it, and the owner writes
            // 'sleeping' before it reads pIdx, so either it sees this index or this submit sees it going to sleep.
            long i = (long) P_IDX.getAndAdd(this, 1L);
            Chunk c = producerChunk;
            while (i < c.base) {
                c = c.prev;
            }
            while (i >= c.base + CHUNK) {
                Chunk n = c.next;
                if (n == null) {
                    if (i == c.base + CHUNK) {
                        // Only the claimant of a chunk's first index makes the chunk, so no CAS is needed to link it.
                        n = new Chunk(i, c);
                        c.next = n;
                        producerChunk = n;
                    } else {
                        Thread.onSpinWait();
                        continue;
                    }
                }
                c = n;
            }
            int j = (int) (i - c.base) << 1;
            c.slots[j] = context;
            Chunk.SLOTS.setRelease(c.slots, j + 1, task);
            if (sleeping != 0 && SLEEPING.compareAndSet(this, 1, 0)) {
                LockSupport.unpark(workers[(int) (ctl >>> OWNER_SHIFT)].thread);
            }
        }

        boolean hasWaiting() {
            return pIdx > (ctl & INDEX_MASK);
        }
    }

    /** The per-context record of the {@code lanes} variant; producer and consumer counts on lines of their own. */
    abstract static class LanePad0 {
        long p00, p01, p02, p03, p04, p05, p06, p07;
    }

    abstract static class LaneProducer extends LanePad0 {
        /** Tasks accepted; negative once released. */
        volatile long submitted;
    }

    abstract static class LanePad1 extends LaneProducer {
        long p10, p11, p12, p13, p14, p15, p16, p17;
    }

    abstract static class LaneConsumer extends LanePad1 {
        /** Tasks run; written by whichever worker runs the context (one at a time, ordered by the hand-offs). */
        long executed;
        /** In some worker's sweep ring. */
        boolean ringed;
        /** {@link #executed} at the previous sweep. */
        long executedAtSweep = -1;
    }

    final class Lane extends LaneConsumer implements Executor {
        static final VarHandle SUBMITTED;
        static final VarHandle EXECUTED;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                SUBMITTED = l.findVarHandle(LaneProducer.class, "submitted", long.class);
                EXECUTED = l.findVarHandle(LaneConsumer.class, "executed", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        long p20, p21, p22, p23, p24, p25, p26, p27;
        final Object key;
        final Shard shard;

        Lane(Object key, Shard shard) {
            this.key = key;
            this.shard = shard;
        }

        @Override
        public void execute(Runnable task) {
            Objects.requireNonNull(task, "task");
            Lane l = this;
            for (;;) {
                long n = l.submitted;
                // A released record has a negative count; the CAS both counts the task and keeps the record live.
                if (n >= 0) {
                    if (SUBMITTED.compareAndSet(l, n, n + 1)) {
                        break;
                    }
                    continue;
                }
                // Released: revive this record, unless the key has another live one. Revival and removal both run
                // under the map's lock for the key, so a record is never live and unmapped.
                Lane self = this;
                l = laneMap.compute(key, (k, old) -> {
                    if (old != null && old.submitted >= 0) {
                        return old;
                    }
                    self.submitted = self.executed; // every task of it has run: that is why it was released
                    return self;
                });
            }
            l.shard.offer(workers, l, task);
        }
    }

    final class Worker implements Runnable {
        final int id;
        Thread thread;
        /** Shards this worker owns, as far as it knows: it learns of a loss at its next take. */
        final ArrayList<Shard> owned = new ArrayList<>();
        volatile int ownedCount;
        final ConcurrentLinkedQueue<Entry> side = new ConcurrentLinkedQueue<>();
        /** Shards holding a diversion to this worker. */
        final Set<Shard> divertedIn = ConcurrentHashMap.newKeySet();
        final long[] seenCtl = new long[shards.length];
        final long[] seenAt = new long[shards.length];
        final ArrayList<Lane> ring = new ArrayList<>();
        final HashMap<Object, long[]> records = new HashMap<>();
        long nextSweep;
        long idleSince;
        long lastScan;
        long parkNanos = PARK_NANOS;

        Worker(int id) {
            this.id = id;
            Arrays.fill(seenCtl, -1L); // no ctl is negative: the first look at a shard only records it
        }

        @Override
        public void run() {
            ownedCount = owned.size();
            int loops = 0;
            while (!stopped) {
                int ran = runSide();
                if (ran == 0 && !divertedIn.isEmpty()) {
                    endDiversions();
                }
                for (int i = 0; i < owned.size(); i++) {
                    int r = drain(owned.get(i));
                    if (r < 0) {
                        owned.remove(i--);
                        ownedCount = owned.size();
                    } else {
                        ran += r;
                    }
                }
                if (lanes && !ring.isEmpty() && (ran == 0 || (++loops & 63) == 0)) {
                    sweep(System.nanoTime());
                }
                if (ran > 0) {
                    idleSince = 0;
                    parkNanos = PARK_NANOS;
                    continue;
                }
                idle();
            }
        }

        private int runSide() {
            int ran = 0;
            Entry e;
            while (ran < BATCH && (e = side.poll()) != null) {
                runTask(e.context(), e.task());
                ran++;
            }
            return ran;
        }

        /** Ends every diversion to this worker whose shard sends it nothing more (checked under the shard's lock). */
        private void endDiversions() {
            for (Iterator<Shard> it = divertedIn.iterator(); it.hasNext(); ) {
                Shard s = it.next();
                synchronized (s.lock) {
                    // Entries for this worker are added under this lock; empty here means none of this shard's
                    // diverted contexts has an entry waiting, and this worker runs nothing now.
                    if (!side.isEmpty()) {
                        return;
                    }
                    s.diversions.values().removeIf(w -> w == this);
                    s.diverted = s.diversions.size();
                    it.remove();
                }
            }
        }

        /**
         * Runs up to a batch of {@code s}; -1 if another worker took it over. The entries are claimed a batch at a
         * time, with one CAS: the hand-shake with a take-over is per batch, not per task.
         */
        private int drain(Shard s) {
            int ran = 0;
            Chunk ch = s.consumerChunk;
            while (ran < BATCH) {
                long c = s.ctl;
                if ((int) (c >>> OWNER_SHIFT) != id) {
                    return -1;
                }
                long idx = c & INDEX_MASK;
                while (idx >= ch.base + CHUNK) {
                    Chunk n = ch.next;
                    if (n == null) {
                        return ran; // the next chunk is being linked; come back
                    }
                    ch = n;
                }
                int first = (int) (idx - ch.base);
                int max = Math.min(BATCH - ran, CHUNK - first);
                int n = 0;
                // Each acquire pairs with its submitter's release of the task: the context and the task's own
                // fields are visible. An empty slot is the end of the batch (a submitter may sit between its claim
                // and its store: its entry comes in a later batch).
                while (n < max && Chunk.SLOTS.getAcquire(ch.slots, ((first + n) << 1) + 1) != null) {
                    n++;
                }
                if (n == 0) {
                    return ran;
                }
                boolean moved = ch != s.consumerChunk;
                if (moved) {
                    s.consumerChunk = ch; // before the CAS: a new owner reads the claimed entries from it
                }
                boolean divertedAny;
                if (s.diverted != 0) {
                    int d = claimDiverted(s, c, ch, first, n);
                    if (d < 0) {
                        return -1;
                    }
                    divertedAny = d > 0;
                } else {
                    Shard.RUN_IDX.setRelease(s, idx);
                    if (!Shard.CTL.compareAndSet(s, c, c + n)) {
                        return -1;
                    }
                    divertedAny = false;
                }
                if (moved) {
                    // Only on a move: the header line holds what every submit reads (base, slots).
                    ch.prev = null;
                }
                for (int k = 0; k < n; k++) {
                    int j = (first + k) << 1;
                    Object context = ch.slots[j];
                    if (divertedAny && context == null) {
                        continue; // handed to a side queue by claimDiverted
                    }
                    Shard.RUN_IDX.setRelease(s, idx + k);
                    runTask(context, (Runnable) ch.slots[j + 1]);
                }
                Shard.RUN_IDX.setRelease(s, idx + n);
                ran += n;
            }
            return ran;
        }

        /**
         * Claims {@code n} entries from {@code first} while some context of {@code s} is diverted, under the shard's
         * lock: the entries of a diverted context go to its worker's side queue (and their context slot is cleared,
         * so the caller skips them); 1 if any went, 0 if none, -1 if the shard was taken over.
         */
        private int claimDiverted(Shard s, long c, Chunk ch, int first, int n) {
            boolean any = false;
            synchronized (s.lock) {
                Shard.RUN_IDX.setRelease(s, c & INDEX_MASK);
                if (!Shard.CTL.compareAndSet(s, c, c + n)) {
                    return -1;
                }
                for (int k = 0; k < n; k++) {
                    int j = (first + k) << 1;
                    Worker target = s.diversions.get(ch.slots[j]);
                    if (target != null) {
                        target.side.add(new Entry(ch.slots[j], (Runnable) ch.slots[j + 1]));
                        ch.slots[j] = null;
                        any = true;
                        if (target != this) {
                            LockSupport.unpark(target.thread);
                        }
                    }
                }
            }
            return any ? 1 : 0;
        }

        private void runTask(Object context, Runnable task) {
            try {
                task.run();
            } catch (Throwable ignored) {
                // the probe's tasks do not throw; the executor hands a throwable to its handler
            }
            if (OWNER_RECORDS == 1 && !lanes) {
                Handle h = (Handle) context;
                HANDLE_EXECUTED.setRelease(h, h.executed + 1);
            } else if (OWNER_RECORDS == 2 && !lanes) {
                Object key = ((Handle) context).key;
                long[] rec = records.get(key);
                if (rec == null) {
                    records.put(key, rec = new long[1]);
                }
                rec[0]++;
            }
            if (lanes) {
                Lane l = (Lane) context;
                Lane.EXECUTED.setRelease(l, l.executed + 1);
                if (!l.ringed) {
                    l.ringed = true;
                    ring.add(l);
                }
            }
        }

        /** Releases the records that were idle for a whole sweep period. */
        private void sweep(long now) {
            if (now < nextSweep) {
                return;
            }
            nextSweep = now + SWEEP_NANOS;
            int keep = 0;
            for (int i = 0; i < ring.size(); i++) {
                Lane l = ring.get(i);
                long e = (long) Lane.EXECUTED.getAcquire(l);
                boolean quiet = e == l.executedAtSweep;
                l.executedAtSweep = e;
                if (quiet && l.submitted == e) {
                    // Unmarked before the CAS, so whoever runs it after a revival rings it again; a second ring
                    // entry is harmless (the release CAS decides).
                    l.ringed = false;
                    if (Lane.SUBMITTED.compareAndSet(l, e, -1L)) {
                        laneMap.computeIfPresent(l.key, (k, v) -> v == l && v.submitted < 0 ? null : v);
                        continue;
                    }
                    l.ringed = true;
                }
                ring.set(keep++, l);
            }
            while (ring.size() > keep) {
                ring.remove(ring.size() - 1);
            }
        }

        private void idle() {
            long now = System.nanoTime();
            if (idleSince == 0) {
                idleSince = now;
            }
            // Looking at other shards reads lines their owners write per task: once per SCAN_NANOS is enough.
            if (now - lastScan >= SCAN_NANOS) {
                lastScan = now;
                if (takeOver(now)) {
                    idleSince = 0;
                    parkNanos = PARK_NANOS;
                    return;
                }
            }
            if (now - idleSince < SPIN_NANOS) {
                if ((now & 15) == 0) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
                return;
            }
            for (Shard s : owned) {
                s.sleeping = 1;
            }
            // A volatile store orders each flag before the reads of pIdx below (see Shard.offer).
            boolean work = !side.isEmpty();
            for (Shard s : owned) {
                work |= s.hasWaiting();
            }
            if (!work) {
                LockSupport.parkNanos(this, parkNanos);
                parkNanos = Math.min(parkNanos * 2, MAX_PARK_NANOS);
            }
            for (Shard s : owned) {
                s.sleeping = 0;
            }
        }

        /** Takes over a shard that has waited without progress, or one from a worker that owns more than this one. */
        private boolean takeOver(long now) {
            int mine = owned.size();
            for (int i = 0; i < shards.length; i++) {
                Shard s = shards[i];
                long c = s.ctl;
                int owner = (int) (c >>> OWNER_SHIFT);
                if (owner == id) {
                    continue;
                }
                if (c != seenCtl[i]) {
                    // Progress (or a first look): nothing to take over. Its producer index is not read here, since
                    // a searcher that polls the line a submitter writes per task slows that submitter down.
                    seenCtl[i] = c;
                    seenAt[i] = now;
                    if (workers[owner].ownedCount <= mine + 1) {
                        continue;
                    }
                }
                boolean stuck = now - seenAt[i] >= takeoverNanos;
                boolean uneven = workers[owner].ownedCount > mine + 1;
                if (!stuck && !uneven) {
                    continue;
                }
                if (!s.hasWaiting()) {
                    seenAt[i] = now;
                    continue;
                }
                if (takeOver(s, c)) {
                    owned.add(s);
                    ownedCount = owned.size();
                    return true;
                }
            }
            return false;
        }

        private boolean takeOver(Shard s, long seen) {
            synchronized (s.lock) {
                if (!Shard.CTL.compareAndSet(s, seen, ((long) id << OWNER_SHIFT) | (seen & INDEX_MASK))) {
                    return false;
                }
                // The old owner claimed up to the consumer index and has finished everything before runIdx (its
                // release store, this acquire): the contexts of the entries in between are its to finish, so their
                // later entries must follow them onto its side queue.
                long from = (long) Shard.RUN_IDX.getAcquire(s);
                long to = seen & INDEX_MASK;
                Worker old = workers[(int) (seen >>> OWNER_SHIFT)];
                Chunk ch = s.consumerChunk;
                // The owner moves consumerChunk on only when it claims from a new chunk, after its previous batch
                // has run: entries before the chunk are finished even if the runIdx read here is older.
                for (long i = Math.max(from, ch.base); i < to; i++) {
                    while (i >= ch.base + CHUNK) {
                        ch = ch.next;
                    }
                    Object context = ch.slots[(int) (i - ch.base) << 1];
                    if (context != null && !s.diversions.containsKey(context)) {
                        s.diversions.put(context, old);
                        old.divertedIn.add(s);
                    }
                }
                s.diverted = s.diversions.size();
                return true;
            }
        }
    }
}
