package io.github.gatlingexecutor;

import java.util.HashMap;
import java.util.Iterator;

/**
 * One worker's visits to the shards it polls from the ready queue (the shard engine, docs/next-engine.md; used only
 * when the engine is built with shards): claim an entry, run its task, up to a batch, then hand the shard back behind
 * the other queued work or give it up when it is empty.
 *
 * <h2>Diverted contexts</h2>
 * A shard is first in, first out over all its contexts, so a context with a long backlog would hold up every context
 * queued behind it in the shard (SPEC point 5). When one context has been claimed {@link #run} times in a row and the
 * newest entry of the shard is another context's, the owner diverts the first: it records the context in the shard's
 * {@link Shard#diverted} table, and moves each later entry of that context, in order, into the context's
 * {@link SequentialLane}, of which it is the only producer. The lane goes through the ready queue like any lane, a batch
 * per turn; the shard goes on with the other contexts. The owner runs that context's entries itself again only after
 * an offer finds the lane released (DEAD): everything it held has run, and the lane's release CAS, which the offer
 * reads, orders those runs before the next.
 *
 * <p>While the checker has lately seen the shard's owner blocked in a task ({@link #divertsAll}), the owner
 * diverts every context it claims, not only floods: tasks that block then run on lanes, which any worker takes and
 * for whose blocked workers the checker adds threads.
 *
 * <h2>The take hand-shake, while anything is diverted</h2>
 * A claimed entry that goes to a lane is neither started nor in the shard, where {@code shutdownNow}'s drain looks.
 * So while a shard has diverted contexts the owner brackets each claim and its move with {@link Worker#beginTake}, as a
 * lane's owner brackets a take: {@code shutdownNow} sets STOP, waits out the takes begun, and only then stops the
 * shards and drains the lanes, so the entry is found in its lane. A take that sees STOP claims nothing: the drain
 * returns the entry from the shard. With nothing diverted an entry claimed is run here, and a claim needs no bracket:
 * a claim the stop did not see is a task that has started.
 *
 * <p>The table is the owner's alone: ownership of the shard moves with its word (a CAS), which orders one owner's
 * table work before the next owner's.
 */
final class ShardOwner {
    /**
     * Claims of one context in a row after which the owner looks whether another context waits (and then diverts the
     * first): half the executor's batch, so a flood is moved aside within one visit, and a context behind it waits for
     * about as many of the flood's tasks as behind a lane's batches (SPEC point 5). A fixed 32, with batches of 8,
     * let a fresh context wait for 33 of a flood's tasks, where lanes allow four batches (SemanticsFairnessTest).
     */
    private final int run;

    /** In {@link Shard#diverted}: the context is to be diverted, from its next entry on (its lane not made yet). */
    private static final Object PENDING = new Object();

    private final Worker worker;
    private final Engine engine;
    private final Shard.Cursor cur = new Shard.Cursor();
    /** The context of the entries claimed last in a row, and how many (fairness; owner-only, reset per visit). */
    private Object runContext;
    private int runHash;
    private int runLength;
    /** The record of {@code runContext} (a lookup per change of context, not per entry). */
    private ShardRecord runRecord;

    ShardOwner(Worker worker) {
        this.worker = worker;
        this.engine = worker.engine;
        this.run = Math.max(1, engine.settings.batchSize / 2);
    }

    /** A visit to {@code shard}, which the caller polled from the ready queue (and so holds its scheduling). */
    void visit(Shard shard) {
        if (!shard.acquire(cur)) {
            return; // stopped by shutdownNow, which returned its entries
        }
        try {
            // The table is tidied here, where no thief can be working on it: the word has a new epoch and no entry of
            // this visit has gone into its task yet. (Tidied as a visit ends, it would race a thief that robbed the
            // last task's owner.)
            forgetEnded(shard.diverted);
            pruneRecords(shard);
            boolean robbed = !work(shard);
            worker.shardContext = null; // before any lane's task: the field names a shard task's context only
            if (robbed) {
                Lane held = worker.takeHeld();
                if (held != null) {
                    worker.runLane(held); // the rest of the context whose task this worker was robbed in
                }
            }
        } finally {
            worker.shardContext = null;
            runContext = null;
            runRecord = null;
            runLength = 0;
            cur.leave();
        }
    }

