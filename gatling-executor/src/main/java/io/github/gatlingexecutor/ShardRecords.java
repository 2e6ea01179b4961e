package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Predicate;

/**
 * The per-context records of one shard ({@link ShardRecord}): an open-addressed table (linear probing, at most half
 * full) written by the shard's owner only, read racily by statistics and by {@code shutdownNow}'s drain.
 *
 * <h2>The owner's lookup reads no context and no record</h2>
 * The owner looks a record up per task, by the hash the submitter stored in the entry ({@link Shard.Cursor#hash}), in
 * two arrays of its own: the keys' hashes and the keys. A key is compared by identity first, then, only if the hashes
 * are equal, with {@code equals} (SPEC point 4). So over many contexts a lookup reads lines the owner wrote itself,
 * never the context object, and the record only to count the task in it. Reading the context and the record to
 * compare them took about a third of the workers' samples inside shard visits, in a {@code ConcurrentHashMap} and in
 * this table alike (docs/benchmarks.md, twenty-first set): a context object is often on a line that a task or a
 * submitter on another CPU last wrote.
 *
 * <h2>Readers</h2>
 * They probe {@code records} alone, comparing each record's own context. A record is put into its slot with a release
 * store after it is made, and a table is never changed in place but by those stores: the owner publishes a new one
 * ({@link #retain}, {@link #clear}, growth) with a volatile store of {@code table}. So a reader sees whole records in
 * an old or a new table, and, as records are never removed in place, a probe always ends at an empty slot.
 */
final class ShardRecords {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(ShardRecord[].class);
    private static final int MIN_CAPACITY = 16;

    /** One table: slot {@code i} of each array is one record. Only {@code records} is read by anyone but the owner. */
    private static final class Table {
        final ShardRecord[] records;
        final Object[] keys;
        final int[] hashes;

        Table(int capacity) {
            records = new ShardRecord[capacity];
            keys = new Object[capacity];
            hashes = new int[capacity];
        }

        void put(ShardRecord r) {
            int mask = records.length - 1;
            int i = spread(r.hash) & mask;
            while (keys[i] != null) {
                i = (i + 1) & mask;
            }
            keys[i] = r.context;
            hashes[i] = r.hash;
            SLOT.setRelease(records, i, r); // a reader that finds it sees it whole
        }
    }

    private volatile Table table = new Table(MIN_CAPACITY);
    /** Records in {@code table} (owner-only). */
    private int size;

    private static int spread(int h) {
        return h ^ (h >>> 16);
    }

    /** The record of {@code context} (whose hash is {@code hash}), or null. Racy for readers. */
    ShardRecord get(Object context, int hash) {
        ShardRecord[] t = table.records;
        int mask = t.length - 1;
        for (int i = spread(hash) & mask; ; i = (i + 1) & mask) {
            ShardRecord r = (ShardRecord) SLOT.getAcquire(t, i);
            if (r == null) {
                return null;
            }
            if (r.context == context || (r.hash == hash && r.context.equals(context))) {
                return r;
            }
        }
    }

    /** {@link #get(Object, int)}, for a reader that has only the context. */
    ShardRecord get(Object context) {
        return get(context, context.hashCode());
    }

    /** Owner: the record of {@code context} (whose hash is {@code hash}), made if it has none. */
    ShardRecord getOrMake(Object context, int hash) {
        Table t = table;
        Object[] keys = t.keys;
        int mask = keys.length - 1;
        int i = spread(hash) & mask;
        for (Object k; (k = keys[i]) != null; i = (i + 1) & mask) {
            if (k == context || (t.hashes[i] == hash && k.equals(context))) {
                return t.records[i]; // the owner wrote every slot itself
            }
        }
        ShardRecord made = new ShardRecord(context, hash);
        if (2 * (size + 1) > keys.length) {
            rebuild(2 * keys.length, null);
            table.put(made);
        } else {
            keys[i] = context;
            t.hashes[i] = hash;
            SLOT.setRelease(t.records, i, made);
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
            table = new Table(MIN_CAPACITY);
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
        Table fresh = new Table(capacity);
        int kept = 0;
        for (ShardRecord r : table.records) {
            if (r != null && (keep == null || keep.test(r))) {
                fresh.put(r);
                kept++;
            }
        }
        size = kept;
        table = fresh; // volatile: publishes the new table whole
    }
}
