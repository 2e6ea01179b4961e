package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Predicate;

/**
 * The per-context records of one shard ({@link ShardRecord}): an open-addressed table (linear probing, at most half
 * full) written by the shard's owner only, read racily by statistics and by {@code shutdownNow}'s drain.
 *
 * <p>Why not a concurrent map: the owner looks a record up per task, and the map's nodes and locks are of no use to
 * one writer. A key is compared by identity first, then with {@code equals} (SPEC point 4). The lookup is still the
 * largest cost of a visit over many contexts (docs/benchmarks.md, twenty-first set: about a third of the workers'
 * samples inside shard visits, as with {@code ConcurrentHashMap}, and no less with the keys in an array of their own):
 * the context and its record are lines a task of another context evicted.
 *
 * <p>Readers: a record is put into its slot with a release store after it is made, and a table is replaced (never
 * changed in place but by those stores) by a volatile store of {@code table}, so a reader sees whole records in an
 * old or a new table. Records are never removed in place: the owner builds a new table without them ({@link #retain},
 * {@link #clear}), so a probe by a reader always ends at an empty slot.
 */
final class ShardRecords {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(ShardRecord[].class);
    private static final int MIN_CAPACITY = 16;

    private volatile ShardRecord[] table = new ShardRecord[MIN_CAPACITY];
    /** Records in {@code table} (owner-only). */
    private int size;

    private static int spread(Object context) {
        int h = context.hashCode();
        return h ^ (h >>> 16);
    }

    /** The record of {@code context}, or null. For the owner, and racily for readers. */
    ShardRecord get(Object context) {
        ShardRecord[] t = table;
        int mask = t.length - 1;
        for (int i = spread(context) & mask; ; i = (i + 1) & mask) {
            ShardRecord r = (ShardRecord) SLOT.getAcquire(t, i);
            if (r == null) {
                return null;
            }
            if (r.context == context || r.context.equals(context)) {
                return r;
            }
        }
    }

    /** Owner: the record of {@code context}, made if it has none. */
    ShardRecord getOrMake(Object context) {
        ShardRecord[] t = table;
        int mask = t.length - 1;
        int i = spread(context) & mask;
        for (; ; i = (i + 1) & mask) {
            ShardRecord r = t[i]; // the owner wrote every slot itself
            if (r == null) {
                break;
            }
            if (r.context == context || r.context.equals(context)) {
                return r;
            }
        }
        ShardRecord made = new ShardRecord(context);
        if (2 * (size + 1) > t.length) {
            rebuild(2 * t.length, null);
            put(table, made);
        } else {
            SLOT.setRelease(t, i, made); // a reader that finds it sees it whole
        }
        size++;
        return made;
    }

    /** Owner: keeps only the records {@code keep} accepts (a new table, published whole). */
    void retain(Predicate<ShardRecord> keep) {
        int capacity = MIN_CAPACITY;
        while (capacity < 4 * size) {
            capacity <<= 1; // room for what is kept, at most a quarter full
        }
        rebuild(capacity, keep);
    }

    /** Owner: drops every record. */
    void clear() {
        if (size != 0) {
            size = 0;
            table = new ShardRecord[MIN_CAPACITY];
        }
    }

    /** Owner: how many records the table holds. */
    int size() {
        return size;
    }

    /** Whether the table holds no record (racy for anyone but the owner). */
    boolean isEmpty() {
        return size == 0;
    }

    private void rebuild(int capacity, Predicate<ShardRecord> keep) {
        ShardRecord[] old = table;
        ShardRecord[] fresh = new ShardRecord[capacity];
        int kept = 0;
        for (ShardRecord r : old) {
            if (r != null && (keep == null || keep.test(r))) {
                put(fresh, r);
                kept++;
            }
        }
        size = kept;
        table = fresh; // volatile: publishes the new table whole
    }

    private static void put(ShardRecord[] t, ShardRecord r) {
        int mask = t.length - 1;
        int i = spread(r.context) & mask;
        while (t[i] != null) {
            i = (i + 1) & mask;
        }
        SLOT.setRelease(t, i, r);
    }
}