    /**
     * Once the table has doubled since it was last pruned, drops the records of contexts no longer live: those with
     * no entry waiting, or last started before the shard was last found empty (one walk of the waiting entries:
     * amortized, a step per record made). A shard that goes quiet is emptied by the checker ({@link ShardThief}).
     */
    private static void pruneRecords(Shard s) {
        ShardRecords records = s.records;
        if (records.size() > s.pruneAt) {
            ContextSet waiting = new ContextSet();
            s.walkQueued((context, hash, stamp) -> waiting.add(context, hash));
            long emptied = s.lastEmptyIndex;
            records.retain(r -> r.lastIndex >= emptied && waiting.contains(r.context, r.hash));
            s.pruneAt = Math.max(64, 2 * records.size());
        }
    }

    /**
     * Claims and runs entries until the visit ends: returns true if it ended with the shard given up or handed back,
     * false if the shard was taken (a thief, which may have left this worker a lane, or a stop).
     */
    private boolean work(Shard s) {
        HashMap<Object, Object> diverted = s.diverted;
        int budget = engine.settings.batchSize;
        boolean divertAll = divertsAll(s, engine.stamp()); // a local: a robbed owner writes nothing a thief reads
        for (int n = 0; ; n++) {
            // From here to the next claim the owner may have been robbed (see steal): it reads nothing of the
            // diversion table but its size (a stale size only decides the bracket of a claim that then fails) and
            // writes nothing of it; what it writes when it finds the shard empty is statistics only (below).
            if (n == budget) {
                n = 0;
                engine.tick(worker.clock = System.nanoTime());
                divertAll = divertsAll(s, worker.clock);
                if (!engine.readyQueue.isEmpty()) {
                    return requeue(engine, s, cur);
                }
            }
            boolean bracket = divertAll || !diverted.isEmpty();
            if (bracket ? !worker.beginTake() : worker.stopping()) {
                // shutdownNow: it stops the shard and returns what is left in it. Without a bracket this read of the
                // state is what keeps an owner whose task shutdownNow interrupted (after writing STOP) from starting
                // the next entry before the shard is stopped; one that read the state just before STOP was written
                // claims one more entry at most, which then counts as started, not returned.
                return true;
            }
            int r = s.claim(cur);
            if (r != Shard.CLAIMED) {
                if (bracket) {
                    worker.endAnyTake();
                }
                if (r == Shard.LOST) {
                    return false;
                }
                // No task of the shard runs here now (statistics read the field as "running"); set again, before
                // enterTask, for the next entry claimed.
                worker.shardContext = null;
                if (linger(s)) {
                    continue; // the next entry came while this worker waited on the shard
                }
                // Every context of the shard is done: records last started before this index are of an earlier life.
                // (Written between a claim and the next, where a thief may have robbed this worker: then the word
                // moved and letGo fails, and a stale figure here only restarts some counts early.) Nothing of a quiet
                // shard keeps a worker or a running context reachable; its records go with the checker's next look.
                s.lastEmptyIndex = cur.index;
                runContext = null;
                runRecord = null;
                s.runningOwner = null;
                int let = s.letGo(cur);
                if (let == Shard.TAKEN_BACK) {
                    continue; // an entry came in as it was let go
                }
                return let == Shard.GAVE_UP;
            }
            // Claimed: the shard is this worker's until its next claim, and the table with it.
            Object context = cur.claimedContext();
            Runnable task = cur.claimedTask();
            if (bracket) {
                Object d = diverted.get(context);
                if (d == null && divertAll) {
                    d = PENDING;
                    diverted.put(context, PENDING);
                }
                boolean moved = d != null && move(diverted, context, d, task);
                worker.endAnyTake();
                if (moved) {
                    worker.shardContext = null; // nothing of the shard runs here now
                    // Not counted in the batch: a move runs nothing, and a flood is moved aside so the contexts
                    // behind it run, which a visit that stopped after a batch of moves would put off for as many
                    // turns of the ready queue as the flood has batches.
                    n--;
                    // Moves are not counted in the batch, so a run of them would never reach the look above: look
                    // here too (two reads, beside the lane offer a move costs).
                    divertAll = divertsAll(s, engine.stamp());
                    continue;
                }
            }
            if (context != runContext) {
                // The hash first: contexts that differ mostly differ there, and a context read here is a miss.
                int hash = cur.claimedHash();
                if (runContext == null || hash != runHash || !context.equals(runContext)) {
                    runContext = context;
                    runHash = hash;
                    runLength = 0;
                    runRecord = s.records.getOrMake(context, hash);
                    noteWorker(runRecord, context);
                }
            } // else runRecord is this context's: the two are set together, and cleared together
            runRecord.started(cur.index - 1, s.lastEmptyIndex);
            if (++runLength == run) { // a compare per claim: run is a field, and a remainder of it a division
                runLength = 0;
                if (othersWait(s, context)) {
                    diverted.put(context, PENDING);
                }
            }
            // Stored only when they change: each is a reference stored into an object as old as the executor, and
            // into another heap region G1's write barrier pays a StoreLoad fence; a run of one context stores neither.
            // The context stays set from one of its tasks to the next (a thief reads it only with a mark that shows
            // the owner in a task, and the owner writes it before each enterTask whose context differs), and is
            // cleared when the shard empties, an entry is moved or the visit ends.
            if (s.runningOwner != worker) {
                s.runningOwner = worker;
            }
            if (worker.shardContext != context) {
                worker.shardContext = context;
            }
            s.enterTask(cur); // a release store: a thief that reads it sees the table, the owner and its context
            worker.runTask(task);
        }
    }

