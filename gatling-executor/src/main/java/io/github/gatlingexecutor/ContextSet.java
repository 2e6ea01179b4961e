package io.github.gatlingexecutor;

import java.util.function.Consumer;

/**
 * A set of contexts for one statistics walk of the shards' waiting entries (or an owner's prune of its records): an
 * open-addressed table (linear probing, at most half full) keyed by the hash each entry carries, so a walk over many
 * entries of few contexts compares references and hashes it already has, and reads a context object only when two
 * hashes match and the references differ (then {@code equals}, SPEC point 4). One thread's, for one walk: not
 * thread-safe. Walking 131,000 waiting entries of as many contexts into a {@code HashMap} per {@code statistics()} call
 * was what timed a test of the suite out on the shard engine (docs/testing.md).
 */
final class ContextSet {
    private Object[] keys = new Object[16];
    private int[] hashes = new int[16];
    private int size;

    /** Adds {@code context}, whose hash is {@code hash}; returns whether it was not in the set yet. */
    boolean add(Object context, int hash) {
        int i = indexOf(context, hash);
        if (keys[i] != null) {
            return false;
        }
        keys[i] = context;
        hashes[i] = hash;
        if (2 * ++size > keys.length) {
            grow();
        }
        return true;
    }

    boolean contains(Object context, int hash) {
        return keys[indexOf(context, hash)] != null;
    }

    int size() {
        return size;
    }

    void forEach(Consumer<Object> action) {
        for (Object k : keys) {
            if (k != null) {
                action.accept(k);
            }
        }
    }

    /** The slot of {@code context}, or the empty slot where it would go. */
    private int indexOf(Object context, int hash) {
        Object[] k = keys;
        int mask = k.length - 1;
        int i = (hash ^ (hash >>> 16)) & mask;
        for (Object key; (key = k[i]) != null; i = (i + 1) & mask) {
            if (key == context || (hashes[i] == hash && key.equals(context))) {
                return i;
            }
        }
        return i;
    }

    private void grow() {
        Object[] oldKeys = keys;
        int[] oldHashes = hashes;
        keys = new Object[2 * oldKeys.length];
        hashes = new int[2 * oldKeys.length];
        int mask = keys.length - 1;
        for (int j = 0; j < oldKeys.length; j++) {
            if (oldKeys[j] != null) {
                int i = (oldHashes[j] ^ (oldHashes[j] >>> 16)) & mask;
                while (keys[i] != null) {
                    i = (i + 1) & mask;
                }
                keys[i] = oldKeys[j];
                hashes[i] = oldHashes[j];
            }
        }
    }
}
