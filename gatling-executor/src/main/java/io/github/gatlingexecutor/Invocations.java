package io.github.gatlingexecutor;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code invokeAll} and {@code invokeAny}: each task keeps its kind and context (SPEC point 1), so the calls dispatch
 * {@link TaskFuture}s through {@link Engine#dispatch} one by one, in order, and wait on them. Two things set them
 * apart from {@code AbstractExecutorService}'s: a timed call passes its deadline to a submit that waits for room
 * ({@link #invokeDeadline}), and a call from a task that would wait for tasks queued behind itself in its own lane
 * throws {@code IllegalStateException} instead of waiting for good: {@code invokeAll} through {@link TaskFuture#get},
 * an untimed {@code invokeAny} here, before it submits anything or once every task that could run has failed.
 */
final class Invocations {

    private Invocations() {
    }

    /**
     * The deadline of the timed {@code invokeAll} or {@code invokeAny} dispatching its tasks on this thread, for a
     * submit that waits for room ({@link Admission#await}): without it, each task could wait its whole
     * {@code maxWait} and the call overran its own timeout. Read only by a submitter about to park.
     */
    private static final ThreadLocal<Long> INVOKE_DEADLINE = new ThreadLocal<>();

    /** See {@link #INVOKE_DEADLINE}; null outside a timed invokeAll or invokeAny. */
    static Long invokeDeadline() {
        return INVOKE_DEADLINE.get();
    }

    static <T> List<Future<T>> invokeAll(Engine engine, Collection<? extends Callable<T>> tasks, boolean timed,
                                         long nanos) throws InterruptedException {
        Objects.requireNonNull(tasks, "tasks");
        List<TaskFuture<T>> futures = new ArrayList<>(tasks.size());
        for (Callable<T> t : tasks) {
            futures.add(TaskFuture.of(engine, Objects.requireNonNull(t, "an element of tasks"), t));
        }
        long deadline = Engine.deadlineIn(nanos);
        boolean done = false;
        try {
            // The deadline is checked before each dispatch, as AbstractExecutorService does: with a timeout that has
            // passed (zero or less) no task is submitted, and every future is returned cancelled.
            if (!dispatchAll(engine, futures, timed, deadline, true)) {
                return new ArrayList<>(futures); // finally cancels them all, the ones never submitted included
            }
            for (TaskFuture<T> f : futures) {
                if (f.isDone()) {
                    continue;
                }
                try {
                    if (timed) {
                        f.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                    } else {
                        f.get();
                    }
                } catch (CancellationException | ExecutionException ignored) {
                    // reported through the future
                } catch (TimeoutException timeout) {
                    return new ArrayList<>(futures); // finally cancels the unfinished
                }
            }
            done = true;
            return new ArrayList<>(futures);
        } finally {
            if (!done) {
                for (TaskFuture<T> f : futures) {
                    f.cancel(true);
                }
            }
        }
    }

    /**
     * Dispatches the tasks of an {@code invokeAll} or {@code invokeAny} in order. False if the call's timeout passed
     * first: while a task waited for room (see {@link #INVOKE_DEADLINE}), or, with {@code checkEach}, before a
     * dispatch.
     */
    private static <T> boolean dispatchAll(Engine engine, List<TaskFuture<T>> futures, boolean timed, long deadline,
                                           boolean checkEach) {
        if (timed) {
            INVOKE_DEADLINE.set(deadline);
        }
        try {
            for (TaskFuture<T> f : futures) {
                if (checkEach && timed && deadline - System.nanoTime() <= 0) {
                    return false;
                }
                engine.dispatch(f, false);
            }
            return true;
        } catch (Admission.CallerTimedOut timedOut) {
            return false;
        } finally {
            if (timed) {
                INVOKE_DEADLINE.remove();
            }
        }
    }

    static <T> T invokeAny(Engine engine, Collection<? extends Callable<T>> tasks, boolean timed, long nanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        Objects.requireNonNull(tasks, "tasks");
        if (tasks.isEmpty()) {
            throw new IllegalArgumentException("tasks is empty");
        }
        LinkedBlockingQueue<TaskFuture<T>> completed = new LinkedBlockingQueue<>();
        List<TaskFuture<T>> futures = new ArrayList<>(tasks.size());
        for (Callable<T> t : tasks) {
            TaskFuture<T> f = TaskFuture.of(engine, Objects.requireNonNull(t, "an element of tasks"), t);
            f.completion = completed;
            futures.add(f);
        }
        if (!timed && onlyBehindCaller(futures, futures.size()) != null) {
            // Every task would start only after the calling task returns: an untimed wait never would. Fail fast, as
            // get() does, before anything is submitted (a timed one just times out, as its contract says).
            throw TaskFuture.waitsForItself(futures.get(0).context);
        }
        long deadline = Engine.deadlineIn(nanos);
        try {
            // Every task is submitted whatever the clock says, as AbstractExecutorService's invokeAny does; only a
            // wait for room ends at the deadline.
            if (!dispatchAll(engine, futures, timed, deadline, false)) {
                throw new TimeoutException("no room for the tasks within the timeout");
            }
            ExecutionException last = null;
            for (int pending = futures.size(); pending > 0; pending--) {
                TaskFuture<T> behind = timed ? null : onlyBehindCaller(futures, pending);
                if (behind != null) {
                    // The tasks that could run have failed, and those left start only after the calling task returns:
                    // as above, an untimed wait would never end. (The ones left are cancelled below.)
                    throw TaskFuture.waitsForItself(behind.context);
                }
                TaskFuture<T> f = nextCompleted(engine, completed, timed, deadline);
                if (f == null) {
                    throw new TimeoutException("no task completed within the timeout");
                }
                try {
                    return f.get();
                } catch (ExecutionException e) {
                    last = e;
                } catch (CancellationException e) {
                    last = new ExecutionException("task was cancelled", e);
                }
            }
            throw last;
        } finally {
            for (TaskFuture<T> f : futures) {
                f.cancel(true);
            }
        }
    }

    /**
     * A future of {@code futures} not yet done, if the {@code pending} futures not yet taken from the completion queue
     * are all not done and all run after the calling task in its own lane (none of them can complete while it waits);
     * otherwise null. A future found done is one not taken yet (its completion may be on its way into the queue), so
     * the wait takes it instead: it may be the answer. Only a future that is not behind the caller can complete
     * during the look, and it is seen either done or not behind.
     */
    private static <T> TaskFuture<T> onlyBehindCaller(List<TaskFuture<T>> futures, int pending) {
        TaskFuture<T> behind = null;
        int notDone = 0;
        for (TaskFuture<T> f : futures) {
            if (!f.isDone()) {
                if (!f.queuesBehindCaller()) {
                    return null;
                }
                behind = f;
                notDone++;
            }
        }
        return notDone == pending ? behind : null;
    }

    /**
     * The next future of an {@code invokeAny} to complete, or null at the deadline. While a thread start has failed it
     * asks for the thread once per check period, as {@link TaskFuture#get} does: the caller may be the only one left
     * to ask.
     */
    private static <T> TaskFuture<T> nextCompleted(Engine engine, LinkedBlockingQueue<TaskFuture<T>> completed,
                                                   boolean timed, long deadline)
            throws InterruptedException {
        for (;;) {
            long wait = engine.askingWait(timed ? deadline - System.nanoTime() : Long.MAX_VALUE);
            if (wait == Long.MAX_VALUE) {
                return completed.take();
            }
            TaskFuture<T> f = completed.poll(wait, TimeUnit.NANOSECONDS);
            if (f != null || (timed && deadline - System.nanoTime() <= 0)) {
                return f;
            }
        }
    }
}
