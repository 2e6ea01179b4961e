package io.github.gatlingexecutor.broken;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A small copy of {@code Shard}'s protocols (one array of slots, no chunks, the same word layout reduced to an index,
 * FREE, STOPPED and an epoch) with one bug switched on per test, so the jcstress tests of the real class are seen to
 * catch each: a release that does not read {@code tail} again, a stop that takes the word with a plain store, a
 * steal that does not move the epoch, and (by its test calling {@link #steal} where the real one calls
 * {@code stealInTask}) a thief that does not wait for the owner's mark. Not used by the engine.
 */
final class BrokenShard {
    static final int QUEUED = 0;
    static final int SCHEDULE = 1;
    static final int CLAIMED = 0;
    static final int EMPTY = 1;
    static final int LOST = 2;

    static final long FREE = 1L << 14;
    static final long STOPPED = 1L << 15;
    static final long EPOCH_MASK = FREE - 1;
    static final long ONE = 1L << 16;

    static final VarHandle TAIL;
    static final VarHandle SCHEDULED;
    static final VarHandle WORD;
    static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Runnable[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(BrokenShard.class, "tail", long.class);
            SCHEDULED = l.findVarHandle(BrokenShard.class, "scheduled", int.class);
            WORD = l.findVarHandle(BrokenShard.class, "word", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final boolean releaseWithoutSecondLook;
    final boolean stopWithPlainStore;
    final boolean stealWithoutEpoch;
    final Runnable[] slots = new Runnable[8];
    long tail;
    int scheduled;
    long word = FREE;
    volatile long inTask;

    BrokenShard(boolean releaseWithoutSecondLook, boolean stopWithPlainStore, boolean stealWithoutEpoch) {
        this.releaseWithoutSecondLook = releaseWithoutSecondLook;
        this.stopWithPlainStore = stopWithPlainStore;
        this.stealWithoutEpoch = stealWithoutEpoch;
    }

    /** An owner's cursor: its expected word and the task it claimed. */
    static final class Cursor {
        long word;
        Runnable task;
    }

    int offer(Runnable task) {
        long t = (long) TAIL.getAndAdd(this, 1L);
        SLOT.setRelease(slots, (int) t, task);
        if ((int) SCHEDULED.getVolatile(this) == 0 && SCHEDULED.compareAndSet(this, 0, 1)) {
            return SCHEDULE;
        }
        return QUEUED;
    }

    boolean acquire(Cursor cur) {
        long w = (long) WORD.getVolatile(this);
        long mine = (w & ~(EPOCH_MASK | FREE)) | ((w + 1) & EPOCH_MASK);
        if ((w & STOPPED) != 0 || !WORD.compareAndSet(this, w, mine)) {
            return false;
        }
        cur.word = mine;
        return true;
    }

    boolean steal(Cursor cur, long w) {
        if ((w & (STOPPED | FREE)) != 0) {
            return false;
        }
        long mine = stealWithoutEpoch ? w : (w & ~EPOCH_MASK) | ((w + 1) & EPOCH_MASK);
        if (stealWithoutEpoch) {
            // BUG: the thief's word is the owner's, so the owner's next claim CAS still succeeds.
            if ((long) WORD.getVolatile(this) != w) {
                return false;
            }
        } else if (!WORD.compareAndSet(this, w, mine)) {
            return false;
        }
        cur.word = mine;
        return true;
    }

    void enterTask(Cursor cur) {
        inTask = cur.word;
    }

    int claim(Cursor cur) {
        int i = (int) (cur.word >>> 16);
        Runnable task = (Runnable) SLOT.getAcquire(slots, i);
        if (task == null) {
            if ((long) TAIL.getVolatile(this) <= i) {
                return EMPTY;
            }
            while ((task = (Runnable) SLOT.getAcquire(slots, i)) == null) {
                Thread.onSpinWait();
            }
        }
        if (!WORD.compareAndSet(this, cur.word, cur.word + ONE)) {
            return LOST;
        }
        cur.word += ONE;
        cur.task = task;
        return CLAIMED;
    }

    boolean release(Cursor cur) {
        if (!WORD.compareAndSet(this, cur.word, cur.word | FREE)) {
            return false;
        }
        SCHEDULED.setVolatile(this, 0);
        if (releaseWithoutSecondLook) {
            return false; // BUG: a submit between the owner's empty look and the clearing found the flag still set
        }
        if ((long) TAIL.getVolatile(this) > (cur.word >>> 16) && SCHEDULED.compareAndSet(this, 0, 1)) {
            return acquire(cur);
        }
        return false;
    }

    int stop() {
        long w;
        if (stopWithPlainStore) {
            w = (long) WORD.getVolatile(this);
            WORD.setVolatile(this, w | STOPPED); // BUG: an owner's claim between the read and the store still wins
        } else {
            do {
                w = (long) WORD.getVolatile(this);
            } while (!WORD.compareAndSet(this, w, w | STOPPED));
        }
        return (int) ((long) TAIL.getVolatile(this) - (w >>> 16));
    }
}
