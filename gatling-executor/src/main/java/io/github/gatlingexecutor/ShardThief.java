package io.github.gatlingexecutor;

/**
 * The checker's look at the shards (the shard engine only): an owner that stays in one task while entries wait in
 * its shard holds the other contexts of that shard, which SPEC point 5 says idle workers take at once. Once it has
 * been in that task long enough ({@link #STEAL_AFTER_NANOS}) the checker takes the shard from it
 * ({@link ShardOwner#steal}) and queues it. Looks ride on the checker's clock tick, every few milliseconds while work
 * flows, not on its check period: a look costs a few reads per shard, and the blocked threshold is for growing the
 * pool, not for letting contexts wait. An owner found off its CPU in a task at every look for a millisecond marks its
 * shard blocked, which makes its owners divert every context to lanes for a while (ShardOwner#divertsAll): tasks that
 * block briefly are never robbed, one task being over before two looks see it. The same look tidies the records of
 * shards that have gone quiet, and trims each shard's {@link ShardCensus} of the entries claimed since statistics last
 * read it.
 */
final class ShardThief {
    /** In {@link #seen}: no owner was in a task at the last look. */
    private static final long NONE = -1;

    private final Engine engine;
    /**
     * How long an owner whose thread is off the CPU (blocked, waiting or sleeping in its task) must have been in one
     * task before it is robbed. Looks come with every wake of the checker (a nudge, a change of the timer), not only
     * with its tick, so two looks in a row can be microseconds apart: the time, not the count of looks, says the task
     * is long. A millisecond: a thousand times a tiny task, and short next to what a context waiting behind it notices.
     * An owner on the CPU (or waiting for one) is robbed only once it is stuck by the executor's blocked threshold
     * (SPEC point 7): on a saturated machine a descheduled owner of a hot context would otherwise be robbed for a
     * tiny task, and its context diverted through a lane while the shard goes on (measured: one hot key at about a
     * twentieth of the lanes' rate).
     */
    static final long STEAL_AFTER_NANOS = 1_000_000L;

    /**
     * How long every look must have found a shard's owner off its CPU in a task, with entries waiting, before the
     * shard is marked blocked ({@link Shard#blockedSeenAt}, which makes its owners divert every context for a while):
     * at least two looks, a millisecond apart. A single sighting also caught owners inside a short wait on a monitor
     * (a statistics call that met the checker's own lock): in the suite's test of lanes behind a backlog, on the
     * shard engine, one worker then turned 84,801 of 131,072 tiny entries into lanes at once. Owners of tasks that
     * block are off their CPU at most looks, and are marked within a few.
     */
    static final long BLOCKED_FOR_NANOS = 1_000_000L;

    /** Per shard, the owner's in-task word at the last look, and when it was first seen (checker-only). */
    private final long[] seen;
    private final long[] seenAt;
    /**
     * Per shard, since when every look has found its owner off its CPU in a task with entries waiting (or
     * {@link #NONE}); checker-only. See {@link #BLOCKED_FOR_NANOS}.
     */
    private final long[] offCpuSince;
    /** Per shard, its {@link Shard#lastEmptyIndex} at the last look that found it without an owner (or -1). */
    private final long[] quietAt;
    /** The checker's cursor: it owns a shard it stole only until it queues it. */
    private final Shard.Cursor cursor = new Shard.Cursor();
    /** Written by the checker only; volatile for statistics' reads. */
    private volatile long steals;

    ShardThief(Engine engine) {
        this.engine = engine;
        int n = engine.shards == null ? 0 : engine.shards.length;
        this.seen = new long[n];
        this.seenAt = new long[n];
        this.quietAt = new long[n];
        this.offCpuSince = new long[n];
        java.util.Arrays.fill(offCpuSince, NONE);
        java.util.Arrays.fill(quietAt, -1);
        java.util.Arrays.fill(seen, NONE);
    }

