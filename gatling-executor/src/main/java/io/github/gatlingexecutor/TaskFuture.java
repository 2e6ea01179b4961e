package io.github.gatlingexecutor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Queue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The future of a {@code submit}/{@code invoke*} task. It keeps the task's kind and context: the sequential and
 * coalescing variants implement {@link SequentialRunnable} / {@link CoalescingRunnable} with the task's context, so
 * they travel through the same lanes as the task would, and a caller who gets them back from {@code shutdownNow}
 * still sees what they were.
 */
class TaskFuture<V> extends FutureTask<V> {
    static final int PLAIN = 0;
    static final int SEQUENTIAL = 1;
    static final int COALESCING = 2;

    final Engine engine;
    final int kind;
    final Object context;
    /**
     * The caller's task, until the future is done: then dropped, as {@code FutureTask} drops its callable, so a future
     * kept (or cancelled while queued behind a long backlog) does not keep the task and what it captured. Written by
     * the completing thread, read racily by {@link #toString} (a stale value is harmless).
     */
    private Object task;
    /** The caller's task's class, for JFR events, which may be written after the task has completed. */
    private final Class<?> taskClass;
    /** invokeAny's completion queue, or null. Written before the future is submitted. */
    Queue<TaskFuture<V>> completion;
    /**
     * Which came first of a failure of the task, run by this executor's worker, and a cancel: 0 while neither has,
     * then {@link #FAILING} or {@link #CANCELLING}, for good. A failure is counted in {@code failed()} before the
     * future completes (see setException), and a cancel that came in between completed the future instead: the count
     * had to be taken back, and a snapshot taken in between read {@code failed()} one higher than the next. With the
     * outcome claimed first, a failure counts only once it is sure to complete the future, and a cancel that finds it
     * claimed loses, as against a task that has completed.
     */
    private volatile int claim;
    private static final int FAILING = 1;
    private static final int CANCELLING = 2;
    private static final VarHandle CLAIM;

