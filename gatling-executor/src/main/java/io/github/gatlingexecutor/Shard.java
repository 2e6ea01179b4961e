package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.HashMap;
import java.util.List;

/**
 * A shard of the shard engine (docs/next-engine.md): an unbounded multi-producer queue of sequential entries
 * (context, its hash, task, stamp) of the contexts that hash to it, taken by one owner at a time. This class is the
 * queue and its two protocols, checked on their own (jcstress {@code Shard*Stress}, {@code ShardTest}); the owner's
 * side of a visit is {@link ShardOwner}.
 *
 * <h2>Producers: one line, written by producers only</h2>
 * A submit claims an index with one {@code getAndAdd} on {@code tail}, writes its entry into that index's slot of an
 * array chunk, and reads {@code scheduled} on the line it has just written. Unlike a {@link SequentialLane}, no
 * per-context line is touched: over many contexts that line was cold, and the worker had written it (ninth set of
 * docs/benchmarks.md). {@code tail}'s sign bit is CLOSED, set by the drain of {@code shutdownNow} or by a quiescence
 * check; a submit whose {@code getAndAdd} returns a negative value is refused (its increment lands past the close,
 * where nothing reads).
 *
 * <h2>Owners: one word, written by owners only</h2>
 * {@code word} = {@code index48 << 16 | STOPPED | FREE | epoch}: the low 48 bits of the next index to claim, whether
 * the shard is stopped ({@code shutdownNow}, terminal) or has no owner, and an epoch that every change of owner moves.
 * The owner claims each entry with a CAS that adds one to the index. Whoever changes the epoch (the holder of the
 * scheduling taking a FREE shard, a thief taking it from a stuck owner) or sets STOPPED makes the old owner's next
 * claim fail, and an owner gives the shard up with a CAS to FREE that fails the same way. So each entry is claimed
 * exactly once; an entry at or past the word's index when the shard is stopped never runs, so no entry is both run
 * and returned; and a thief takes exactly what has not started. A robbed owner's CAS could succeed again only if the
 * word came back to its value: the same index after 2<sup>14</sup> changes of owner with no claim between them (only
 * spurious schedules of an empty shard change owners without claiming, and a thief robs a shard because entries
 * wait, which it claims at once), or the index 2<sup>48</sup> entries on. Producers never read this line.
 *
 * <h2>Scheduling: the {@code scheduled} flag</h2>
 * Set by the submit that finds it clear (a CAS: that submit queues the shard), cleared by an owner that found the
 * shard empty (after setting its word FREE), which then reads {@code tail} again and takes the shard back if an entry
 * came in. Both sides write, then read the other's field, all volatile: the owner's clearing store and its read of
 * {@code tail} against the submit's {@code getAndAdd} and its read of {@code scheduled}. In the total order of those
 * accesses either the owner sees the new index (and keeps the shard), or the submit comes after the clearing and sees
 * it clear (and queues the shard); an entry is never left in an unscheduled shard. Under load the flag stays set and
 * is only read.
 *
 * <h2>Chunks</h2>
 * {@link #CHUNK} entries each; the context at {@code 2k} and the task at {@code 2k + 1} of {@code slots} (8 entries to
 * a cache line with compressed references), the stamp at {@code stamps[k]}, the context's hash at {@code hashes[k]}.
 * The task is written last, with a release store: a reader that sees it sees the rest. The hash is the one the submit
 * computed to pick the shard; with it the owner finds a context's record, and tells one context from the next, without
 * reading the context object: a line a submitter or a task on another CPU last wrote or shared, which was the largest
 * cost of a visit over many contexts (docs/benchmarks.md, twenty-second set). Whoever first needs the next chunk links
 * it (a CAS on {@code next}; a loser drops its own).
 *
 * <h2>Passed chunks are cut off</h2>
 * An owner that claims its way into a chunk moves the owners' hint {@code consumerChunk} there (only ever forward, by
 * base), then links each chunk it walked past to itself ({@link #cut}). Left linked, a passed chunk that had been
 * promoted to the old generation while entries waited in it kept every later chunk, and every entry run since, alive
 * through young collections until an old-generation cycle: with 8 producers, G1 took more CPU than the producers
 * (docs/benchmarks.md, twenty-fifth and twenty-sixth sets). A walk that meets a cut chunk goes on from
 * {@code consumerChunk} ({@link #after}), which is never cut and lies at or before every index not yet claimed (an
 * owner moves it into a chunk only after claiming an entry there): so producers, the owner, a thief and a stop, whose
 * indexes are not claimed yet, land at or before them, and statistics, whose index may be old, skip ahead to its base.
 */