    /**
     * Looks at every shard once, at {@code now}; steals from owners found in the same task for
     * {@link #STEAL_AFTER_NANOS} with entries waiting. Returns whether an owner in a task with entries waiting was
     * left alone for now: the checker then looks again within a tick rather than letting its clock stall.
     */
    boolean look(long now) {
        Shard[] shards = engine.shards;
        if (shards == null) {
            return false;
        }
        boolean again = false;
        for (int i = 0; i < shards.length; i++) {
            Shard s = shards[i];
            forgetIfQuiet(s, i);
            s.census.trim(s);
            long mark = s.inTaskAcquire();
            if (mark != s.wordVolatile() || s.queued() == 0) {
                seen[i] = NONE;
                offCpuSince[i] = NONE;
                continue;
            }
            Worker owner = s.runningOwner;
            boolean offCpu = owner != null && owner.thread != null && Checker.isOffCpu(owner.thread);
            if (!offCpu) {
                offCpuSince[i] = NONE;
            } else if (offCpuSince[i] == NONE) {
                offCpuSince[i] = now;
            } else if (now - offCpuSince[i] >= BLOCKED_FOR_NANOS) {
                // Blocked at every look for a while, in one task or several: the owner then runs its next batches on
                // lanes (ShardOwner#divertsAll). Entries behind a blocked owner otherwise wait for it task after task,
                // and with tasks that block for about a look's interval no owner is seen in one task twice to be
                // robbed.
                s.blockedSeenAt = now == 0 ? 1 : now;
            }
            if (seen[i] != mark) {
                seen[i] = mark;
                seenAt[i] = now;
                again = true;
                continue;
            }
            long inTask = now - seenAt[i];
            if (inTask < STEAL_AFTER_NANOS) {
                again = true;
                continue;
            }
            if (inTask < engine.settings.blockedThresholdNanos && !offCpu) {
                continue; // on a CPU: looked at again at the next tick, stolen once stuck
            }
            seen[i] = NONE;
            if (ShardOwner.steal(engine, s, cursor, mark)) {
                steals = steals + 1; // only this thread writes it
            }
            cursor.leave();
        }
        return again;
    }

    /**
     * Drops the records of a shard that has stayed quiet (no owner, not scheduled, not emptied again) since the last
     * look: what a quiet shard would otherwise keep reachable, a context per record, as a worker's idle ring keeps its
     * lanes only through their grace. The records are the owner's, so the checker becomes the owner for a moment, by
     * the protocol any owner follows: it takes the scheduling as a submit would, acquires the shard, clears the table
     * and lets the shard go. An entry that came meanwhile makes the let-go take the shard back: the checker then
     * queues it, as the submit that found it scheduled did not.
     */
    private void forgetIfQuiet(Shard s, int i) {
        if (s.records.isEmpty()) {
            return;
        }
        long w = s.wordVolatile();
        long emptied = s.lastEmptyIndex; // after the word: written by the owner before its CAS to FREE
        if (!Shard.free(w) || s.scheduledVolatile() || emptied != quietAt[i] || s.closed()) {
            quietAt[i] = Shard.free(w) ? emptied : -1;
            return;
        }
        if (hold(s)) {
            s.records.clear();
            letGoHeld(s);
        }
    }

    /**
     * Becomes the owner of {@code s} for a moment, by the protocol any owner follows: takes the scheduling as a submit
     * would, then acquires the shard. False if a submit scheduled it (its owner tidies) or it is stopped.
     */
    boolean hold(Shard s) {
        return s.takeScheduling() && s.acquire(cursor);
    }

    /** Lets go of a shard this thread {@link #hold}s; queues it if an entry came in meanwhile. */
    void letGoHeld(Shard s) {
        int let = s.letGo(cursor);
        if (let == Shard.TAKEN_BACK) {
            ShardOwner.requeue(engine, s, cursor);
        }
        cursor.leave();
        if (let != Shard.TAKEN_BACK && engine.isShutdown()) {
            // While this thread held the shard, a worker that found nothing to run may have asked whether the executor
            // was quiescent: the shard was owned and scheduled, so it was not, and the worker parked for good (after
            // shutdown an idle core worker parks untimed). The let-go changed the answer, so the workers must ask
            // again, as after a lane the checker held (Checker#releaseHeldRound); else termination never comes. The
            // state was written before that worker's look at the shard, which came before the let-go's stores, which
            // come before this read: so this read sees the shutdown whenever such a look failed.
            engine.wakeForTermination();
        }
    }

    /** Shards taken from owners in a task (checker-only). */
    long steals() {
        return steals;
    }
}