    /**
     * Takes {@code s} from an owner that has been in one task since its word was {@code mark}, for the checker: the
     * other contexts of the shard then go on without that task. Returns false, changing nothing the owner can see, if
     * the owner has moved on (or the shard was stopped).
     *
     * <p>The robbed owner's context must not run its next entries while its task runs, and must run them after it.
     * So the thief makes that context's lane ACTIVE with nothing queued and leaves it with the robbed worker
     * ({@link Worker#offerHeld}) <em>before</em> the CAS of the word: a worker whose next claim fails finds it there
     * and runs it after its task. Then, owning the shard, it records the context as diverted to that lane (later
     * entries are moved there, accepted without activating it) and queues the shard. If the CAS fails the thief takes
     * the lane back, unless the worker took it first; a lane it takes back is released if empty, else (the owner
     * moved an entry in before it moved on) queued like any active lane.
     */
    static boolean steal(Engine engine, Shard s, Shard.Cursor thief, long mark) {
        Worker victim = s.runningOwner;
        // The owner wrote its context before the enterTask whose mark the caller read, and writes the field again only
        // after a claim (then the CAS below fails) or to clear it (the shard emptied, the visit ended, an entry was
        // moved): read now, it is that task's context, or null.
        Object context = victim == null ? null : victim.shardContext;
        if (victim == null || context == null || s.wordVolatile() != mark) {
            return false;
        }
        SequentialLane lane = heldLane(engine, context);
        if (lane == null) {
            return false;
        }
        if (!victim.offerHeld(lane)) {
            giveBack(engine, lane);
            return false;
        }
        if (!s.steal(thief, mark)) {
            if (victim.withdrawHeld(lane)) {
                giveBack(engine, lane);
            }
            return false;
        }
        s.diverted.put(context, lane);
        requeue(engine, s, thief);
        return true;
    }

