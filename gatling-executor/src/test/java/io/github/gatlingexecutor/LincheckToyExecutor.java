package io.github.gatlingexecutor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A deliberately small ordered/coalescing executor (one thread per lane activation) used to prove that the
 * whole-executor Lincheck scenarios of {@link LincheckExecutorTest} can fail: with {@link Bug#NONE} it is correct
 * and the scenarios pass; each other {@link Bug} re-creates a race that ordered executors have shipped, and the
 * scenario written for it must find it.
 */
final class LincheckToyExecutor implements LincheckExecutorTest.Target {

    enum Bug {
        NONE,
        /** The drainer clears "scheduled" and leaves without looking again: a task offered meanwhile is stranded. */
        NO_RECHECK_ON_IDLE,
        /** The shutdown flag is checked outside the lock: a task is accepted after {@code shutdownNow} drained. */
        SHUTDOWN_CHECK_THEN_ACT,
        /** The coalescing drainer reads the slot and clears it in two steps: a task stored in between is lost. */
        TAKE_GET_THEN_SET,
        /** The coalescing lane lets a second drainer start while the first still runs its task. */
        COALESCING_DOUBLE_SCHEDULE
    }

    private final Bug bug;
    private final ConcurrentHashMap<Object, SeqLane> sequential = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Object, CoalLane> coalescing = new ConcurrentHashMap<>();
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private volatile boolean shutdown;
    private volatile boolean stopped;
    private final List<Thread> threads = new ArrayList<>();

    LincheckToyExecutor(Bug bug) {
        this.bug = bug;
    }

    private final class SeqLane {
        final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
        final AtomicBoolean scheduled = new AtomicBoolean();

        void drain() {
            for (;;) {
                Runnable r;
                while (!stopped && (r = queue.poll()) != null) {
                    runQuietly(r);
                }
                scheduled.set(false);
                if (bug == Bug.NO_RECHECK_ON_IDLE || stopped || queue.isEmpty()
                        || !scheduled.compareAndSet(false, true)) {
                    return;
                }
            }
        }
    }

    private final class CoalLane {
        final AtomicReference<Runnable> slot = new AtomicReference<>();
        final AtomicBoolean scheduled = new AtomicBoolean();

        void drain() {
            for (;;) {
                Runnable r;
                while (!stopped && (r = take()) != null) {
                    runQuietly(r);
                }
                scheduled.set(false);
                if (stopped || slot.get() == null || !scheduled.compareAndSet(false, true)) {
                    return;
                }
            }
        }

        Runnable take() {
            if (bug == Bug.TAKE_GET_THEN_SET) {
                Runnable r = slot.get();
                slot.set(null);
                return r;
            }
            return slot.getAndSet(null);
        }
    }

    private static void runQuietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException ignored) {
            // a task's failure does not stop its lane
        }
    }

    private void start(Runnable drain) {
        Thread t = new Thread(drain);
        synchronized (threads) {
            threads.add(t);
        }
        t.start();
    }

    private void enter() {
        if (bug == Bug.SHUTDOWN_CHECK_THEN_ACT) {
            if (shutdown) {
                throw new RejectedExecutionException("shut down");
            }
            return;
        }
        lifecycle.readLock().lock();
        if (shutdown) {
            lifecycle.readLock().unlock();
            throw new RejectedExecutionException("shut down");
        }
    }

    private void exit() {
        if (bug != Bug.SHUTDOWN_CHECK_THEN_ACT) {
            lifecycle.readLock().unlock();
        }
    }

    @Override
    public void sequential(Object context, Runnable task) {
        enter();
        try {
            SeqLane lane = sequential.computeIfAbsent(context, c -> new SeqLane());
            lane.queue.add(task);
            if (lane.scheduled.compareAndSet(false, true)) {
                start(lane::drain);
            }
        } finally {
            exit();
        }
    }

    @Override
    public void coalescing(Object context, Runnable task) {
        enter();
        try {
            CoalLane lane = coalescing.computeIfAbsent(context, c -> new CoalLane());
            lane.slot.set(task);
            if (bug == Bug.COALESCING_DOUBLE_SCHEDULE) {
                lane.scheduled.set(true);
                start(lane::drain);
            } else if (lane.scheduled.compareAndSet(false, true)) {
                start(lane::drain);
            }
        } finally {
            exit();
        }
    }

    @Override
    public void shutdown() {
        lifecycle.writeLock().lock();
        try {
            shutdown = true;
        } finally {
            lifecycle.writeLock().unlock();
        }
    }

    @Override
    public List<Runnable> shutdownNow() {
        List<Runnable> out = new ArrayList<>();
        lifecycle.writeLock().lock();
        try {
            shutdown = true;
            stopped = true;
            for (SeqLane lane : sequential.values()) {
                Runnable r;
                while ((r = lane.queue.poll()) != null) {
                    out.add(r);
                }
            }
            for (CoalLane lane : coalescing.values()) {
                Runnable r = lane.slot.getAndSet(null);
                if (r != null) {
                    out.add(r);
                }
            }
        } finally {
            lifecycle.writeLock().unlock();
        }
        return out;
    }

    @Override
    public boolean awaitTermination() throws InterruptedException {
        int joined = 0;
        for (;;) {
            Thread next;
            synchronized (threads) {
                if (joined == threads.size()) {
                    return true;
                }
                next = threads.get(joined);
            }
            next.join();
            joined++;
        }
    }

    @Override
    public long liveContexts() {
        return -1; // this toy never releases lanes
    }
}
