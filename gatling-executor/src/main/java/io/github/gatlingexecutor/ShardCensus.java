package io.github.gatlingexecutor;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The contexts with an entry waiting in one shard, for {@code statistics().liveContexts()} (the shard engine), kept
 * from one call to the next instead of found again by a walk of every waiting entry per call. A producer that read
 * {@code statistics()} before each submit, with 2,000 entries waiting, made each of its submits such a walk, and the
 * suite's test of it timed out on this engine (docs/testing.md).
 *
 * <p>The census holds the contexts of the entries from {@code from} to {@code to}, in index order, and a count per
 * context. An update first drops the entries claimed since (the word's index has passed them: from the front, in
 * order), then reads the entries appended since (from {@code to} up to {@code tail}, stopping at a slot its submitter
 * has not written yet). Each entry is so read once and dropped once, whatever the number of calls: a call costs what
 * came and went since the last one. It reads only what statistics read already (the word, the tail, written slots),
 * with the same racy reads, so it errs as a walk did: a claim during the update may leave an entry counted a moment
 * longer.
 *
 * <p>Only statistics readers and the checker touch it, under its lock: nothing here blocks a submitter or a worker.
 * It holds a reference per waiting entry it has read (the shard holds three arrays' worth per entry), and a count per
 * context. Between updates it also holds the contexts of entries since claimed, and a chunk the owner may have passed
 * (cut off once passed, so it holds no later chunk, see Shard): the checker trims it at each of its looks
 * ({@link #trim}; every few milliseconds while work flows, at least once a check period), where it also drops the
 * records of quiet shards, which hold contexts as long.
 */
final class ShardCensus {
    /** Contexts of the entries from index {@code from} to {@code to}, oldest first. */
    private final ArrayDeque<Object> entries = new ArrayDeque<>();
    /** Per context, its entries in {@code entries}; a context leaves when its count drops to zero. */
    private final HashMap<Object, int[]> counts = new HashMap<>();
    private long from;
    private long to;
    /** A chunk at or before index {@code to}, where the next update's read of new entries starts; or null. */
    private Shard.Chunk next;

    /**
     * Brings the census up to date with {@code s} and returns how many contexts have an entry waiting in it. With
     * {@code also} non-null, adds those contexts to it (for the caller's own count of the contexts it found elsewhere).
     */
    synchronized int waitingContexts(Shard s, ContextSet also) {
        update(s);
        if (also != null) {
            for (Map.Entry<Object, int[]> e : counts.entrySet()) {
                also.add(e.getKey(), e.getKey().hashCode());
            }
        }
        return counts.size();
    }

    /** Whether {@code context} was found waiting by the last update. */
    synchronized boolean holds(Object context) {
        return counts.containsKey(context);
    }

    /** How many entries of {@code context} the last update found waiting. */
    synchronized int count(Object context) {
        int[] n = counts.get(context);
        return n == null ? 0 : n[0];
    }

    /** The checker, each tick: drops what has been claimed, so a quiet shard's census holds nothing. */
    synchronized void trim(Shard s) {
        if (from == to && next == null) {
            return;
        }
        forgetClaimed(s.claimIndex(), s.closed());
    }

    private void update(Shard s) {
        Shard.Chunk hint = s.consumerChunk(); // then the word, so the hint's base is at most the index read
        long index = s.claimIndex(hint);
        long tail = s.tailVolatile();
        forgetClaimed(index, tail < 0);
        if (tail < 0) {
            return;
        }
        // A chunk at or before index to: the one kept from the last update, or the hint read before the index, which
        // to equals when nothing was kept. (A hint read afterwards may be past it: an owner that moved on.)
        Shard.Chunk c = next == null ? hint : next;
        long i = to;
        for (; i < tail; i++) {
            while (i >= c.end()) {
                Shard.Chunk n = s.after(c);
                if (n == null) {
                    break;
                }
                if (n.base > i) {
                    // c was cut off, and the owners' hint lies past i: every entry before it has been claimed, those
                    // held here included (all below i).
                    clear(n.base);
                    i = n.base;
                }
                c = n;
            }
            if (i >= c.end()) {
                break; // the submit that claimed index i has not linked its chunk yet
            }
            Object context = s.writtenContext(c, i);
            if (context == null) {
                break; // not written yet (read again next time), or claimed and cleared since (dropped next time)
            }
            entries.addLast(context);
            counts.computeIfAbsent(context, k -> new int[1])[0]++;
        }
        to = i;
        next = c;
    }

    /**
     * Drops what is no longer waiting, given the word's {@code index}: everything if the shard is {@code closed}
     * (stopped: every entry left was returned; closed quiet: nothing waits) or the index has passed every entry held
     * (then the next read starts from the index), else the entries below it.
     */
    private void forgetClaimed(long index, boolean closed) {
        if (closed || index >= to) {
            clear(index);
        } else {
            dropClaimed(index);
        }
    }

    /** Drops the entries below {@code index}, which is below {@code to}: claimed since they were read. */
    private void dropClaimed(long index) {
        for (; from < index; from++) {
            Object context = entries.pollFirst();
            int[] n = counts.get(context);
            if (--n[0] == 0) {
                counts.remove(context);
            }
        }
    }

    private void clear(long index) {
        entries.clear();
        counts.clear();
        from = index;
        to = index;
        next = null;
    }
}