final class Shard extends ShardOwnerLine {
    /** Entries per chunk. */
    static final int CHUNK = 256;

    static final long CLOSED = Long.MIN_VALUE;
    static final long INDEX_MASK = Long.MAX_VALUE;

    static final int EPOCH_BITS = 14;
    static final long EPOCH_MASK = (1L << EPOCH_BITS) - 1;
    /** No owner: the shard is in the ready queue, or empty and unscheduled. */
    static final long FREE = 1L << EPOCH_BITS;
    /** Stopped by {@code shutdownNow} (terminal). */
    static final long STOPPED = 1L << (EPOCH_BITS + 1);
    static final int INDEX_SHIFT = 16;
    static final long ONE_INDEX = 1L << INDEX_SHIFT;
    static final long INDEX48_MASK = (1L << (64 - INDEX_SHIFT)) - 1;

    /** {@link #offer}: the entry is in; the shard was already scheduled. */
    static final int QUEUED = 0;
    /** {@link #offer}: the entry is in, and the caller scheduled the shard: it must queue it (once). */
    static final int SCHEDULE = 1;
    /** {@link #offer}: refused, the shard is closed; nothing was written. */
    static final int REFUSED = 2;

    /** {@link #claim}: the cursor holds the claimed entry. */
    static final int CLAIMED = 0;
    /** {@link #claim}: nothing to claim now. */
    static final int EMPTY = 1;
    /** {@link #claim}: the caller no longer owns the shard (a new owner, a thief or a stop moved the word). */
    static final int LOST = 2;

