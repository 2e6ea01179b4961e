package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The per-context figures of a context whose tasks run from a shard (the shard engine): how many of its tasks have
 * started since it became live. Written by the shard's owner only, between a claim and that entry's task; read racily
 * by statistics. A context's waiting tasks are not counted here: statistics find them by walking the shard's unclaimed
 * entries ({@link Shard#walkQueued}), so a submit touches no per-context state.
 */
final class ShardRecord {
    private static final VarHandle EXECUTED;

    static {
        try {
            EXECUTED = MethodHandles.lookup().findVarHandle(ShardRecord.class, "executed", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Object context;
    /** {@code context.hashCode()}, as the submits computed it (the table is rebuilt without calling it again). */
    final int hash;
    /** Tasks of this context started from the shard; opaque stores by the owner (no fence per task). */
    private long executed;
    /** The shard index of the context's last entry started (owner-only). */
    long lastIndex;
    /**
     * The id of the worker that ran the context's last run of entries, or 0 (owner-only). Kept across the context's
     * lives, as a lane's is while it stays mapped: a run on another worker counts as a transfer.
     */
    int lastWorkerId;
    /** Entries of this context {@code shutdownNow} returned from the shard (written by its drain, once). */
    volatile long returned;

    ShardRecord(Object context, int hash) {
        this.context = context;
        this.hash = hash;
    }

    /**
     * A task of this context at shard index {@code index} starts. {@code emptied}: the shard's
     * {@link Shard#lastEmptyIndex}; a record last started before it is of an earlier life of the context, and its
     * counts start again (in place: a record per context stays while the context comes back, as a lane stays mapped
     * through its grace, so a context live for one task at a time costs no allocation and no map insertion per task).
     */
    void started(long index, long emptied) {
        long n = lastIndex < emptied ? 1 : executed + 1;
        if (n == 1 && returned != 0) {
            returned = 0;
        }
        lastIndex = index;
        EXECUTED.setOpaque(this, n);
    }

    long executedOpaque() {
        return (long) EXECUTED.getOpaque(this);
    }
}
