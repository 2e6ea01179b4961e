package io.github.gatlingexecutor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Delayed and periodic tasks until they are due. The checker thread drives it ({@link #dispatchDue}); when a task is
 * due it is submitted to its lane or the ready queue like any other task, and a periodic task puts itself back after
 * each run, so runs of one periodic task never overlap. A task due already when scheduled is submitted by the
 * scheduling call itself ({@link #scheduleNew}). While the thread factory cannot make the checker
 * ({@link Checker#absent}), the workers drive it: between items ({@link #dispatchUnattended}) and by timing their
 * parks ({@link #unattendedWait}); they time their parks by it, and look at it every few dozen items, while the
 * checker's thread does not run its rounds either ({@link Checker#unattended}). A scheduled task is accepted either
 * way, as {@code ScheduledThreadPoolExecutor} accepts one while it has no thread.
 *
 * <h2>One lock, and no user callback under it</h2>
 * Everything here is guarded by {@code lock}, and dispatching happens under it: a due task is therefore either still
 * in the queue or already in its lane for anyone who takes the lock ({@link #noDelayedWork} for quiescence,
 * {@link #drain} for {@code shutdownNow}), never in flight between the two. Dispatching can replace a pending
 * coalescing task whose future must be cancelled, and cancelling runs the future's {@code done()}, which may be the
 * caller's code: such completions are collected while the lock is held and run after it is released
 * ({@link #completeOutsideLock}), so no user callback ever runs while a submitter or a worker may be waiting for this
 * lock. What does run under it is the lane lookup (the context's {@code hashCode} and {@code equals}) and, when a
 * dispatch starts a worker, the thread factory: on the checker's thread, and on a scheduling caller's for a task due
 * at once ({@link #scheduleNew}).
 *
 * <h2>Periodic tasks at shutdown</h2>
 * Every periodic task that is not done is also in {@code periodic}, wherever its next run waits (in the queue, or
 * already due and waiting in its lane), so {@code shutdown()} cancels all of them at once, as
 * {@code ScheduledThreadPoolExecutor} does by default, except one whose run is in progress: that one is cancelled when
 * the run ends; {@code shutdownNow()} cancels none and returns those that wait.
 */
final class TaskTimer {
    private final Engine engine;
    private final ReentrantLock lock = new ReentrantLock();
    /** Tasks not yet due. Guarded by lock. */
    private final TimerQueue delayed = new TimerQueue();
    /**
     * Periodic tasks not yet done, wherever their next run waits. Guarded by lock, as is its replacement: an
     * {@code IdentityHashMap} never shrinks its table, so a burst of periodic tasks cancelled again kept a table the size
     * of the burst for the executor's life (17 MB after a million), while {@link #delayed} gives its array back. The set
     * is made again once it holds under a quarter of what it held at most since it was made ({@link #removePeriodic}).
     */
    private Set<ScheduledTask<?>> periodic = newPeriodicSet();
    /** The most {@link #periodic} has held since it was made. Guarded by lock. */
    private int periodicPeak;
    /** Set by {@link #drainAfterStop}: no skipped periodic run is taken back after it. Guarded by lock. */
    private boolean drainedAfterStop;
    /**
     * {@link #cancelPeriodic} calls that have taken the periodic tasks out and not yet cancelled them all (they cancel
     * outside the lock). Changed under the lock; {@code shutdownNow} waits for it to be zero ({@link
     * #awaitPeriodicCancels}).
     */
    private volatile int periodicCancels;
    /** Completions that came up while the lock was held; run after it is released. Guarded by lock. */
    private final List<Runnable> afterUnlock = new ArrayList<>();
    /**
     * The tasks whose dispatch is under way, on the thread that holds the lock: a stack, since the caller's code a
     * dispatch runs may schedule a task due at once, whose dispatch nests. Guarded by lock. See
     * {@link #dispatchLocked}.
     */
    private final List<ScheduledTask<?>> dispatching = new ArrayList<>();
    /**
     * A look for termination ({@link #noDelayedWork}) was answered no because of a dispatch under way on the looking
     * thread: the outermost dispatch looks again once it has let the lock go. Guarded by lock.
     */
    private boolean terminationDeferred;
    /** Values of {@link ScheduledTask#flight}. */
    static final int LANDED = 0;
    static final int IN_FLIGHT = 1;
    static final int HANDED_BACK = 2;
    /**
     * When the queue's first task is due, as last seen under the lock (null: the queue was empty), for workers that
     * drive the timer without it ({@link #dispatchUnattended}). Written when an add makes a new first task and after
     * every dispatch, the one a task due at once makes on its caller's thread included; a removal leaves it alone, so
     * it is never later than the true first task (a stale one costs a look under the lock, which refreshes it).
     *
     * <p>A time, not the task: a periodic task moves its own time on when it runs, so a hint naming a task that a
     * dispatch had taken out of the queue would read, once that task ran, its next run's time, a period away, while
     * the tasks behind it fell due (with no checker, the workers parked until then). Volatile: see
     * {@link Checker#absent} for the hand-shake with a parking worker.
     */
    private volatile Due firstDue;

    /** A due time, immutable: see {@link #firstDue}. */
    private static final class Due {
        final long time;

        Due(long time) {
            this.time = time;
        }
    }

    TaskTimer(Engine engine) {
        this.engine = engine;
    }

    /**
     * Adds a task (a new one, or a periodic task's next run). Returns false once the executor is shut down, except
     * that a periodic task whose pending run was replaced ({@code skipped}, see {@link Engine#reschedule}) is also
     * taken during {@code shutdownNow}, until {@link #drainAfterStop} hands it to the caller (the timer dispatches
     * nothing once STOP is written). Whoever dispatches due tasks is told: the checker, or, while it is
     * {@linkplain Checker#absent absent} or does not run its rounds ({@link Checker#unattended}), an idle worker, so
     * that its park is timed by the new first task.
     */
    boolean schedule(ScheduledTask<?> task, boolean skipped) {
        boolean first;
        lock.lock();
        try {
            int state = engine.state();
            if (state != Engine.RUNNING && !(skipped && state == Engine.STOP && !drainedAfterStop)) {
                return false;
            }
            delayed.add(task);
            if (task.isPeriodic()) {
                addPeriodic(task);
            }
            if (task.isDone()) {
                // Cancelled between its run's end and this add (a periodic task's next run): its done() took this
                // lock before we did and found nothing to remove, and nothing else would (a done task is skipped when
                // due, never dropped from periodic). Its state was written before that done() took the lock, so the
                // read here sees it; a cancel after our unlock finds the task here and removes it itself.
                delayed.remove(task);
                removePeriodic(task);
                return true;
            }
            first = delayed.peek() == task;
            if (first) {
                refreshHint();
            }
        } finally {
            lock.unlock();
        }
        if (first) {
            // The checker may be parked until a later due time. Without it, a parked worker times its next park by
            // this task (the hint is written before, and the worker reads it after registering as parked). So does a
            // parked worker while the checker's published thread is not running its rounds (Checker#unattended): one
            // from the factory may have ended, or end later, without running it, and waking it does nothing. The flags
            // are read after the hint is written; a look that sets absent afterwards wakes idle workers itself.
            if (!engine.checker.wake() || engine.checker.unattended()) {
                engine.pool.wakeIdle();
            }
        }
        return true;
    }

    /**
     * A new task from a {@code schedule*} call. A task due at once ({@code dueNow}: a delay of zero or less) is
     * submitted to its lane or the ready queue right here, on the caller's thread, so that it keeps its place among
     * that caller's submissions, as with {@code ScheduledThreadPoolExecutor}, whose one queue orders such a task by
     * its time: handed to the checker, a later {@code execute} to the same context would overtake it. Anything else
     * waits in the queue for the checker. Returns false once the executor is shut down.
     */
    boolean scheduleNew(ScheduledTask<?> task, boolean dueNow) {
        // Decided by the delay asked for, not by the clock: a positive delay that has run out by now still goes to
        // the checker, as it always does, whatever the machine's load.
        if (!dueNow) {
            if (!schedule(task, false)) {
                return false;
            }
            // A worker first, then the checker (a worker's start tries it already): a thread factory that gives one
            // thread gives it to a worker, which can drive the timer, where the checker could run no task.
            if (!engine.pool.policy.delayedTaskScheduled(engine.pool)) {
                startChecker();
            }
            return true;
        }
        if (engine.state() != Engine.RUNNING) {
            return false;
        }
        List<Runnable> completions = List.of();
        boolean recheck = false;
        lock.lock();
        try {
            // Under the lock, as the checker's dispatch: quiescence and shutdownNow take it, so they see this task
            // in its lane (or this call sees the shutdown and submits nothing), never in flight between the two.
            if (engine.state() != Engine.RUNNING) {
                return false;
            }
            if (task.isPeriodic()) {
                addPeriodic(task);
            }
            // Tasks due before this one go first, as the checker would have dispatched them had it been on time:
            // a task scheduled a millisecond ago for now must not be overtaken in its lane by this one.
            dispatchDueLocked(task.time);
            try {
                dispatchLocked(task);
            } catch (Throwable failure) {
                removePeriodic(task);
                throw failure;
            } finally {
                completions = takeCompletions();
            }
        } finally {
            recheck = takeDeferredTermination();
            lock.unlock();
            try {
                if (recheck) {
                    engine.wakeForTermination();
                }
            } finally {
                runAll(completions); // each may end a count that termination waits for: never skipped
            }
        }
        if (task.isPeriodic()) {
            // Its later runs are the timer's. After the first run's dispatch, which starts a worker if none lives: a
            // thread factory that gives one thread gives it to that worker, not to the checker, which runs no task.
            startChecker();
        }
        return true;
    }

    /**
     * Tries the checker's start again if it is not running. A failure is counted and survived: the task stays, and the
     * workers dispatch it meanwhile (see {@link Checker#absent}). Only calls of {@code schedule*} try here, not a
     * periodic task's reschedule after each run, which would ask a failing factory once per period.
     */
    private void startChecker() {
        WorkerPool pool = engine.pool;
        if (pool.workers().length == 0 && pool.startsInProgress() > 0) {
            // The first worker's start is under way (its factory call may be slow): that start tries the checker
            // right after its worker (WorkerPool#tryStart). Tried here first, the checker took the thread a factory
            // of one thread had for that worker, whose start then failed, and no task ever ran.
            return;
        }
        if (engine.checker.ensureStarted() != null) {
            engine.pool.countStartFailure();
        }
    }

    /**
     * Called by a worker between items while the checker is {@linkplain Checker#absent absent} (every few dozen items
     * while it does not run its rounds), and when a park it timed by this timer ends: dispatches the due tasks, if the
     * first one is due. Costs a volatile read and a clock read until then.
     */
    void dispatchUnattended() {
        Due first = firstDue;
        if (first != null) {
            long now = System.nanoTime();
            if (first.time - now <= 0) {
                dispatchDue(now);
            }
        }
    }

    /**
     * For a worker about to park while the checker is {@linkplain Checker#unattended unattended}: nanoseconds until
     * the first task is due (zero or less: due now), or {@link Long#MAX_VALUE} if none waits.
     */
    long unattendedWait() {
        Due first = firstDue;
        return first == null ? Long.MAX_VALUE : first.time - System.nanoTime();
    }

    private static Set<ScheduledTask<?>> newPeriodicSet() {
        return Collections.newSetFromMap(new IdentityHashMap<>());
    }

    /** The caller holds the lock. */
    private void addPeriodic(ScheduledTask<?> task) {
        periodic.add(task);
        periodicPeak = Math.max(periodicPeak, periodic.size());
    }

    /**
     * The caller holds the lock. Makes the set again when it has shrunk to under a quarter of its peak: the copy costs
     * what the removals since the peak cost, so O(1) a removal, amortized.
     */
    private void removePeriodic(ScheduledTask<?> task) {
        if (periodic.remove(task) && periodicPeak > 64 && periodic.size() < periodicPeak >>> 2) {
            Set<ScheduledTask<?>> smaller = newPeriodicSet();
            smaller.addAll(periodic);
            periodic = smaller;
            periodicPeak = smaller.size();
        }
    }

    /** The caller holds the lock: a new empty set, not a {@code clear()} that keeps the table. */
    private void forgetAllPeriodic() {
        periodic = newPeriodicSet();
        periodicPeak = 0;
    }

    /** A scheduled task was cancelled or finished for good. */
    void remove(ScheduledTask<?> task) {
        forget(task);
        if (engine.isShutdown()) {
            // It may have been the last thing the executor was waiting for: let idle workers and the checker look.
            engine.wakeForTermination();
        }
    }

    private void forget(ScheduledTask<?> task) {
        lock.lock();
        try {
            delayed.remove(task);
            removePeriodic(task);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Submits every due task to its lane or the ready queue. Returns when the next task is due (System.nanoTime), or
     * Long.MAX_VALUE if none waits. Called by the checker thread, or by workers while it is absent.
     */
    long dispatchDue(long now) {
        long next;
        List<Runnable> completions;
        boolean recheck;
        lock.lock();
        try {
            dispatchDueLocked(now);
            ScheduledTask<?> first = delayed.peek();
            next = first == null ? Long.MAX_VALUE : first.time;
            completions = takeCompletions();
        } finally {
            recheck = takeDeferredTermination();
            lock.unlock();
        }
        try {
            if (recheck) {
                engine.wakeForTermination();
            }
        } finally {
            runAll(completions); // each may end a count that termination waits for: never skipped
        }
        return next;
    }

    /** Submits every task due at {@code now}, in order of due time. The caller holds the lock. */
    private void dispatchDueLocked(long now) {
        ScheduledTask<?> t;
        // STOP is re-read per task: shutdownNow drains this queue under the same lock, so a task is either
        // dispatched before it starts draining or returned by it, never both.
        while (!engine.stopping() && (t = delayed.peek()) != null && t.time - now <= 0) {
            delayed.poll();
            if (!t.isDone()) {
                try {
                    dispatchLocked(t);
                } catch (Throwable failure) {
                    // A context whose hashCode/equals throws fails here, at the lane lookup. The caller learns it
                    // through the future; the checker (or the scheduling caller) carries on.
                    ScheduledTask<?> failed = t;
                    removePeriodic(failed);
                    completeOutsideLock(() -> failed.failDispatch(failure));
                }
            }
        }
        refreshHint();
    }

    /**
     * Submits {@code t}, taken out of the queue, to its lane or the ready queue. The caller holds the lock. On its
     * way the submit runs the caller's code: the context's {@code hashCode} and {@code equals} at the lane's lookup,
     * and the thread factory. A {@code shutdownNow()} called from there drains this timer, the ready queue and the
     * lanes on this very thread (the lock is reentrant), while {@code t} is in none of them: entering a lane made
     * after the lanes were walked, it would be neither run nor returned. So while {@code t} is in flight,
     * {@link #drain} hands it back with the tasks not due, and the submit, which asks {@link #land} before its task
     * enters anything, leaves it out.
     */
    private void dispatchLocked(ScheduledTask<?> t) {
        t.flight = IN_FLIGHT;
        dispatching.add(t);
        try {
            engine.dispatch(t, true);
        } finally {
            dispatching.remove(dispatching.size() - 1);
            if (t.flight == IN_FLIGHT) {
                t.flight = LANDED; // a dispatch that failed: nothing to hand back
            }
        }
    }

    /**
     * Called by a timer's submit ({@code internal}; the caller holds the lock) right before {@code task} enters its
     * lane or the ready queue, with no caller's code in between: false if a {@code shutdownNow()} took it in flight
     * (the submit then leaves it out), else it is landed, and a {@code shutdownNow()} from then on finds it where it
     * went (from the thread factory that starts a worker for it, say).
     */
    boolean land(Runnable task) {
        ScheduledTask<?> t = (ScheduledTask<?>) task;
        if (t.flight == HANDED_BACK) {
            return false;
        }
        t.flight = LANDED;
        return true;
    }

    /**
     * The caller holds the lock, about to let it go: whether a look for termination was deferred for a dispatch that
     * has ended since (see {@link #noDelayedWork}); the caller then looks again, once the lock is free. Not while an
     * outer dispatch is still under way on this thread: the outermost one looks.
     */
    private boolean takeDeferredTermination() {
        if (!terminationDeferred || !dispatching.isEmpty()) {
            return false;
        }
        terminationDeferred = false;
        return true;
    }

    /** A timer's submit found its lane released, and looks the context up again: {@code task} is in flight again. */
    void takeOff(Runnable task) {
        ((ScheduledTask<?>) task).flight = IN_FLIGHT;
    }

    /** Writes the first task's due time to the hint, if it changed. The caller holds the lock. */
    private void refreshHint() {
        ScheduledTask<?> first = delayed.peek();
        Due hint = firstDue;
        if (first == null) {
            if (hint != null) {
                firstDue = null;
            }
        } else if (hint == null || hint.time != first.time) {
            firstDue = new Due(first.time);
        }
    }

    /**
     * Cancels {@code future} now, or, if the calling thread holds this timer's lock (the checker dispatching a
     * coalescing task that replaced it), as soon as the lock is released.
     */
    void cancelReplaced(Future<?> future) {
        if (lock.isHeldByCurrentThread()) {
            // Counted in flight until the cancel is made, for termination (see Engine#completionBegins): the
            // replacing dispatch's own count ends as it returns, before the lock is released.
            engine.completionBegins();
            completeOutsideLock(() -> {
                try {
                    engine.cancelReplacedFuture(future);
                } finally {
                    engine.completionEnds();
                }
            });
            return;
        }
        try {
            engine.cancelReplacedFuture(future);
        } catch (Throwable failed) {
            // The replaced task's own code (a Future of the caller's whose cancel or done() throws), run on the
            // thread whose submit replaced it: that submit has been accepted, and must not throw for another task.
            engine.reportUncaught(failed);
        }
    }

    private void completeOutsideLock(Runnable completion) {
        afterUnlock.add(completion);
    }

    private List<Runnable> takeCompletions() {
        if (afterUnlock.isEmpty()) {
            return List.of();
        }
        List<Runnable> out = new ArrayList<>(afterUnlock);
        afterUnlock.clear();
        return out;
    }

    private void runAll(List<Runnable> completions) {
        for (Runnable r : completions) {
            try {
                r.run();
            } catch (Throwable failure) {
                engine.reportUncaught(failure);
            }
        }
    }

    /**
     * Shutdown: every periodic task stops (cancelled, and dropped from the queue), including one whose run is due and
     * waiting in its lane (it will not start); delayed one-shot tasks stay and run when due. A run in progress is not
     * cancelled under its caller's feet: it finishes, its reschedule then finds the executor shut down and cancels
     * the future, as {@code ScheduledThreadPoolExecutor} does (see ScheduledTask#running for the race with it).
     */
    void cancelPeriodic() {
        List<ScheduledTask<?>> stop;
        lock.lock();
        try {
            if (engine.stopping()) {
                // A shutdownNow() called meanwhile wrote STOP before it took this lock to drain: the periodic tasks
                // waiting for a run are its to return, neither done nor cancelled. Cancelled here, after its drain
                // (a task stays in the periodic set until its last drain), a future it returned was done.
                return;
            }
            stop = new ArrayList<>(periodic);
            forgetAllPeriodic();
            delayed.removeIf(t -> t.isPeriodic() || t.isDone());
            periodicCancels++;
        } finally {
            lock.unlock();
        }
        try {
            for (ScheduledTask<?> t : stop) {
                if (!t.runInProgress()) {
                    t.cancel(false);
                }
            }
        } finally {
            lock.lock();
            try {
                periodicCancels--;
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Whether the calling thread holds the timer's lock: it then runs user code called under it (a context's hashCode
     * or the thread factory, on a dispatch), and must not wait for anything that takes the lock.
     */
    boolean isHeldByCurrentThread() {
        return lock.isHeldByCurrentThread();
    }

    /**
     * Whether a {@code shutdown()} has taken the periodic tasks out and not yet cancelled them all: after a
     * {@code shutdownNow} that did not wait for it ({@link #awaitPeriodicCancels}), termination does (see
     * Engine#readyToTerminate); shutdown() looks again once its cancels are done.
     */
    boolean cancelling() {
        return periodicCancels != 0;
    }

    /**
     * For {@code shutdownNow}, after its first drain: waits until the periodic tasks that a {@code shutdown()} took
     * out before it (see {@link #cancelPeriodic}) are cancelled, a few instructions each. A run of one waiting in its
     * lane is then seen done by the lane drain, which leaves it out; otherwise it could be returned and cancelled
     * after, as {@code ScheduledThreadPoolExecutor}, whose shutdown and shutdownNow exclude each other, never does.
     * A shutdown that takes this lock after that drain finds STOP and takes nothing.
     */
    void awaitPeriodicCancels() {
        if (isHeldByCurrentThread()) {
            // shutdownNow called from code run under this lock (a context's hashCode or the thread factory, on a
            // dispatch): each cancel waited for takes this lock (the task leaves the timer, the count goes down), so
            // the wait would never end. The cancels finish once the caller lets the lock go; a run of theirs waiting
            // in a lane may then be returned and cancelled after, the race the wait excludes otherwise.
            return;
        }
        for (int waits = 0; periodicCancels != 0; ) {
            waits = Waiting.pause(waits);
        }
    }

    /**
     * shutdownNow: every task not yet due, periodic ones included, for the caller; none is cancelled. A task cancelled
     * already is left out: its state was written before its done() waits for this lock to take it out of the queue.
     */
    List<ScheduledTask<?>> drain() {
        List<ScheduledTask<?>> notDue;
        lock.lock();
        try {
            notDue = delayed.drain();
            firstDue = null;
            // Not empty only on the thread of a dispatch under way: a shutdownNow() from the caller's code it runs
            // (see dispatchLocked).
            for (ScheduledTask<?> t : dispatching) {
                if (t.flight == IN_FLIGHT) {
                    t.flight = HANDED_BACK;
                    notDue.add(t);
                }
            }
        } finally {
            lock.unlock();
        }
        notDue.removeIf(ScheduledTask::isDone);
        return notDue;
    }

    /**
     * shutdownNow's last look, after its lanes are closed and the put-backs of skipped periodic runs are done: those
     * tasks, for the caller; after it the timer takes no more. The periodic tasks are forgotten too: those shutdownNow
     * returned are the caller's now (never done unless the caller cancels or runs them, so their own done() would never
     * take them out), and one whose run is in progress is cancelled when the run ends, its reschedule refused. Kept,
     * they held every task shutdownNow handed back, and all it captured, for as long as the terminated executor was
     * referenced.
     */
    List<ScheduledTask<?>> drainAfterStop() {
        lock.lock();
        try {
            drainedAfterStop = true;
            if (!periodic.isEmpty()) {
                // Only when it holds some: nothing to give back otherwise. (A clear() here walked the whole table, a
                // loop of 64 steps that LincheckLaneTest's deep model check of shutdownNow took for a livelock.)
                forgetAllPeriodic();
            }
        } finally {
            lock.unlock();
        }
        return drain();
    }

    /** Tasks waiting to become due, for statistics: read without the lock (see TimerQueue#sizeOpaque). */
    int delayedCountOpaque() {
        return delayed.sizeOpaque();
    }

    /**
     * True if no task waits to become due or for a shutdown's cancel; a dispatch in flight holds the lock, so it is
     * either seen or finished.
     */
    boolean noDelayedWork() {
        lock.lock();
        try {
            if (!dispatching.isEmpty()) {
                // This thread is dispatching (a shutdown() from the caller's code the dispatch runs, see
                // dispatchLocked): its task is in no lane yet, and terminated now, the executor would never run it.
                terminationDeferred = true;
                return false;
            }
            // Periodic tasks a shutdown() has taken out and not yet cancelled are work still: terminated before their
            // cancels, the executor would have futures of its own neither done nor cancelled. shutdown() wakes the
            // pool for termination after its cancels, so the quiescence is checked again then.
            return delayed.isEmpty() && periodicCancels == 0;
        } finally {
            lock.unlock();
        }
    }
}
