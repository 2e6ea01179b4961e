package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The sequential lane of one context: a multi-producer, single-consumer queue of array chunks whose producer index
 * is also the lane's state.
 *
 * <pre>
 *   state = seq &lt;&lt; 3 | mode       seq: tasks accepted so far (the last claimed slot, 1-based)
 *   IDLE      nothing queued or running (new, or emptied within the grace); the next submit activates it
 *   ACTIVE    owned by exactly one thread (activating submitter, ready queue, a worker, or the checker)
 *   GROWING   ACTIVE, and the submitter that claimed the first slot of a new chunk is linking it
 *   DEAD      released (terminal): from IDLE, or from ACTIVE with nothing queued by the checker; no longer mapped
 *   CLOSED    closed by shutdown (terminal); submits are rejected
 * </pre>
 *
 * A submit is one CAS on {@code state}: it claims slot {@code seq + 1} and learns whether it activated the lane, so the
 * "enqueue, then decide whether to schedule" race of a separate flag cannot happen. It then writes its task into the
 * slot. The consumer reads slots in order and needs no atomic instruction per task, except the hand-shake with
 * {@code shutdownNow} (see {@link Worker#beginTake}). A slot is {@code null} (claimed or not, not written yet, or
 * cleared by the drain of {@code shutdownNow} once the lane is CLOSED) or a task; the consumer writes nothing into
 * the slots. It writes the lane's head once per batch, and its progress per task into its own hand-shake word
 * ({@link Worker#endTake}), a line no producer touches: so a drain or a statistics read that starts from a head a batch
 * old takes the owner's word for how far it has gone (see {@link #progress}).
 *
 * <p>Why chunks: a linked node per task cost the producer a 40-byte allocation and the consumer a cache miss per
 * task (the first touch of a node the producer wrote). Slots are read in order, 16 references to a cache line, and a
 * chunk is made once per {@code MAX_CHUNK} tasks. The first chunk of a lane is small, since most lanes of a
 * many-context load live for a few tasks; later ones double up to {@code MAX_CHUNK}.
 *
 * <p>No ABA: {@code seq} only grows, every activation increments it, and the owner goes idle with a CAS from
 * (seq, ACTIVE) to (seq, IDLE): a submitter that read IDLE in an earlier idle episode cannot win its CAS in a later
 * one, and an owner cannot go idle over a slot claimed after it looked.
 */
final class SequentialLane extends Lane {

    /** A run of slots: seq {@code base} is {@code tasks[0]}. */
    static final class Chunk {
        final long base;
        final Object[] tasks;       // null, or a task (released by its submitter); never written by the consumer,
                                    // cleared by the drain of shutdownNow (see closeAndDrain)
        final long[] stamps;        // Engine#stamp of each task, written before the task's release store
        /**
         * Linked by the submitter that claimed slot {@code base + tasks.length}, while GROWING; once the owner has
         * passed this chunk and moved the lane's {@code chunk} beyond it, linked to itself (see SequentialLane#head).
         */
        volatile Chunk next;

        Chunk(long base, int size) {
            this.base = base;
            this.tasks = new Object[size];
            this.stamps = new long[size];
        }

        long end() {
            return base + tasks.length;
        }

        /** True once the owner has passed this chunk and cut it off (see SequentialLane#head). */
        boolean passed() {
            return next == this;
        }

        private static final VarHandle NEXT;

        static {
            try {
                NEXT = MethodHandles.lookup().findVarHandle(Chunk.class, "next", Chunk.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    /**
     * Stands for the chunks of a released lane: a handle keeps its last lane (DEAD) for as long as it lives, and the
     * chunks that lane held would be dead weight there. Empty, so every walk ends at once.
     */
    private static final Chunk NONE = new Chunk(1, 0);

    static final int ACTIVE = 0;
    static final int IDLE = 1;
    static final int GROWING = 2;
    static final int DEAD = 3;
    static final int CLOSED = 4;
    private static final int MODE_BITS = 3;
    private static final long MODE_MASK = (1 << MODE_BITS) - 1;

    static final int FIRST_CHUNK = 4;
    static final int MAX_CHUNK = 64;

    /**
     * How many tasks a worker touches ahead of the one it takes (see touchAhead): 2 and 4 left more of the misses
     * waiting one by one, 16 read the same as 8.
     */
    static final int TOUCH_AHEAD = 8;

    /**
     * An emptied lane is sent round the ready queue once more only if less than this passed, by the coarse clock,
     * between its last queueing and its emptying (the trip round the queue and the visit that emptied it): its next
     * trip, empty and mapped, then most likely ends within a few milliseconds too. The coarse clock moves in steps
     * of 1 ms while workers tick it and of up to 4 ms when only the checker does, so a short trip across a step may
     * read as long; that only makes the lane go idle, the old way, at the cost of an activation. Not tied to the idle
     * grace: a lane kept going round stays mapped, and this bound was measured at 2 ms.
     */
    static final long ROUND_LIMIT_NANOS = 2_000_000L;

    /**
     * A lingering worker looks at the lane's next slot once per this many waits (a power of two). Each look takes the
     * slot's line from the producer's core, which is filling it. A worker that has caught up with one hot context finds
     * a task or two per look, so its looks come about once per task, and its producer's appends then cost two to three
     * times their CPU; the slower producer lets the worker catch up more often, so a run that falls into this stays
     * there. Looking per wait against every 8 waits: a median 32 against 37 M tasks/s (8 JVMs each, an AMD host). Every
     * 8 against every 64, beside the other peers: 12.5 against 24.7, the producer at 78 against 39 ns a task (4 JVMs
     * each, an Intel host; docs/hand-off-experiments.md, fifty-third set), as the worker read the slot ten times less.
     */
    static final int LINGER_LOOK = 64;

    /**
     * Looks a worker may spend on an emptied lane for its next task while nothing else is queued: 384 waits at
     * {@link #LINGER_LOOK}. A wait is a spin hint (one in {@code Waiting.YIELD_EVERY} a yield), whose length depends on
     * the CPU, so a linger lasts from a few µs to a few tens of µs.
     */
    static final int LINGER_LOOKS = 6;

    private static final VarHandle STATE;
    private static final VarHandle TAKEN_SEQ;
    private static final VarHandle CHUNK;
    private static final VarHandle HEAD_SEEN;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(SequentialLane.class, "state", long.class);
            TAKEN_SEQ = l.findVarHandle(SequentialLane.class, "taken", long.class);
            CHUNK = l.findVarHandle(SequentialLane.class, "chunk", Chunk.class);
            HEAD_SEEN = l.findVarHandle(SequentialLane.class, "headSeen", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static long seq(long state) {
        return state >>> MODE_BITS;
    }

    static int mode(long state) {
        return (int) (state & MODE_MASK);
    }

    private static long state(long seq, int mode) {
        return seq << MODE_BITS | mode;
    }

    private volatile long state;
    /**
     * The chunk the next claim goes into (or, when the next claim is its end, the last one). Written only by a
     * submitter in GROWING, before the release store that ends it (and, to NONE, once the lane is DEAD or CLOSED);
     * read by submitters after their volatile read of {@code state}. A submitter whose CAS from that state succeeds
     * therefore used the chunk that state belongs to: the chunk changes only with the state.
     */
    private Chunk producerChunk;
    /**
     * Consumer-owned: the last seq taken and the chunk holding slot {@code taken + 1} (or ending at it), as of the
     * owner's last batch boundary. What the owner took since is in its hand-shake word ({@link Worker#takenInAcquire}).
     *
     * <p>Why not per task: the fields share a cache line with {@code state}, which every submit CASes; a store per
     * task moved that line between the producer's core and the worker's twice per task. Written once per batch (on
     * MORE or ROUND, on giving the lane up, and on the way out of a failure). With a {@code maxQueuedPerContext}
     * limit the owner writes {@code taken} per task again: submitters count the waiting tasks from it.
     *
     * <p>Who reads them: the next owner, which receives the lane through the ready queue (or the activating
     * submitter's CAS) after the previous owner's last write; {@code shutdownNow} and statistics with the workers'
     * words (see progress), racily, in either order, which a chunk's base makes safe: the consumer moves
     * {@code chunk} on only after taking every slot before its base. Only an owner writes {@code chunk} (and a
     * release, to NONE); the drain of {@code shutdownNow} writes only {@code taken}.
     */
    private long taken;
    private Chunk chunk;
    /**
     * Submitters' copy of {@code taken}, as last read: a bounded lane's submit counts from it and reads the worker's
     * {@code taken} only when that count says the lane is full. Never ahead of the real one, so it can only
     * overstate the count. Opaque: a hint shared by submitters.
     */
    @SuppressWarnings("unused") // accessed through HEAD_SEEN
    private long headSeen;
    /**
     * Tasks {@code shutdownNow} took back from this lane (written once, after the CAS that closed it): a closed lane
     * counts every slot up to its last seq as gone, and statistics must not count these as run. Between that CAS and
     * this write a statistics read counts them.
     */
    private volatile int drained;

    SequentialLane(Engine engine, Object context) {
        super(engine, context);
        Chunk first = new Chunk(1, FIRST_CHUNK);
        chunk = first;
        producerChunk = first;
        state = state(0, IDLE);
    }

    @Override
    boolean coalescing() {
        return false;
    }

    @Override
    int offer(Runnable task, int limit) {
        long stamp = engine.stamp();
        Chunk grown = null; // made before the CAS that claims a chunk's first slot: nothing may fail in GROWING
        int waits = 0;
        for (;;) {
            long s = state;
            int mode = mode(s);
            if (mode == DEAD) {
                return RELEASED;
            }
            if (mode == CLOSED) {
                return CLOSED_TO_SUBMITS;
            }
            if (mode == GROWING) {
                // Another submitter claimed the first slot past the chunk and is linking the next one: two stores.
                waits = Waiting.pause(waits);
                continue;
            }
            long seq = seq(s);
            // Exact against s: the CAS below succeeds only if s is still the state, and taken only moves on.
            boolean over = limit != 0 && mode == ACTIVE && holdsAtLeast(seq, Math.abs(limit));
            if (over && limit > 0) {
                return FULL;
            }
            Chunk c = producerChunk; // after the volatile read of s: the chunk of s, if the CAS succeeds
            long next = seq + 1;
            if (next < c.end()) {
                if (STATE.compareAndSet(this, s, state(next, ACTIVE))) {
                    int i = (int) (next - c.base);
                    c.stamps[i] = stamp;
                    SLOT.setRelease(c.tasks, i, task); // the consumer's acquire read sees the stamp and the task
                    return mode == IDLE ? ACTIVATED : over ? ACCEPTED_OVER : ACCEPTED;
                }
                continue;
            }
            if (grown == null || grown.base != next) {
                grown = new Chunk(next, Math.max(FIRST_CHUNK, Math.min(MAX_CHUNK, c.tasks.length * 2)));
            }
            grown.stamps[0] = stamp;
            // Published by the volatile store of c.next below; a release store all the same, as for any slot: a
            // statistics reader that reaches this chunk through the owner's plain head reads the stamp after it.
            SLOT.setRelease(grown.tasks, 0, task);
            if (STATE.compareAndSet(this, s, state(next, GROWING))) {
                producerChunk = grown;
                c.next = grown;                       // volatile: the consumer may be waiting for it
                STATE.setRelease(this, state(next, ACTIVE)); // only GROWING's claimer changes it: a store will do
                return mode == IDLE ? ACTIVATED : over ? ACCEPTED_OVER : ACCEPTED;
            }
            grown.tasks[0] = null;
        }
    }

    /**
     * Whether {@code limit} or more tasks wait now, for a bounded submit to look before it takes a place in the
     * executor: a place taken and given back would show its refused task in {@code submitted()} and {@code queued()}
     * for a moment. True is exact at the read of the state (see {@link #holdsAtLeast}); false may be stale, and the
     * offer then decides.
     */
    boolean full(int limit) {
        long s = state;
        return mode(s) == ACTIVE && holdsAtLeast(seq(s), limit);
    }

    /**
     * Whether {@code limit} or more of the tasks up to {@code seq} have not been taken. The submitters' copy of
     * {@code taken} may be stale (it only moves on, so it can only overstate the count): when it says full, the
     * worker's own is read and remembered. Read after {@code seq}, {@code taken} is at least what it was then, so
     * true means the lane held that many waiting tasks when {@code seq} was read.
     */
    private boolean holdsAtLeast(long seq, int limit) {
        if (seq - (long) HEAD_SEEN.getOpaque(this) < limit) {
            return false;
        }
        long headSeq = (long) TAKEN_SEQ.getAcquire(this);
        HEAD_SEEN.setOpaque(this, headSeq);
        return seq - headSeq >= limit;
    }

    @Override
    int runBatch(Worker worker, int budget) {
        Chunk c = chunk;
        long h = takenFrom(c); // exact as the last owner left it, except after shutdownNow (see takenFrom)
        try {
            return runBatch(worker, budget, c, h);
        } catch (Throwable outsideAnyTask) {
            // Not a task's failure (runTask keeps those); the engine failing around tasks (an OutOfMemoryError, say).
            // We still own the lane (nothing that can throw follows the CAS that gives it up), and the caller hands
            // it on: the next owner must start after the last slot taken, which this worker's word holds. The chunk
            // is the last one written (this batch's start, or where it went idle and took the lane back), which may
            // stay behind that count: every walk follows the links from it (see takenFrom).
            head(chunk, Math.max(h, worker.takenInAcquire(this)));
            throw outsideAnyTask;
        }
    }

    private int runBatch(Worker worker, int budget, Chunk c, long h) {
        int ran = 0;
        int waits = 0;
        int look = engine.settings.lingerLook; // read once a batch: the model checks set a shorter linger
        int lookMask = look - 1;
        int linger = LINGER_LOOKS * look;
        // Touch the tasks ahead only while other work waits: then other contexts' tasks were most likely allocated
        // between this lane's, which is when the touch pays (see touchAhead). Alone, a lane's tasks lie in a row.
        long touched = engine.readyQueue.isEmpty() ? Long.MAX_VALUE : h;
        for (;;) {
            long i = h + 1;
            Object slot = null;
            if (i < c.end()) {
                if (i > touched) {
                    touched = touchAhead(worker, c, i, i + (budget - ran));
                }
                slot = SLOT.getAcquire(c.tasks, (int) (i - c.base));
            } else {
                Chunk n = c.next;
                if (n != null) {
                    c = n; // everything before n.base is taken: the old chunk is garbage once chunk moves on
                    continue;
                }
            }
            if (slot == null) {
                if (waits < linger && !worker.stopping()
                        && ((waits & (Waiting.YIELD_EVERY - 1)) != 0 || engine.readyQueue.isEmpty())) {
                    // Nothing to take yet, and nothing else waits: a worker with nothing to do would spin anyway, so
                    // spin here, on the lane. A hot context's next task then just appends to an active lane, with no
                    // activation, no trip through the ready queue and no wake-up. The spin reads the slot (or the
                    // chunk's link), which its submitter writes once, and not the state, which every submit CASes: a
                    // read of the state per spin took its line from the producer each time, and a worker that had
                    // caught up with one hot context cost that producer a miss per task. Whether the lane is empty or
                    // a submitter is between its claim and its store makes no difference to waiting; the state is read
                    // once the linger is over. The ready queue is looked at only at a look of the slot that falls
                    // on a yield (every look in production), not per spin: its head is a line every worker and
                    // submitter writes (with 8 producers on 8 contexts, half the workers' samples were in that look).
                    if (waits == 0) {
                        if (!worker.pool.policy.lingerPays(worker)) {
                            waits = linger; // parked workers serve better now: give the lane up at once
                            continue;
                        }
                        worker.spinMark = System.nanoTime();
                    }
                    // The slot is looked at once per lingerLook waits, not per wait: the submitter's stores go to
                    // that line, and each look takes it back from the producer's core. Between looks the producer
                    // fills the rest of the line undisturbed, and the worker then runs those tasks in a row.
                    do {
                        waits = Waiting.pauseUnlessPreempted(waits, worker);
                    } while (waits != Waiting.PREEMPTED && (waits & lookMask) != 0 && waits < linger);
                    if (waits != Waiting.PREEMPTED) {
                        continue;
                    }
                    waits = linger; // the CPU is wanted elsewhere: give the lane up now
                    continue; // one more look at the slot before the state
                }
                long s = state;
                int mode = mode(s);
                boolean empty = mode == ACTIVE && seq(s) == h;
                if (empty && ran > 0 && !worker.stopping() && !engine.readyQueue.isEmpty()
                        && engine.stamp() - queuedAt < ROUND_LIMIT_NANOS) {
                    // Empty, and other work waits: keep the lane active and send it round the ready queue once
                    // more, as after a full batch, instead of making it idle. Its next tasks are then plain appends
                    // for their submitters; made idle here, the next one would pay an activation (a ready-queue
                    // offer and a wake-up check). Over many contexts at full load the lane has usually been given
                    // more by the time it comes round; if not, that visit runs nothing (ran == 0), and makes it
                    // idle: a lane goes round empty at most once per visit that ran something.
                    // Only while a trip round the queue is short (see ROUND_LIMIT_NANOS): an empty lane stays
                    // mapped, and counts as live, until it comes round, and behind a backlog of 300,000 lanes that
                    // was up to half a second (SPEC point 4 allows a few milliseconds).
                    head(c, h);
                    return ROUND;
                }
                if (empty) {
                    // Give up ownership: a submitter racing with us either wins its CAS first (then ours fails and
                    // we wait for its slot) or finds IDLE and activates the lane itself, as its owner. The head is
                    // written for the next owner before the CAS that publishes it, inside a take, so shutdownNow
                    // never reads it half-written.
                    if (!worker.beginTake()) {
                        head(c, h);
                        return DONE;
                    }
                    head(c, h);
                    idleSince = worker.clock;
                    boolean idled = STATE.compareAndSet(this, s, state(h, IDLE));
                    worker.endTake(this, h);
                    if (idled) {
                        return IDLED;
                    }
                    continue;
                }
                if (mode == CLOSED || worker.stopping()) {
                    head(c, h);
                    return DONE; // shutdownNow owns what is left
                }
                // A submitter has claimed the slot but not yet written it (or is linking the next chunk): it is
                // between two instructions.
                waits = Waiting.pause(waits);
                continue;
            }
            if (ran == budget) {
                head(c, h); // the batch boundary: the next owner starts here (see taken)
                return MORE;
            }
            if (!worker.beginTake()) {
                head(c, h);
                return DONE; // shutdownNow: the rest of the lane is returned, not run
            }
            if (worker.engine.laneHeadPerTask) { // not a field of the lane: a read of its line costs the miss saved
                TAKEN_SEQ.setRelease(this, i); // bounded submitters count from it (a plain store on x86)
            }
            worker.endTake(this, i); // the progress goes to the worker's line, not to the slot's (the producers')
            worker.runTask((Runnable) slot);
            h = i;
            ran++;
            waits = 0;
        }
    }

    /**
     * Loads the class word of each task written in slots {@code from} to {@code from + TOUCH_AHEAD - 1} (not past
     * {@code until}, the end of the batch, or the chunk), and returns the last slot so touched ({@code from - 1} if
     * none).
     *
     * <p>Why: a context's tasks are run in a row, but when many contexts are busy its producer allocated them between
     * other contexts' tasks, so each sits on a line of its own that no prefetcher predicts, most often no longer in
     * a near cache. Touched one by one, at the run, each such miss waits alone: the take's fence comes between one
     * task and the next. Touched here, in a loop with no fence, the misses of the next tasks overlap. Measured (the
     * twenty-fifth set of docs/hand-off-experiments.md): one worker draining a held backlog of 2,000,000 tasks, each
     * allocated at its submit, over 1,024 contexts, spent 110 to 170 ns a task without, 70 to 100 with; SOFAJRaft,
     * which runs tasks in the order they were allocated, 9. The slots are read plainly: a slot read as not yet written
     * only ends the touch early, and reading a task's class word is safe however the reference was published.
     */
    static long touchAhead(Worker worker, Chunk c, long from, long until) {
        Object[] tasks = c.tasks;
        long end = Math.min(Math.min(c.end(), until), from + TOUCH_AHEAD);
        int plain = 0;
        long i = from;
        for (; i < end; i++) {
            Object task = tasks[(int) (i - c.base)];
            if (task == null) {
                break;
            }
            if (task.getClass() == PlainTask.class) { // the load of the class word is the point
                plain++;
            }
        }
        worker.touchSink += plain; // a use of the loads, so the compiler keeps them
        return i - 1;
    }

    /**
     * Writes the head, as the lane's owner, and cuts off the chunks it has passed since the last head: each is linked
     * to itself. {@code taken} is opaque, not plain: the drain and statistics may read it while it is written (see
     * closeAndDrain), and a plain {@code long} store may tear on a 32-bit JVM.
     *
     * <p>Why cut them off: a passed chunk is garbage, but one that was promoted to the old generation while its lane
     * held a backlog is only found to be so by an old-generation cycle. Until then its link keeps the next chunk alive
     * through every young collection, that one the next, and so on: every chunk and task the lane has had since, copied
     * by each young collection until it too is promoted (measured on chains of chunks: on G1 most of the young
     * generation survived each collection, twenty-fifth set of docs/hand-off-experiments.md). Linked to itself, a
     * passed chunk holds at most its own slots.
     *
     * <p>Who meets a cut chunk: a drain or a statistics read that started from {@code chunk} before this store moved
     * it (see {@link #successor}). Never an owner: it starts from {@code chunk}, which is only ever written here, by
     * the owner, and by a release to NONE, and every chunk from it on is linked. The release store of each self-link
     * comes after the store of {@code chunk}: a reader that sees the self-link sees the new {@code chunk}. The walk
     * cuts only chunks before {@code c} (by base), and stops at a link not yet made or already cut: it never cuts a
     * chunk the owner has not passed, nor the shared NONE of a released lane.
     */
    private void head(Chunk c, long h) {
        Chunk from = chunk;
        chunk = c;
        TAKEN_SEQ.setOpaque(this, h);
        while (from.base < c.base) {
            Chunk n = from.next;
            if (n == null || n == from) {
                break;
            }
            Chunk.NEXT.setRelease(from, from);
            from = n;
        }
    }

    /**
     * The chunk after {@code c} for a reader that is not the owner: its link, or, if the owner has cut {@code c} off
     * (see head), the lane's current {@code chunk}, which the owner moved past {@code c} before cutting it, after
     * taking every slot before its base. Null if nothing is linked yet.
     */
    private Chunk successor(Chunk c) {
        Chunk n = c.next;
        return n == c ? (Chunk) CHUNK.getAcquire(this) : n;
    }

    /**
     * Where a walk of the head starts: {@code taken}, or just before {@code c}'s first slot if that is later. The
     * two fields can come from two different writers: after {@code shutdownNow} its drain writes the count while the
     * owner of a batch that ran out of budget (or saw the stop) may be writing the head too, outside any take (when
     * the drain wrote the chunk as well, the stress run found a batch indexing before its chunk's first slot), and an
     * owner leaving a batch on a failure writes its first chunk with its last count. Each is a sound start: every
     * slot before a chunk's base is taken, and so is every slot up to {@code taken}; a {@code taken} past {@code c}
     * is walked to by following the links, which are whole from the owner's chunk on (see head).
     */
    private long takenFrom(Chunk c) {
        return Math.max((long) TAKEN_SEQ.getOpaque(this), c.base - 1);
    }

    @Override
    boolean closeIfIdle() {
        for (;;) {
            long s = state;
            int mode = mode(s);
            if (mode == DEAD || mode == CLOSED) {
                return true;
            }
            if (mode != IDLE) {
                return false;
            }
            if (STATE.compareAndSet(this, s, state(seq(s), CLOSED))) {
                dropChunks();
                return true;
            }
        }
    }

    /**
     * After the CAS that made this lane DEAD, or CLOSED while idle: its chunks hold only tasks that ran, and a lane
     * handle keeps its last lane for the executor's lifetime, so they would keep those tasks, and what they capture,
     * reachable. Nothing reads a finished lane's chunks: a submit reads the state first, and statistics walk only an
     * active lane (a walk of NONE ends at taken, which the owner wrote before the idle CAS). A racing submit that
     * still read the old state may use NONE to prepare its claim; its CAS then fails.
     */
    private void dropChunks() {
        producerChunk = NONE;
        chunk = NONE;
    }

    @Override
    boolean releaseIfIdle() {
        long s = state;
        if (mode(s) == IDLE && STATE.compareAndSet(this, s, state(seq(s), DEAD))) {
            dropChunks();
            return true;
        }
        return false;
    }

    @Override
    boolean isIdle() {
        return mode(state) == IDLE;
    }

    @Override
    boolean queuedNothing() {
        return activeAndEmpty(state);
    }

    /** Active, and every slot claimed up to {@code s} taken: nothing queued. */
    private boolean activeAndEmpty(long s) {
        return mode(s) == ACTIVE && seq(s) == (long) TAKEN_SEQ.getOpaque(this);
    }

    /**
     * The caller took the lane out of the ready queue, where its last owner had put it after writing the head (at a
     * MORE or a ROUND, see runBatch): {@code taken} is exact, and nothing runs. If no slot was claimed since, nothing
     * is queued, and the lane goes straight to DEAD, as an idle one would at the end of its grace. A submitter that
     * read ACTIVE fails its CAS on DEAD and looks the context up again; a shutdownNow that closed it first wins, and
     * we do nothing. No take hand-shake: nothing is taken, and the head is not written.
     */
    @Override
    boolean releaseIfEmpty() {
        long s = state;
        if (!activeAndEmpty(s)) {
            return false;
        }
        if (STATE.compareAndSet(this, s, state(seq(s), DEAD))) {
            dropChunks();
            return true;
        }
        return false;
    }

    @Override
    boolean isActive() {
        return active(mode(state));
    }

    @Override
    boolean isFinished() {
        int mode = mode(state);
        return mode == DEAD || mode == CLOSED;
    }

    @Override
    boolean isReleased() {
        return mode(state) == DEAD;
    }

    private static boolean active(int mode) {
        return mode == ACTIVE || mode == GROWING;
    }

    @Override
    int closeAndDrain(List<Runnable> out) {
        long s;
        int waits = 0;
        for (;;) {
            s = state;
            int mode = mode(s);
            if (mode == DEAD || mode == CLOSED) {
                return 0;
            }
            if (mode == GROWING) {
                waits = Waiting.pause(waits); // its claimer is two stores from ACTIVE; then every chunk is linked
                continue;
            }
            if (STATE.compareAndSet(this, s, state(seq(s), CLOSED))) {
                break;
            }
        }
        if (mode(s) == IDLE) {
            dropChunks();
            return 0;
        }
        // Every slot up to seq(s) was claimed; a submitter may still be about to write its own, so wait for it. The
        // head may be a batch behind, and the owner may be writing it right now, outside any take (see takenFrom):
        // progress adds what the owner's word says it took since, exact now that no take is in progress (see
        // Worker#awaitNotTaking). Every slot after that holds a task that never started, or will in a moment.
        long last = seq(s);
        int moved = 0;
        Chunk c = (Chunk) CHUNK.getAcquire(this);
        long h = progress(c);
        waits = 0;
        while (h < last) {
            long i = h + 1;
            if (i >= c.end()) {
                // Linked: no claim is GROWING any more. Or cut off by an owner that saw the stop only after this walk
                // started, and moved on: its chunk then starts at or before i, since h is exact (see progress).
                c = successor(c);
                continue;
            }
            Object slot = SLOT.getAcquire(c.tasks, (int) (i - c.base));
            if (slot == null) {
                waits = Waiting.pause(waits);
                continue;
            }
            out.add((Runnable) slot);
            // Cleared, so a lane its worker or a handle still holds does not keep what was returned: the task is the
            // caller's now. The owner, if it reads the slot after this store, finds it empty, then the lane CLOSED.
            SLOT.setRelease(c.tasks, (int) (i - c.base), null);
            moved++;
            h = i;
            waits = 0;
        }
        drained = moved;
        // The count only: the chunk is the owner's to write (see head), and the owner may still be writing it, on
        // its way out of a batch; a walk from its chunk to this count follows the links (see takenFrom).
        TAKEN_SEQ.setOpaque(this, h);
        return moved;
    }

    @Override
    long submittedCount() {
        return seq(state); // exact in every mode: DEAD and CLOSED keep the count
    }

    /**
     * The last seq taken: the head or the chunk's base (see takenFrom), or what a worker's word says it took from this
     * lane since (see Worker#takenInAcquire), whichever is furthest; each is a point the lane has passed. For
     * {@code shutdownNow}, once no take is in progress, exact: the last take of this lane left its slot in its
     * worker's word, and that worker either still counts in this lane or wrote the head before it left it (see
     * Worker#leaveLane). For statistics, racy, and a moment old.
     */
    private long progress(Chunk c) {
        long h = -1;
        for (Worker w : engine.pool.workers()) {
            h = Math.max(h, w.takenInAcquire(this));
        }
        // The head after the words: a worker that gave this lane up wrote the head before it cleared its word, and
        // our acquire read of the cleared word (or lane) orders that write before this read.
        return Math.max(h, takenFrom(c));
    }

    /**
     * Statistics: the stamp of the first task waiting in an active lane, or {@link #NO_WAITING} if none is (or its
     * submitter is between its claim and its store). From racy reads (see progress): a moment old.
     */
    private long firstWaitingStamp(long seq) {
        Chunk c = (Chunk) CHUNK.getAcquire(this);
        long i = progress(c) + 1;
        if (i > seq) {
            return NO_WAITING;
        }
        for (;;) {
            if (i < c.end()) {
                int k = (int) (i - c.base);
                return SLOT.getAcquire(c.tasks, k) == null ? NO_WAITING : c.stamps[k];
            }
            c = successor(c);
            if (c == null) {
                return NO_WAITING;
            }
            i = Math.max(i, c.base); // a chunk reached past a cut one: every slot before its base is taken
        }
    }

    /**
     * Statistics: the last seq taken. An idle, released or closed lane has taken (or, closed by shutdownNow, given
     * back) every slot it claimed; an active one is read from its head and its owner's word, and capped by the state,
     * since a racy read of a word may count for a moment in a lane its worker has just left (see Worker#endTake).
     */
    private long takenCount() {
        long s = state;
        long seq = seq(s);
        return active(mode(s)) ? Math.min(seq, progress((Chunk) CHUNK.getAcquire(this))) : seq;
    }

    @Override
    long executedCount() {
        return takenCount() - drained; // a closed lane counts what the drain gave back: those never ran
    }

    @Override
    long queuedCount() {
        long s = state;
        if (!active(mode(s))) {
            return 0;
        }
        long head = engine.laneHeadPerTask ? (long) TAKEN_SEQ.getAcquire(this)
                : progress((Chunk) CHUNK.getAcquire(this));
        return Math.max(0, seq(s) - head);
    }

    @Override
    long oldestStamp() {
        long s = state;
        return active(mode(s)) ? firstWaitingStamp(seq(s)) : NO_WAITING;
    }
}
