package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;

/**
 * The timer's queue of tasks not yet due: a binary min-heap by due time (then by scheduling order), in which every
 * task keeps its own index ({@link ScheduledTask#heapIndex}), so a cancelled task leaves in O(log n) and a task that
 * is not queued is recognized at once. With {@code PriorityQueue.remove(Object)} each cancel searched the whole queue
 * under the timer's lock: with a million timeouts pending, a schedule-and-cancel cost 300 us and held off every
 * {@code schedule*} call and the checker's dispatch meanwhile. A cancelled task still leaves at once (not when it
 * would have been due), so memory follows the tasks that can still run.
 *
 * <p>Not thread-safe: guarded by {@link TaskTimer}'s lock, which also guards every task's index. A task is in the
 * queue at most once (a periodic task's next run is added only after its run has left the queue).
 */
final class TimerQueue {
    private static final int INITIAL = 16;
    private ScheduledTask<?>[] heap = new ScheduledTask<?>[INITIAL];
    private int size;

    private static final VarHandle SIZE;

    static {
        try {
            SIZE = MethodHandles.lookup().findVarHandle(TimerQueue.class, "size", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    boolean isEmpty() {
        return size == 0;
    }

    /**
     * The tasks queued, read without the timer's lock (statistics): opaque, an untorn value that one of the writes
     * under the lock stored; a snapshot needs no more, and must not wait for a {@code schedule*} call or a dispatch.
     */
    int sizeOpaque() {
        return (int) SIZE.getOpaque(this);
    }

    ScheduledTask<?> peek() {
        return heap[0]; // null when empty
    }

    void add(ScheduledTask<?> task) {
        if (task.heapIndex >= 0) {
            throw new IllegalStateException("already queued: " + task);
        }
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        siftUp(size++, task);
    }

    ScheduledTask<?> poll() {
        ScheduledTask<?> first = heap[0];
        if (first != null) {
            removeAt(0);
        }
        return first;
    }

    /** Removes {@code task} if it is queued; O(log n), or O(1) for a task that is not. */
    boolean remove(ScheduledTask<?> task) {
        int i = task.heapIndex;
        if (i < 0 || i >= size || heap[i] != task) {
            return false;
        }
        removeAt(i);
        return true;
    }

    /** Removes every task matching {@code filter}, then restores the heap in one pass: O(n). */
    void removeIf(Predicate<ScheduledTask<?>> filter) {
        int kept = 0;
        for (int i = 0; i < size; i++) {
            ScheduledTask<?> t = heap[i];
            if (filter.test(t)) {
                t.heapIndex = -1;
            } else {
                place(kept++, t); // leaves are not sifted below: each index must be right already
            }
        }
        Arrays.fill(heap, kept, size, null);
        size = kept;
        for (int i = (size >>> 1) - 1; i >= 0; i--) {
            siftDown(i, heap[i]);
        }
        shrinkIfSparse();
    }

    /** Removes and returns every task, in no particular order. */
    List<ScheduledTask<?>> drain() {
        List<ScheduledTask<?>> all = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            heap[i].heapIndex = -1;
            all.add(heap[i]);
        }
        heap = new ScheduledTask<?>[INITIAL];
        size = 0;
        return all;
    }

    private void removeAt(int i) {
        heap[i].heapIndex = -1;
        int last = --size;
        ScheduledTask<?> moved = heap[last];
        heap[last] = null;
        if (i != last) {
            siftDown(i, moved);
            if (heap[i] == moved) {
                siftUp(i, moved); // it may belong above the hole rather than below
            }
        }
        shrinkIfSparse();
    }

    /** A burst of a million timers must not keep a million-slot array once they are gone. */
    private void shrinkIfSparse() {
        if (heap.length > 4 * INITIAL && size < heap.length >>> 2) {
            heap = Arrays.copyOf(heap, heap.length >>> 1);
        }
    }

    private void siftUp(int k, ScheduledTask<?> task) {
        while (k > 0) {
            int parent = (k - 1) >>> 1;
            ScheduledTask<?> p = heap[parent];
            if (task.compareTo(p) >= 0) {
                break;
            }
            place(k, p);
            k = parent;
        }
        place(k, task);
    }

    private void siftDown(int k, ScheduledTask<?> task) {
        int half = size >>> 1;
        while (k < half) {
            int child = 2 * k + 1;
            ScheduledTask<?> c = heap[child];
            int right = child + 1;
            if (right < size && c.compareTo(heap[right]) > 0) {
                child = right;
                c = heap[child];
            }
            if (task.compareTo(c) <= 0) {
                break;
            }
            place(k, c);
            k = child;
        }
        place(k, task);
    }

    private void place(int k, ScheduledTask<?> task) {
        heap[k] = task;
        task.heapIndex = k;
    }
}
