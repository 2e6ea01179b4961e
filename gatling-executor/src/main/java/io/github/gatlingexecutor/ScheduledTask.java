package io.github.gatlingexecutor;

import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A delayed or periodic task. The {@link TaskTimer} holds it until due, then submits it like any other task, to its
 * lane if it is sequential or coalescing; a periodic task puts itself back after each successful run, so runs of one
 * periodic task never overlap. A periodic coalescing task whose run is replaced in its lane by a newer task skips
 * that run and stays scheduled ({@link #skipRun}). Like {@link TaskFuture}, the sequential and coalescing variants
 * implement the task's interface with its context.
 */
class ScheduledTask<V> extends TaskFuture<V> implements RunnableScheduledFuture<V> {
    private static final AtomicLong SEQUENCE = new AtomicLong();

    /** When due, in System.nanoTime() terms. Volatile: {@link #getDelay} may be called from any thread. */
    volatile long time;
    /** 0: one-shot; positive: fixed rate; negative: fixed delay of -period. */
    private final long period;
    private final long sequence = SEQUENCE.getAndIncrement(); // FIFO among tasks due at the same time
    /** Its place in the timer's queue, or -1 when not queued. Guarded by the timer's lock (see TimerQueue). */
    int heapIndex = -1;
    /**
     * Where a dispatch of it stands ({@link TaskTimer#dispatchLocked}): {@link TaskTimer#LANDED} (none under way, or
     * it is entering its lane or the ready queue), {@link TaskTimer#IN_FLIGHT} (out of the timer's queue, in no other
     * yet), {@link TaskTimer#HANDED_BACK} (a shutdownNow took it in flight). Guarded by the timer's lock.
     */
    int flight;

    ScheduledTask(Engine engine, Callable<V> callable, Object task, int kind, Object context, long time, long period) {
        super(engine, callable, task, kind, context);
        this.time = time;
        this.period = period;
    }

    @Override
    public boolean isPeriodic() {
        return period != 0;
    }

    @Override
    public long getDelay(TimeUnit unit) {
        return unit.convert(time - System.nanoTime(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
        if (other == this) {
            return 0;
        }
        if (other instanceof ScheduledTask) {
            ScheduledTask<?> o = (ScheduledTask<?>) other;
            long d = time - o.time;
            if (d != 0) {
                return d < 0 ? -1 : 1;
            }
            return Long.compare(sequence, o.sequence);
        }
        return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
    }

    /**
     * True from the start of a periodic run until its task has returned, so that {@code shutdown()} leaves the future
     * of a run in progress alone, as {@code ScheduledThreadPoolExecutor} does: that run ends, and only its failed
     * reschedule cancels the future ({@link TaskTimer#cancelPeriodic}).
     */
    private volatile boolean running;

    @Override
    public void run() {
        if (!isPeriodic()) {
            super.run();
            return;
        }
        // Volatile store, then the state's volatile read; shutdown writes the state, then reads this flag: either
        // this run sees the shutdown and stops here, or shutdown sees the run and leaves it to finish.
        running = true;
        boolean again = false;
        try {
            if (engine.state() != Engine.RUNNING) {
                cancel(false); // a run that fell due just before shutdown: periodic tasks stop at shutdown
            } else {
                again = runAndReset();
            }
        } finally {
            // Cleared before the reschedule: a shutdown that still saw the run in progress had written the state
            // before this store, so the reschedule below reads it, fails and cancels the future.
            running = false;
        }
        if (again) {
            time = nextTime();
            engine.reschedule(this, false);
        }
    }

    /** Whether a periodic run is in progress (see {@link #running}). */
    boolean runInProgress() {
        return running;
    }

    private long nextTime() {
        return period > 0 ? time + period : System.nanoTime() - period;
    }

    /**
     * This periodic task's run was replaced in its coalescing lane before it started: the run is skipped (it counts
     * as coalesced), and the schedule goes on from the next period after now. A fixed-rate task behind its schedule
     * (its lane was held for several periods) owes runs whose times have passed; the next of them, due at once, would
     * replace the newer task that replaced this run, and so on for every period owed: every update submitted while
     * it caught up would be dropped for runs due before it was submitted. Runs on the replacing submitter's thread;
     * the run is in no queue at that moment, so this is the only thread that puts it back.
     */
    void skipRun() {
        if (!isDone()) {
            long next = nextTime();
            long now = System.nanoTime();
            if (period > 0 && next - now <= 0) {
                next += ((now - next) / period + 1) * period; // the first time of the schedule after now
            }
            time = next;
            engine.reschedule(this, true);
        }
    }

    /** Whether {@code task} is a periodic scheduled task (whose replacement in a lane skips a run). */
    static boolean isPeriodic(Runnable task) {
        return task instanceof ScheduledTask && ((ScheduledTask<?>) task).isPeriodic();
    }

    /** The task could not enter the pool when due: complete its future exceptionally rather than drop it. */
    void failDispatch(Throwable cause) {
        failUnstarted(cause);
    }

    /**
     * Finished for good (cancelled, failed, or a one-shot run completed): a cancelled task leaves the timer at once,
     * and a periodic one leaves its set of live periodic tasks, whichever way it ended.
     */
    @Override
    protected void done() {
        super.done();
        if (isPeriodic() || isCancelled()) {
            engine.timer.remove(this);
        }
    }

    static <V> ScheduledTask<V> of(Engine engine, Object task, Callable<V> callable, long time, long period) {
        if (task instanceof SequentialRunnable) {
            return new Sequential<>(engine, callable, task, Engine.contextOf((SequentialRunnable) task), time, period);
        }
        if (task instanceof CoalescingRunnable) {
            return new Coalescing<>(engine, callable, task, Engine.contextOf((CoalescingRunnable) task), time, period);
        }
        return new ScheduledTask<>(engine, callable, task, PLAIN, null, time, period);
    }

    static final class Sequential<V> extends ScheduledTask<V> implements SequentialRunnable {
        Sequential(Engine engine, Callable<V> callable, Object task, Object context, long time, long period) {
            super(engine, callable, task, SEQUENTIAL, context, time, period);
        }

        @Override
        public Object context() {
            return context;
        }
    }

    static final class Coalescing<V> extends ScheduledTask<V> implements CoalescingRunnable {
        Coalescing(Engine engine, Callable<V> callable, Object task, Object context, long time, long period) {
            super(engine, callable, task, COALESCING, context, time, period);
        }

        @Override
        public Object context() {
            return context;
        }
    }
}