    /**
     * Ends a visit with entries left: hands {@code s} back (FREE, the scheduling kept) and queues it behind the other
     * work, waking a worker for it. Returns false, queueing nothing, if {@code cur} no longer owned it (the thief or
     * the stop that took it holds the scheduling).
     */
    static boolean requeue(Engine engine, Shard s, Shard.Cursor cur) {
        if (!s.handBack(cur)) {
            return false;
        }
        engine.readyQueue.offerShard(s, engine.stamp());
        engine.pool.signalWork();
        return true;
    }

    /** A new lane for {@code context}, made ACTIVE with nothing queued; null if a live one is mapped already. */
    private static SequentialLane heldLane(Engine engine, Object context) {
        for (;;) {
            Lane lane = engine.laneOf(false, context);
            if (((SequentialLane) lane).activateEmpty()) {
                return (SequentialLane) lane;
            }
            if (!lane.isFinished()) {
                return null; // diverted already, its lane active: nothing to hold (not reached, see move)
            }
            engine.lanes(false).remove(context, lane);
        }
    }

    /** A held lane the thief owns again: released if empty, else queued. */
    private static void giveBack(Engine engine, Lane lane) {
        if (lane.releaseIfEmpty()) {
            lane.unmap();
        } else {
            engine.makeReady(lane);
        }
    }

    /**
     * The way out of an engine failure around the tasks during a visit (see Worker#run): if this worker still owns
     * {@code shard}, it hands it back and queues it, so its entries are not stranded. A CAS of the word this worker
     * held: a no-op if the visit had ended or the shard was taken.
     */
    void abandon(Shard shard) {
        if (cur.shard == shard) {
            requeue(engine, shard, cur);
        }
    }

    /**
     * The shard is empty and nothing else is queued: a worker with nothing to do would spin anyway, so it spins here,
     * as on an emptied lane (SequentialLane#runBatch, same rules: {@link PoolPolicy#lingerPays}, a look every
     * {@link #LINGER_LOOK} waits, given up when preempted). A hot context's next entry is then just an append for its
     * producer, with no scheduling, no trip through the ready queue and no wake-up. Returns whether an entry came.
     */
    private boolean linger(Shard s) {
        if (worker.stopping() || !engine.readyQueue.isEmpty() || !worker.pool.policy.lingerPays(worker)) {
            return false;
        }
        worker.spinMark = System.nanoTime();
        int waits = 0;
        while (waits < LINGER) {
            waits = Waiting.pauseUnlessPreempted(waits, worker);
            if (waits == Waiting.PREEMPTED) {
                return false;
            }
            if ((waits & (LINGER_LOOK - 1)) == 0 && s.nextWritten(cur)) {
                return true;
            }
        }
        return s.nextWritten(cur);
    }

    /**
     * A run of the context starts on this worker: if the context last ran on another one, that is a transfer (counted,
     * and a JFR event), as a lane's batch on another worker is. With a shard per worker a context mostly stays on its
     * worker, so this is a read of a line the owner has just read.
     */
    private void noteWorker(ShardRecord r, Object context) {
        int last = r.lastWorkerId;
        if (last != worker.id) {
            r.lastWorkerId = worker.id;
            if (last != 0) {
                worker.transferred(context, false, last);
            }
        }
    }

    /**
     * How long after the checker last found this shard's owner blocked ({@link Shard#blockedSeenAt}) the owner goes on
     * diverting every context it claims (see {@link #divertsAll}). The checker looks every few milliseconds while work
     * flows, and an owner that diverts everything runs no task of its own to be seen blocked in, so the switch is held
     * for many looks: when it lapses, the owner runs tasks again and, if they still block, is seen within a look or
     * two.
     */
    static final long DIVERT_ALL_NANOS = 100_000_000L;