    static final VarHandle TAIL;
    static final VarHandle SCHEDULED;
    static final VarHandle PRODUCER_CHUNK;
    static final VarHandle WORD;
    static final VarHandle CONSUMER_CHUNK;
    static final VarHandle IN_TASK;
    static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(ShardProducerLine.class, "tail", long.class);
            SCHEDULED = l.findVarHandle(ShardProducerLine.class, "scheduled", int.class);
            PRODUCER_CHUNK = l.findVarHandle(ShardProducerLine.class, "producerChunk", Chunk.class);
            WORD = l.findVarHandle(ShardOwnerLine.class, "word", long.class);
            CONSUMER_CHUNK = l.findVarHandle(ShardOwnerLine.class, "consumerChunk", Chunk.class);
            IN_TASK = l.findVarHandle(ShardOwnerLine.class, "inTask", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** A run of {@link #CHUNK} entries: index {@code base} is entry 0. */
    static final class Chunk {
        final long base;
        final Object[] slots = new Object[2 * CHUNK];
        final long[] stamps = new long[CHUNK];
        final int[] hashes = new int[CHUNK];
        volatile Chunk next;

        Chunk(long base) {
            this.base = base;
        }

        long end() {
            return base + CHUNK;
        }

        /** The next chunk, linked by this call if no one has yet; this chunk itself if it has been cut. */
        Chunk nextOrLink() {
            Chunk n = next;
            if (n == null) {
                Chunk made = new Chunk(end());
                n = NEXT.compareAndExchange(this, (Chunk) null, made) instanceof Chunk won ? won : made;
            }
            return n;
        }

        /** Whether an owner has passed this chunk and cut it off (see Shard#cut). */
        boolean passed() {
            return next == this;
        }

        static final VarHandle NEXT;

        static {
            try {
                NEXT = MethodHandles.lookup().findVarHandle(Chunk.class, "next", Chunk.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    /**
     * What one owner keeps while it works a shard: its expected word, its full index and the chunk that holds the
     * entry it claimed last. One per worker (it is written by the owner only: a thief and a stale owner must never
     * share one).
     */
    static final class Cursor {
        Shard shard;
        long word;
        long index;
        Chunk chunk;
        /**
         * Slots of {@code chunk} below this index were cleared by this cursor (references let go), or were claimed
         * before it took the shard, by owners that clear their own.
         */
        long clearedTo;

        /**
         * The claimed context's {@code hashCode()}, as its submitter computed it. Read only when asked for: an owner
         * whose next entry is the same context object as the last needs no hash, and the hashes' line is one a
         * submitter right ahead of the owner is writing.
         */
        int claimedHash() {
            return chunk.hashes[claimedSlot()];
        }

        /**
         * The claimed entry's context and task, read from its slots (the claim's acquire read of the task made them
         * visible, and only the cursor that claimed a slot clears it, at the end of its visit). Not copied
         * into fields of the cursor: the cursor lives as long as its worker, and a reference stored from such an
         * object into another heap region makes G1's write barrier pay a StoreLoad fence (on one hot key the two
         * copies and the worker's running context cost the owner more than its claim CAS, docs/benchmarks.md,
         * twenty-third set).
         */
        Object claimedContext() {
            return chunk.slots[2 * claimedSlot()];
        }

        Runnable claimedTask() {
            return (Runnable) chunk.slots[2 * claimedSlot() + 1];
        }

        /** The claimed entry's place in {@code chunk}: the claim moved the index one past it, into that chunk. */
        private int claimedSlot() {
            return (int) (index - 1 - chunk.base);
        }

        /**
         * Ends the cursor's visit: it keeps no chunk. Chunks are linked forward, and an owner clears only the slots of
         * the chunk it ends in, so a chunk held here would keep every later chunk reachable until an owner passed it
         * and cut it off, and with them every entry other owners passed since: before chunks were cut, an idle cursor
         * beside a hot shard held every task the shard ran after it.
         */
        void leave() {
            shard = null;
            chunk = null;
        }
    }

    final int id;
    /**
     * The engine's table of diverted contexts of this shard (see {@link ShardOwner}): the owner's alone, handed from
     * owner to owner with the word, whose CAS orders one owner's table work before the next one's.
     */
    final HashMap<Object, Object> diverted = new HashMap<>();
    /**
     * The per-context figures of the contexts live in this shard (see {@link ShardRecord}): written by the owner only
     * (the word hands the table on as it does {@link #diverted}), read racily by statistics ({@link ShardRecords}).
     */
    final ShardRecords records = new ShardRecords();
    /** The contexts with an entry waiting here, for statistics (see {@link ShardCensus}). */
    final ShardCensus census = new ShardCensus();
    /**
     * Owner-only: the index at which an owner last found the shard empty. A record last started before it belongs to
     * an earlier life of its context (it had nothing waiting or running then), so its counts start again from zero.
     */
    long lastEmptyIndex;
    /** Owner-only: how many records the table may hold before the owner drops those of contexts no longer live. */
    int pruneAt = 64;
    /**
     * When the checker last found this shard's owner blocked: off its CPU inside a task (blocked, waiting or sleeping),
     * with entries waiting behind it, at every look for {@link ShardThief#BLOCKED_FOR_NANOS}; 0 if never. Written by
     * the checker only; read by the owner at the start of each visit and batch and after each move: for a while after
     * it, the owner diverts every context it claims into its lane (ShardOwner#divertsAll).
     */
    volatile long blockedSeenAt;

    Shard(int id) {
        this.id = id;
        Chunk first = new Chunk(0);
        producerChunk = first;
        consumerChunk = first;
        word = FREE;
    }

    static long indexBits(long word) {
        return word >>> INDEX_SHIFT;
    }

    static boolean stopped(long word) {
        return (word & STOPPED) != 0;
    }

    static boolean free(long word) {
        return (word & FREE) != 0;
    }

    /** The same index, the next epoch, owned (FREE cleared). */
    private static long owned(long word) {
        return (word & ~(EPOCH_MASK | FREE)) | ((word + 1) & EPOCH_MASK);
    }

    /**
     * The full index whose low 48 bits {@code word} holds, given a chunk at or before it: the distance from the
     * chunk's base is below 2<sup>48</sup> because chunk hints trail the index by a few chunks at most.
     */
    static long fullIndex(Chunk atOrBefore, long word) {
        return atOrBefore.base + ((indexBits(word) - atOrBefore.base) & INDEX48_MASK);
    }

    /**
     * The chunk that holds {@code index}, walking (and linking) from {@code from}, a chunk at or before it, for a
     * caller whose index is not claimed yet (a producer's, a stop's): a cut chunk on the way sends it to
     * {@code consumerChunk}, which is then at or before the index too.
     */
    Chunk chunkOf(Chunk from, long index) {
        Chunk c = from;
        while (index >= c.end()) {
            Chunk n = c.nextOrLink();
            c = n == c ? consumerChunk() : n;
        }
        return c;
    }

    /**
     * The chunk after {@code c} for a walk: its link, null if none yet, or, if {@code c} has been cut, the owners' hint
     * (see the class comment), whose base the caller must check against its index if that index may have been claimed.
     */
    Chunk after(Chunk c) {
        Chunk n = c.next;
        return n == c ? consumerChunk() : n;
    }

    /**
     * Moves the owners' hint to {@code c} unless it is already there or past it: only ever forward, so it is never a
     * chunk that has been cut (an owner robbed between its claim and this call would otherwise set it back).
     */
    private void advanceConsumerChunk(Chunk c) {
        for (;;) {
            Chunk h = (Chunk) CONSUMER_CHUNK.getAcquire(this);
            if (h.base >= c.base || CONSUMER_CHUNK.compareAndSet(this, h, c)) {
                return;
            }
        }
    }

    /**
     * Cuts off the chunks from {@code from} up to {@code to} (not included), which the calling owner has just walked
     * past, once the hint is at {@code to} or beyond: each is linked to itself, a release store after the hint's CAS,
     * so a walker that sees the cut sees the hint past it. Stops at a chunk already cut: a thief that took the shard
     * while this owner was between its claim and here walked the same chunks and cut them (and this owner's walk may
     * have jumped past them to the hint, so {@code to} is not always reached by links: the walk also stops at its
     * base, and never cuts a chunk at or past it, which would leave a walk from the hint nowhere to go).
     */
    private static void cut(Chunk from, Chunk to) {
        for (Chunk c = from; c.base < to.base; ) {
            Chunk n = c.next;
            if (n == c || n == null) {
                return;
            }
            Chunk.NEXT.setRelease(c, c);
            c = n;
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Producers
    // ---------------------------------------------------------------------------------------------------------

    /** {@link #offer(Object, int, Runnable, long)} with the context's own hash. */
    int offer(Object context, Runnable task, long stamp) {
        return offer(context, context.hashCode(), task, stamp);
    }

    /**
     * Appends an entry; {@code hash} is {@code context.hashCode()}. Returns {@link #QUEUED}, {@link #SCHEDULE} or
     * {@link #REFUSED}.
     */
    int offer(Object context, int hash, Runnable task, long stamp) {
        // The hint is read before the getAndAdd, so its base is at most our index: it is set to a chunk only after
        // some submit claimed an index in it, and our claim comes after that one.
        Chunk c = (Chunk) PRODUCER_CHUNK.getAcquire(this);
        long t = (long) TAIL.getAndAdd(this, 1L);
        if (t < 0) {
            return REFUSED;
        }
        if (t >= c.end()) {
            c = chunkOf(c, t); // t is not claimed: it has not been written
            if (c.base > ((Chunk) PRODUCER_CHUNK.getAcquire(this)).base) {
                // A hint only: a racing older store may set it back a chunk, which costs a later submit one step.
                PRODUCER_CHUNK.setRelease(this, c);
            }
        }
        int k = (int) (t - c.base);
        c.stamps[k] = stamp;
        c.hashes[k] = hash;
        c.slots[2 * k] = context;
        SLOT.setRelease(c.slots, 2 * k + 1, task); // publishes the context, stamp and hash with the task
        // Volatile read after the getAndAdd: the Dekker pair of release(Cursor) (see the class comment).
        if ((int) SCHEDULED.getVolatile(this) == 0 && SCHEDULED.compareAndSet(this, 0, 1)) {
            return SCHEDULE;
        }
        return QUEUED;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Owners
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Takes ownership of a FREE shard whose scheduling its caller holds (it polled the shard from the ready queue,
     * or its {@link #release} took the scheduling back). Returns false if the shard is stopped.
     *
     * <p>Only the holder of the scheduling moves a word out of FREE, and the scheduling is taken (a CAS of
     * {@code scheduled} from 0) only after the last owner set FREE, so the word is FREE here unless stopped.
     */
    boolean acquire(Cursor cur) {
        for (;;) {
            long w = (long) WORD.getVolatile(this);
            if (stopped(w)) {
                return false;
            }
            if (!free(w)) {
                throw new IllegalStateException("shard " + id + " acquired while owned: " + Long.toHexString(w));
            }
            if (takeOver(cur, w)) {
                return true;
            }
        }
    }

    /**
     * Takes the shard from the owner whose word is {@code w} (read by the caller, who judged that owner stuck), with
     * the scheduling that owner held. Fails if the word has moved since (the owner claimed on or gave the shard up,
     * someone else took it) or is FREE or STOPPED. The robbed owner may be anywhere between two claims, so what it
     * does there (its bookkeeping of the entry it claimed) can race the thief's: see {@link #stealInTask}.
     */
    boolean steal(Cursor cur, long w) {
        return !stopped(w) && !free(w) && takeOver(cur, w);
    }

    /**
     * The owner is done with what it does between a claim and that entry's task (its per-context bookkeeping) and is
     * about to run the task: it publishes the word it holds. A release store, the only cost per entry besides the
     * claim (a second atomic per entry would cost 3 ns, docs/benchmarks.md, nineteenth set). The owner must do no such
     * bookkeeping after the task and before its next claim.
     */
    void enterTask(Cursor cur) {
        IN_TASK.setRelease(this, cur.word);
    }

    /**
     * {@link #steal} from an owner that is in a task: only if the owner's last {@link #enterTask} published the word
     * the shard still holds. The acquire read of that mark makes the owner's bookkeeping before it visible to the
     * thief, and the CAS that takes the word proves the owner has not claimed since, so it will not do any more: its
     * next claim fails. A mark left by an earlier owner at the same index does not match (the epoch moved). Returns
     * false, changing nothing, if the owner is not in a task or the word moved.
     */
    boolean stealInTask(Cursor cur) {
        long mark = inTaskAcquire();
        long w = (long) WORD.getVolatile(this);
        return mark == w && steal(cur, w);
    }

    /**
     * The word the owner published when it last went into a task (acquire: what the owner wrote before, the running
     * context and owner included, is visible after it). A thief that prepares a steal reads it, then the word: equal,
     * the owner is in that task, and {@code steal(cur, mark)} takes the shard only if it still is.
     */
    long inTaskAcquire() {
        return (long) IN_TASK.getAcquire(this);
    }

    private boolean takeOver(Cursor cur, long w) {
        long mine = owned(w);
        if (!WORD.compareAndSet(this, w, mine)) {
            return false;
        }
        // The previous owner's hint may be older than its last chunk (it publishes it after the claim that moved
        // into a chunk); any chunk at or before the index will do.
        Chunk hint = (Chunk) CONSUMER_CHUNK.getAcquire(this);
        long index = fullIndex(hint, mine);
        cur.shard = this;
        cur.word = mine;
        cur.index = index;
        cur.chunk = hint;
        cur.clearedTo = index;
        return true;
    }

    /**
     * Claims the next entry for the owner {@code cur}: {@link #CLAIMED} (the entry is in {@code cur}),
     * {@link #EMPTY} (the owner should {@link #release}) or {@link #LOST} (the owner drops the shard and touches
     * nothing of it). A slot still empty below {@code tail} is a submit between its {@code getAndAdd} and its store:
     * waited for, never parked on (it holds nothing and finishes when it runs).
     */
    int claim(Cursor cur) {
        long i = cur.index;
        Chunk c = cur.chunk;
        while (i >= c.end()) {
            Chunk n = after(c);
            if (n == null) {
                if ((long) TAIL.getVolatile(this) <= i) { // a closed tail is negative: nothing more to claim
                    return EMPTY;
                }
                n = c.nextOrLink();
                if (n == c) {
                    continue; // cut meanwhile: after() goes on from the hint
                }
            }
            if (n.base > i) {
                return LOST; // the hint is past our index: others claimed it, so the word has moved
            }
            c = n;
        }
        int k = (int) (i - c.base);
        Object task = SLOT.getAcquire(c.slots, 2 * k + 1);
        if (task == null) {
            // A stale tail only sends the owner to release(), which reads it again after its StoreLoad. A closed tail
            // (negative) means nothing more to claim: a stop took every entry left (and moved the word), and a
            // quiescence check closed the shard only at its word's index. Past the close, the tail counts refused
            // submits, whose slots stay empty for good: masked, a closed tail sent the checker, which takes a quiet
            // shard to tidy it, into a wait for such a slot that never ended (the executor never terminated).
            if ((long) TAIL.getVolatile(this) <= i) {
                return EMPTY;
            }
            int waits = 0;
            while ((task = SLOT.getAcquire(c.slots, 2 * k + 1)) == null) {
                // A stopped shard's tail also counts the refused submits' increments, past the close, whose slots
                // stay empty for good: such a wait ends with the word.
                if ((long) WORD.getVolatile(this) != cur.word) {
                    return LOST;
                }
                waits = Waiting.pause(waits);
            }
        }
        long next = cur.word + ONE_INDEX; // the index bits wrap at 2^48 with the word
        if (!WORD.compareAndSet(this, cur.word, next)) {
            return LOST;
        }
        cur.word = next;
        cur.index = i + 1;
        if (c != cur.chunk) {
            // The chunks left behind are cut off but not cleared: clearing them would cost the owner two stores per
            // entry (an ownership request per line) for garbage, and a cut chunk holds only its own entries.
            Chunk passed = cur.chunk;
            cur.chunk = c;
            // The owner's own claims in c start at c.base, or at the index it took the shard at if that is in c: its
            // cursor may have started at an older chunk than that index's (the hint trails), and the entries of c
            // below that index are the previous owner's, whose last claim a robbed owner may still be reading.
            cur.clearedTo = Math.max(c.base, cur.clearedTo);
            // After the claim that moved into c: whoever reads it reads a word at or past c.base.
            advanceConsumerChunk(c);
            cut(passed, c);
        }
        return CLAIMED;
    }

    /**
     * Whether the entry at the owner's next index has been written: a look for an owner that lingers on an emptied
     * shard. It reads the slot, which its submitter writes once, and not {@code tail}, which every submit writes.
     */
    boolean nextWritten(Cursor cur) {
        long i = cur.index;
        Chunk c = cur.chunk;
        while (i >= c.end()) {
            c = after(c);
            if (c == null) {
                return false;
            }
            if (c.base > i) {
                return true; // robbed: the claim that follows finds the word moved
            }
        }
        return SLOT.getAcquire(c.slots, 2 * (int) (i - c.base) + 1) != null;
    }

    /**
     * The owner found the shard empty ({@link #claim} said {@link #EMPTY}): sets the word FREE (a CAS, which fails if
     * a thief or a stop took the shard), clears {@code scheduled}, then reads {@code tail} again. Returns true if an
     * entry came in meanwhile and the owner took the shard back (it goes on claiming); false if it gave the shard up
     * (the next submit schedules it again) or had lost it.
     *
     * <p>The word goes FREE before the scheduling is let go: an owner that lost the shard to a thief finds out here
     * and leaves the scheduling with the thief. (Were the flag cleared first, a stale owner could clear it under the
     * thief, take it back on the strength of its own stale index, then lose its next claim and walk away holding it:
     * a scheduled shard in no queue and with no owner, whose later entries no submit would queue.)
     */
    boolean release(Cursor cur) {
        return letGo(cur) == TAKEN_BACK;
    }

    /** {@link #letGo}: the owner gave the shard up (the next submit schedules it again). */
    static final int GAVE_UP = 0;
    /** {@link #letGo}: an entry came in meanwhile and the owner took the shard back. */
    static final int TAKEN_BACK = 1;

    /**
     * {@link #release}, telling the caller which way it went: {@link #GAVE_UP}, {@link #TAKEN_BACK}, or {@link #LOST}
     * (a thief or a stop had taken the shard: the engine's owner then looks for the lane a thief left it).
     */
    int letGo(Cursor cur) {
        long w = cur.word;
        if (!WORD.compareAndSet(this, w, w | FREE)) {
            return LOST;
        }
        clearBehind(cur);
        SCHEDULED.setVolatile(this, 0);
        // Volatile read after the volatile store: the other half of the Dekker pair with offer().
        // A closed tail (negative) never counts as an entry that came in (see claim).
        if ((long) TAIL.getVolatile(this) > cur.index && SCHEDULED.compareAndSet(this, 0, 1)) {
            return acquire(cur) ? TAKEN_BACK : LOST;
        }
        return GAVE_UP;
    }

    /**
     * The owner ends a visit with entries left (its batch is spent): sets the word FREE and keeps the scheduling, so
     * the caller must queue the shard again, and whoever polls it {@link #acquire}s it. Returns false if the owner had
     * lost the shard (then the caller must not queue it: the thief or the stop holds it).
     */
    boolean handBack(Cursor cur) {
        long w = cur.word;
        if (!WORD.compareAndSet(this, w, w | FREE)) {
            return false;
        }
        clearBehind(cur);
        return true;
    }

    /**
     * Lets go of the references in the slots this owner has claimed in its current chunk when a visit ends, so a shard
     * that goes quiet does not keep up to a chunk of finished tasks and their contexts reachable. Only slots below the
     * owner's index, which no producer writes and no reader reads again (readers start from the word's index), so
     * plain stores.
     */
    private void clearBehind(Cursor cur) {
        Chunk c = cur.chunk;
        long to = Math.min(cur.index, c.end());
        for (long j = cur.clearedTo; j < to; j++) {
            int k = (int) (j - c.base);
            c.slots[2 * k] = null;
            c.slots[2 * k + 1] = null;
        }
        cur.clearedTo = to;
    }

    // ---------------------------------------------------------------------------------------------------------
    // shutdownNow, statistics
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Stops the shard and closes it to submits; adds every entry never claimed, in index order, to {@code out}
     * (waiting for submits that claimed an index before the close to store it). Returns how many it added; 0 if the
     * shard was already stopped (its entries went to that stop's caller).
     */
    int stop(List<Runnable> out) {
        long w;
        do {
            w = (long) WORD.getVolatile(this);
            if (stopped(w)) {
                return 0;
            }
        } while (!WORD.compareAndSet(this, w, w | STOPPED));
        long end = (long) TAIL.getAndBitwiseOr(this, CLOSED) & INDEX_MASK;
        Chunk c = (Chunk) CONSUMER_CHUNK.getAcquire(this);
        long i = fullIndex(c, w);
        int n = 0;
        for (; i < end; i++) {
            c = chunkOf(c, i); // i is not claimed: the stop's word ended the claims before it
            int k = (int) (i - c.base);
            Object task;
            int waits = 0;
            while ((task = SLOT.getAcquire(c.slots, 2 * k + 1)) == null) {
                waits = Waiting.pause(waits);
            }
            out.add((Runnable) task);
            ShardRecord r = records.get(c.slots[2 * k], c.hashes[k]);
            if (r != null) {
                // A context with a record has a task running or run: its figures count what was returned, as a
                // drained lane's do. (One without never started one in this life, and is no longer live.)
                r.returned = r.returned + 1; // only this drain writes it
            }
            n++;
        }
        return n;
    }

    /**
     * Closes a shard that is quiet (no owner, not scheduled, nothing accepted and not claimed) to submits, for the
     * quiescence check after {@code shutdown()}: true if it did or the shard was closed already. The CAS of
     * {@code tail} from the very index the word holds fails if a submit's {@code getAndAdd} came in after the reads,
     * and every submit after the CAS is refused; the word is read first, so a {@code tail} read equal to its index
     * means every entry accepted by then was claimed, and FREE means its owner has ended the visit that ran it.
     */
    boolean closeIfQuiet() {
        Chunk hint = (Chunk) CONSUMER_CHUNK.getAcquire(this); // before the word: see claimIndex
        long w = (long) WORD.getVolatile(this);
        if (stopped(w)) {
            return true;
        }
        if (!free(w) || (int) SCHEDULED.getVolatile(this) != 0) {
            return false;
        }
        long t = (long) TAIL.getVolatile(this);
        if (t < 0) {
            return true;
        }
        return t == fullIndex(hint, w) && TAIL.compareAndSet(this, t, t | CLOSED);
    }

    /**
     * The context of the newest entry, or null if its submit has not written it yet (or the shard is empty or
     * closed). Racy, for the owner's fairness check: whether a context other than the one it keeps running waits.
     * The walk starts from the producers' chunk hint, read before {@code tail}, so its base is at most the newest
     * index: a step or two, however far the owner is behind (from the owner's chunk it was a step per chunk of
     * backlog, and with a million entries queued that walk was most of the owner's time).
     */
    Object newestContext() {
        Chunk c = (Chunk) PRODUCER_CHUNK.getAcquire(this);
        long t = (long) TAIL.getVolatile(this);
        if (t <= 0) {
            return null;
        }
        long last = t - 1;
        while (c != null && last >= c.end()) {
            c = after(c);
        }
        if (c == null || last < c.base) {
            return null;
        }
        return writtenContext(c, last);
    }

    /**
     * Statistics: entries accepted and not yet claimed. Read racily: the word first, then {@code tail}, so the figure
     * never counts a claimed entry twice, and may include a submit between its {@code getAndAdd} and its store.
     */
    long queued() {
        long index = claimIndex();
        long t = (long) TAIL.getVolatile(this);
        // Closed: by a stop, which took every entry left, or by a quiescence check, which closes only an empty shard
        // (and the tail of a closed shard counts refused submits too).
        return t < 0 ? 0 : Math.max(0, t - index);
    }

    /**
     * The full index of the next entry to claim, for readers that are not the owner. The chunk hint is read before
     * the word: an owner publishes a chunk after the claim that moved into it, so a word read after the hint is at or
     * past the hint's base, as {@link #fullIndex} needs. (Read the other way round, an owner that moved into the next
     * chunk between the two reads gave an index 2<sup>48</sup> too far: {@code queued()} and the walks then read an
     * empty shard for that call while entries waited.)
     */
    long claimIndex() {
        return claimIndex((Chunk) CONSUMER_CHUNK.getAcquire(this));
    }

    /** {@link #claimIndex()} from a chunk hint the caller read (with {@link #consumerChunk}) just before. */
    long claimIndex(Chunk hint) {
        return fullIndex(hint, (long) WORD.getVolatile(this));
    }

    long tailVolatile() {
        return (long) TAIL.getVolatile(this);
    }

    /**
     * The owners' chunk hint, where a reader's walk may start: at or before the index of any word read after it (see
     * {@link #claimIndex()}), not of one read before.
     */
    Chunk consumerChunk() {
        return (Chunk) CONSUMER_CHUNK.getAcquire(this);
    }

    /**
     * The context of the entry at {@code index} in chunk {@code c}, or null if its submitter has not written it yet
     * or an owner that claimed it has cleared it since. Racy, for statistics: the acquire read of the task makes the
     * context its submitter wrote before it visible.
     */
    static Object writtenContext(Chunk c, long index) {
        int k = (int) (index - c.base);
        return SLOT.getAcquire(c.slots, 2 * k + 1) == null ? null : c.slots[2 * k];
    }

    /** Receives the entries of a {@link #walkQueued}. */
    interface EntryVisitor {
        /** {@code hash}: {@code context.hashCode()}, as its submitter computed it. */
        void entry(Object context, int hash, long stamp);
    }

    /** Receives the entries of a {@link #walkQueuedWhile}, and says whether the walk goes on. */
    interface EntryPredicate {
        /** {@code hash}: {@code context.hashCode()}, as its submitter computed it. Returns false to stop the walk. */
        boolean entry(Object context, int hash, long stamp);
    }

    /**
     * Visits the entries accepted and not yet claimed, oldest first, for statistics. Racy: from the word's index as it
     * was read, so an entry claimed during the walk may still be visited; a slot not yet written by its submitter, or
     * cleared by an owner that claimed it, is skipped. Costs one step per waiting entry.
     */
    void walkQueued(EntryVisitor v) {
        walkQueuedWhile((context, hash, stamp) -> {
            v.entry(context, hash, stamp);
            return true;
        });
    }

    /** {@link #walkQueued}, stopping at the first entry for which {@code v} returns false. */
    void walkQueuedWhile(EntryPredicate v) {
        Chunk c = consumerChunk();
        long from = claimIndex(c);
        long t = (long) TAIL.getVolatile(this);
        if (t < 0) {
            return;
        }
        for (long i = from; i < t; i++) {
            while (i >= c.end()) {
                c = after(c);
                if (c == null) {
                    return;
                }
                i = Math.max(i, c.base); // past a cut chunk: what lies before the hint is claimed
            }
            Object context = writtenContext(c, i);
            if (context != null) {
                int k = (int) (i - c.base);
                if (!v.entry(context, c.hashes[k], c.stamps[k])) {
                    return;
                }
            }
        }
    }

    /** The stamp of the oldest entry not yet claimed, or {@link Lane#NO_WAITING} (racy, for statistics). */
    long oldestStamp() {
        Chunk c = consumerChunk();
        long i = claimIndex(c);
        long t = (long) TAIL.getVolatile(this);
        if (t < 0 || i >= t) {
            return Lane.NO_WAITING;
        }
        while (i >= c.end()) {
            c = after(c);
            if (c == null) {
                return Lane.NO_WAITING;
            }
            i = Math.max(i, c.base); // past a cut chunk: what lies before the hint is claimed
        }
        if (i >= t) {
            return Lane.NO_WAITING;
        }
        int k = (int) (i - c.base);
        return SLOT.getAcquire(c.slots, 2 * k + 1) == null ? Lane.NO_WAITING : c.stamps[k];
    }

    /** Whether the shard is closed to submits (stopped, or closed quiet after shutdown). */
    boolean closed() {
        return (long) TAIL.getVolatile(this) < 0;
    }

    /**
     * Takes the scheduling of a shard nobody has scheduled, as a submit that finds the flag clear does: the caller
     * may then {@link #acquire} it (the checker, to tidy a quiet shard's records as its owner).
     */
    boolean takeScheduling() {
        return (int) SCHEDULED.getVolatile(this) == 0 && SCHEDULED.compareAndSet(this, 0, 1);
    }

    /** The owner word as it is now, for a thief's {@link #steal}. */
    long wordVolatile() {
        return (long) WORD.getVolatile(this);
    }

    boolean scheduledVolatile() {
        return (int) SCHEDULED.getVolatile(this) != 0;
    }
}

/** Padding before the producers' line: nothing of the object header's neighbours shares it. */
abstract class ShardPad0 {
    long p00, p01, p02, p03, p04, p05, p06, p07;
}

/** Written by producers per submit ({@code tail}); read by them ({@code scheduled}, the chunk hint). */
abstract class ShardProducerLine extends ShardPad0 {
    long tail;
    int scheduled;
    Shard.Chunk producerChunk;
}

abstract class ShardPad1 extends ShardProducerLine {
    long p10, p11, p12, p13, p14, p15, p16, p17;
}

/**
 * Written by owners per claim ({@code word}) and per chunk ({@code consumerChunk}); producers read it only when a walk
 * meets a cut chunk.
 */
abstract class ShardOwnerLine extends ShardPad1 {
    long word;
    /** The word its owner held when it last went into a task ({@link Shard#enterTask}). */
    long inTask;
    Shard.Chunk consumerChunk;
    /**
     * The engine's owner, written with a plain store before {@link Shard#enterTask}'s release store publishes it (and
     * the context it runs, {@code Worker#shardContext}) to a thief (see ShardOwner). A thief acts on it only for a word
     * it then takes by CAS.
     */
    Worker runningOwner;
    long p20, p21, p22, p23, p24;
}