    static {
        try {
            CLAIM = MethodHandles.lookup().findVarHandle(TaskFuture.class, "claim", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    TaskFuture(Engine engine, Callable<V> callable, Object task, int kind, Object context) {
        super(callable);
        this.engine = engine;
        this.task = task;
        this.taskClass = task.getClass();
        this.kind = kind;
        this.context = context;
    }

    /** A future for {@code task} (a Runnable or Callable) with its kind and context read off the task. */
    static <V> TaskFuture<V> of(Engine engine, Object task, Callable<V> callable) {
        if (task instanceof SequentialRunnable) {
            return new Sequential<>(engine, callable, task, Engine.contextOf((SequentialRunnable) task));
        }
        if (task instanceof CoalescingRunnable) {
            return new Coalescing<>(engine, callable, task, Engine.contextOf((CoalescingRunnable) task));
        }
        return new TaskFuture<>(engine, callable, task, PLAIN, null);
    }

    /**
     * Counted in {@code executed()} before the future completes, so that a caller whose {@code get()} has returned sees
     * it counted (see {@link Worker#countExecutedBeforeCompletion}). A future cancelled while its task runs is done at
     * the cancel, and counted when the task returns.
     */
    @Override
    protected void set(V v) {
        runByOwnWorker();
        super.set(v);
    }

    /**
     * Counted before the future completes, so that whoever sees it fail also sees it in {@code failed()} and
     * {@code executed()}; but only once the failure has claimed the outcome ({@link #claim}): a cancel that came first
     * completes the future, and the throwable (usually the interrupt of {@code cancel(true)}) is dropped, so nobody
     * sees a failure. Only for a run by this executor's worker: a future that {@code shutdownNow()} returned, run by
     * its caller, is not a task of the executor's, and counted as failed it showed one task both returned and run.
     */
    @Override
    protected void setException(Throwable t) {
        if (!runByOwnWorker()) {
            super.setException(t);
            return;
        }
        if (!CLAIM.compareAndSet(this, 0, FAILING)) {
            // A cancel came first (the common way to get here: cancel(true)'s interrupt); it completes the future.
            // Completing it here as well could win FutureTask's own race against that cancel, uncounted.
            return;
        }
        try {
            engine.countFailedFuture(1);
        } finally {
            // Nothing else can complete it now (a cancel waits for this), so this must, whatever the count met.
            super.setException(t);
        }
    }

    /**
     * As {@link FutureTask#cancel}, unless the task, run by this executor's worker, has already failed: then the
     * failure completes the future (see {@link #claim}), and this waits for it, since the future must be done when
     * cancel returns. The wait is the worker's last few instructions of {@link #setException}, up to FutureTask's
     * own state change, before any completion code runs (a {@code done()} that takes a lock the canceller holds).
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        for (;;) {
            int c = claim;
            if (c == CANCELLING || (c == 0 && CLAIM.compareAndSet(this, 0, CANCELLING))) {
                return super.cancel(mayInterruptIfRunning);
            }
            if (c == FAILING) {
                for (int waits = 0; !isDone(); ) {
                    waits = Waiting.pause(waits);
                }
                return false;
            }
        }
    }

    /** Whether a worker of this executor runs this future as its task now; if so, it is counted as executed. */
    private boolean runByOwnWorker() {
        Worker w = Worker.current();
        return w != null && w.engine == engine && w.countExecutedBeforeCompletion(this);
    }

    /**
     * Completes the future with {@code cause} for a task that never started (it could not enter its lane): not a
     * task's failure, so not in {@code failed()}, which counts only tasks that ran (its count would otherwise
     * exceed {@code executed()} and {@code submitted()}).
     */
    void failUnstarted(Throwable cause) {
        super.setException(cause);
    }

    @Override
    protected void done() {
        task = null;
        Queue<TaskFuture<V>> q = completion;
        if (q != null) {
            q.add(this);
        }
    }

    /** While a thread start has failed, asks for the thread again once per check period ({@link Engine#askingWait}). */
    @Override
    public V get() throws InterruptedException, ExecutionException {
        checkNotQueuedBehindCaller();
        for (long wait; !isDone() && (wait = engine.askingWait(Long.MAX_VALUE)) != Long.MAX_VALUE; ) {
            try {
                return super.get(wait, TimeUnit.NANOSECONDS);
            } catch (TimeoutException askAgain) {
                // the next round asks again, unless a start has worked meanwhile
            }
        }
        return super.get();
    }

    /**
     * A timed wait is not a deadlock: it times out, as the contract says, even on a task queued behind the caller.
     * While a thread start has failed, it asks for the thread again once per check period, as {@link #get()} does.
     */
    @Override
    public V get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        if (isDone() || !engine.startsFailed()) {
            return super.get(timeout, unit);
        }
        long deadline = Engine.deadlineIn(unit.toNanos(timeout));
        for (;;) {
            try {
                return super.get(engine.askingWait(deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                if (deadline - System.nanoTime() <= 0) {
                    throw e;
                }
            }
        }
    }

    /**
     * A task that waits for a sequential task queued in its own lane waits for itself: the lane runs one task at a
     * time, so the awaited one cannot start until the waiter returns. Rather than hang, fail fast.
     */
    private void checkNotQueuedBehindCaller() {
        if (!isDone() && queuesBehindCaller()) {
            throw waitsForItself(context);
        }
    }

    /** What a wait for tasks queued behind the waiting task in its own sequential {@code context} throws. */
    static IllegalStateException waitsForItself(Object context) {
        return new IllegalStateException("a task of sequential context " + Messages.describe(context)
                + " waits for a task queued behind it in the same context; it would wait forever");
    }

    /** Whether this task runs in the sequential lane the calling thread is running a task of, so only after it. */
    boolean queuesBehindCaller() {
        if (kind != SEQUENTIAL) {
            return false;
        }
        Worker w = Worker.current();
        if (w == null || w.engine != engine) {
            return false;
        }
        Object running = w.sequentialContext();
        return running != null && running.equals(context);
    }

    /** The class of the caller's Runnable or Callable this future runs. */
    Class<?> userTaskClass() {
        return taskClass;
    }

    @Override
    public String toString() {
        Object t = task;
        return t == null ? super.toString() : super.toString() + "[" + t + "]";
    }

    static final class Sequential<V> extends TaskFuture<V> implements SequentialRunnable {
        Sequential(Engine engine, Callable<V> callable, Object task, Object context) {
            super(engine, callable, task, SEQUENTIAL, context);
        }

        @Override
        public Object context() {
            return context;
        }
    }

    static final class Coalescing<V> extends TaskFuture<V> implements CoalescingRunnable {
        Coalescing(Engine engine, Callable<V> callable, Object task, Object context) {
            super(engine, callable, task, COALESCING, context);
        }

        @Override
        public Object context() {
            return context;
        }
    }
}