    /**
     * Whether the owner diverts every context it claims, read at the start of a visit, of each batch and after each
     * move: while the checker has seen this shard's owner blocked in a task within
     * {@link #DIVERT_ALL_NANOS}. A shard is first in, first out over its contexts, so an owner blocked in one task
     * holds every entry behind it, and the checker robs it only after a millisecond in that one task: with tasks that
     * block for a millisecond or less at a time (I/O, a lock, a remote call), no owner is ever robbed, no other worker
     * has anything to take, and the shard runs at the pace of its blocked owner (the comparison runner's blocking
     * scenario read the fixed pool's rate with three threads). Diverted, each context's entries go to its lane in
     * order, the lanes go through the ready queue, and blocked lanes are what the checker adds workers for. A move
     * costs a lane offer, nothing beside a task that blocks. Tasks that never block are never seen off their CPU, so
     * tiny tasks never take this path; tasks that block now and then for a moment (a contended monitor) may be seen so,
     * and then run on lanes for the while, the default engine's path.
     */
    private static boolean divertsAll(Shard s, long now) {
        long seen = s.blockedSeenAt;
        return seen != 0 && now - seen < DIVERT_ALL_NANOS;
    }

    /** Spins an owner may wait on an emptied shard while nothing else is queued (as SequentialLane's linger). */
    private static final int LINGER = 48;
    /** The owner looks at its next slot once per this many waits (a power of two; see SequentialLane). */
    private static final int LINGER_LOOK = 8;

    /** Whether the newest entry of the shard is another context's (racy: a look, not a promise). */
    private boolean othersWait(Shard s, Object context) {
        Object newest = s.newestContext();
        return newest != null && newest != context && !newest.equals(context);
    }

    /**
     * Moves the claimed {@code task} of a diverted {@code context} into its lane ({@code d}: the lane, or
     * {@link #PENDING} before it is made). Returns false if the lane was released meanwhile: the context is no longer
     * diverted, and the caller runs the task.
     */
    private boolean move(HashMap<Object, Object> diverted, Object context, Object d, Runnable task) {
        Lane lane = d == PENDING ? null : (Lane) d;
        if (lane != null && lane.releaseIfIdle()) {
            // Everything the lane held has run (its owner went idle after its last task, and the CAS that released it
            // read that): the context comes back to the shard. Left diverted, a context whose lane keeps up would
            // pay a move and a lane hand-off per task for as long as its tasks keep coming.
            lane.unmap();
            diverted.remove(context);
            return false;
        }
        for (;;) {
            boolean made = lane == null;
            if (made) {
                lane = engine.laneOf(false, context);
                diverted.put(context, lane);
            }
            int outcome = lane.offer(task, 0);
            if (outcome == Lane.ACCEPTED) {
                return true;
            }
            if (outcome == Lane.ACTIVATED) {
                engine.makeReady(lane);
                return true;
            }
            if (outcome == Lane.RELEASED) {
                engine.lanes(false).remove(context, lane); // help its releaser
                if (made) {
                    lane = null; // a lane found in the map as it was released: make another
                    continue;
                }
                diverted.remove(context); // all it held has run: the shard runs this context again
                return false;
            }
            // Lanes close only once every shard is closed quiet (quiescence) or after the takes are waited out
            // (shutdownNow), and this move is inside a take that saw no STOP on a shard not quiet: not reached.
            throw new IllegalStateException("diverted lane of " + context + " refused a move: " + outcome);
        }
    }

    /**
     * Drops the entries of the diversion table that no longer hold anything: contexts marked and not seen since, and
     * lanes released. Called as a visit ends, while the owner still owns the shard; a live lane stays recorded until
     * it is released (within a grace of its going idle).
     */
    private static void forgetEnded(HashMap<Object, Object> diverted) {
        if (diverted.isEmpty()) {
            return;
        }
        for (Iterator<Object> it = diverted.values().iterator(); it.hasNext(); ) {
            Object d = it.next();
            if (d == PENDING || ((Lane) d).isFinished()) {
                it.remove();
            }
        }
    }
}
