package io.github.gatlingexecutor;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A {@link ScheduledExecutorService} that knows about task <em>contexts</em>.
 *
 * <p>Three kinds of task share one pool of threads:
 * <ul>
 *   <li><b>sequential</b> tasks of one context run one at a time, in submission order, each seeing the memory
 *       effects of the one before it; different contexts run in parallel;</li>
 *   <li><b>coalescing</b> tasks of one context run one at a time, and a task that has not started yet is replaced by
 *       a newer one of the same context (the replaced one never runs; the newest always does);</li>
 *   <li>any other {@link Runnable} runs unordered.</li>
 * </ul>
 * {@link #execute(Runnable)} tells the kinds apart by {@link SequentialRunnable} and {@link CoalescingRunnable};
 * {@link #sequential(Object)} and {@link #coalescing(Object)} give an {@link Executor} bound to one context for tasks
 * that are plain {@code Runnable}s. Every other submission method ({@code submit}, {@code invokeAll},
 * {@code invokeAny}, {@code schedule*}) keeps a task's kind and context.
 *
 * <p>Tasks run on the executor's worker threads, never on the submitting thread nor on the checker thread (which
 * only dispatches scheduled tasks when due). After {@link #shutdown()} every submission throws
 * {@link RejectedExecutionException} ({@link #offer} returns {@code false}). With a capacity limit set
 * ({@link GatlingExecutor.Builder#maxQueued(int)}, {@link GatlingExecutor.Builder#maxQueuedPerContext(int)}),
 * {@code execute}, a lane's {@code execute}, {@code submit} and {@code invoke*} follow the {@link Overflow} policy:
 * throw {@link RejectedExecutionException} at once, or park the calling thread until there is room (a worker of this
 * executor is never made to wait). A scheduled task neither waits nor is refused for capacity: it counts toward the
 * limits from when it is due, over them if need be.
 */
public interface ContextExecutor extends ScheduledExecutorService, AutoCloseable {

    /**
     * Returns an executor whose tasks run one at a time, in the order their {@code execute} calls completed, in the
     * sequential lane of {@code context}. The handle stays valid for the life of this executor and may be kept and
     * shared between threads; the lane behind it is released whenever it has nothing queued or running, so holding a
     * handle costs no memory per idle context (an emptied lane is kept for a grace of a few milliseconds, so that a
     * context used again at once is re-activated cheaply).
     *
     * <p>Consecutive tasks of a context may run on different threads: state kept in a {@code ThreadLocal} does not
     * follow the context. A task that submits to its own context and then waits for that task waits for something
     * queued behind itself: {@code Future.get()} on such a future, called from the waiting task, throws
     * {@link IllegalStateException} instead of hanging (a timed {@code get} times out, as its contract says). Other
     * ways of waiting (a latch, say) block the context for good; the worker is then reported in
     * {@link ExecutorStatistics#blockedDetections()} and every other context keeps moving on other threads.
     *
     * <p>The handle's {@code execute} submits as {@link #execute(Runnable)} does and throws what it throws
     * ({@link RejectedExecutionException} after shutdown or when a capacity limit refuses the task,
     * {@link NullPointerException} for a null task); its tasks run on this executor's workers. A task given to it
     * runs in this lane even if it is a {@link SequentialRunnable} or {@link CoalescingRunnable} of another context.
     *
     * @param context the context, compared with {@code equals}/{@code hashCode}
     * @return the lane's executor; valid for this executor's lifetime
     * @throws NullPointerException if {@code context} is null
     */
    Executor sequential(Object context);

    /**
     * Returns an executor for the coalescing lane of {@code context}: at most one of its tasks runs at a time, and a
     * task submitted while an earlier one has not started replaces that one (it is counted in
     * {@link ExecutorStatistics#coalesced()}; if it was a {@code Future}, it is cancelled). The last task submitted
     * always runs. The sequential and coalescing lanes of one context are independent. The handle's {@code execute}
     * throws as the one of {@link #sequential(Object)} does; a task that replaces a waiting one takes its place and
     * needs no room under a capacity limit (unless an earlier submitter of this context is parked for room: it does
     * not overtake that one).
     *
     * <p>A task that waits for a task it submitted to its own coalescing context waits for something that starts only
     * after itself returns: unlike {@link #sequential(Object)}, this is not detected, and an untimed
     * {@code Future.get()} there waits until a newer task of the context replaces (and so cancels) the one waited for.
     *
     * <p>A replacement cancels the task given to {@code execute}, if that task is a {@code Future}, and nothing
     * else. A {@code CompletableFuture} made by
     * {@code CompletableFuture.supplyAsync(f, lane)} (or another {@code *Async} method given this lane) hands the
     * lane a task of the JDK's own, so a replaced one leaves that {@code CompletableFuture} incomplete for good; for a
     * result per update, {@link #submit(Runnable) submit} a {@link CoalescingRunnable} and use its future.
     *
     * @param context the context, compared with {@code equals}/{@code hashCode}
     * @return the lane's executor; valid for this executor's lifetime
     * @throws NullPointerException if {@code context} is null
     */
    Executor coalescing(Object context);

    /**
     * The name given at construction; threads are named after it.
     *
     * @return the executor's name
     */
    String name();

    /**
     * A snapshot of the executor's counters. Each counter is read once, without stopping the executor, so counters
     * may be a few tasks apart from one another while tasks are moving; once the executor is quiescent they are
     * exact. Cost: a few dozen reads, plus, for {@link ExecutorStatistics#oldestQueuedAge()}, a walk of the lanes
     * that have work waiting (never of idle lanes); safe to call every second.
     *
     * @return a new snapshot
     */
    ExecutorStatistics statistics();

    /**
     * Per-context counters for every context with queued or running work. A lane emptied moments ago, kept for its
     * grace of a few milliseconds, still counts in {@link ExecutorStatistics#liveContexts()} but is not listed here.
     * Its cost grows with the number of live contexts; use {@link #statistics()} for a cheap summary.
     *
     * @return one entry per lane with queued or running work, in no particular order
     */
    List<ContextStatistics> contextStatistics();

    /**
     * The (at most) {@code k} live lanes that have a task waiting to start, the one whose oldest waiting task has
     * waited longest first: where the executor is behind, and by how much. Never blocks submitters or workers; its
     * cost grows with the number of lanes that have work waiting, not with the number of live lanes (idle lanes are
     * not looked at), so it may be called every second on an executor with a million live contexts.
     *
     * @param k how many lanes at most; 0 gives an empty list
     * @return up to {@code k} lanes, oldest waiting task first
     * @throws IllegalArgumentException if {@code k < 0}
     */
    List<ContextStatistics> busiestContexts(int k);

    /**
     * Submits like {@link #execute(Runnable)}, but never waits and never throws for capacity or shutdown: returns
     * {@code false} when the task is not accepted (it will not run). A refusal for capacity (a limit reached, or
     * submitters of the same context, or for {@code maxQueued} of the executor, already waiting for room, which an
     * offer never overtakes) counts in {@link ExecutorStatistics#rejected()}; one for shutdown does not. An offer asks
     * for room: from a worker of this executor too, it returns {@code false} rather than going over a limit.
     *
     * @param task the task; its kind and context are taken as {@code execute} takes them
     * @return whether the task was accepted
     * @throws NullPointerException if {@code task} is null, or it is a {@link SequentialRunnable} or
     *         {@link CoalescingRunnable} whose {@code context()} is null
     */
    boolean offer(Runnable task);

    /**
     * Starts an orderly shutdown and waits until every accepted task has run, as
     * {@code ExecutorService.close()} does on JDK 19 and later. If interrupted while waiting, it calls
     * {@link #shutdownNow()} and keeps waiting, then restores the interrupt status.
     *
     * @throws IllegalStateException if called where it would wait for itself: from one of its tasks (or other
     *         code its workers run, such as the uncaught-exception handler), or on its checker thread (by a thread
     *         factory asked there for an auxiliary worker), or by its thread factory on any thread (a submitter's whose
     *         task needs a worker, say), or by a context's {@code hashCode} or {@code equals} run at a scheduled task's
     *         dispatch (on a {@code schedule(task, 0)} caller's thread, say), or by a {@code Future} of the caller's,
     *         given as a coalescing task, from its {@code cancel} (its {@code done()}, say) made by the submit that
     *         replaced it, which termination waits for. The shutdown is started first, as {@link #shutdown()} starts it
     *         (the JDK's executors start it and then wait for good), and the executor terminates once its tasks, the
     *         calling one included, have run
     */
    @Override
    void close();

    /**
     * Runs {@code command} on a worker at some time in the future: a {@link SequentialRunnable} in its context's
     * sequential lane, a {@link CoalescingRunnable} in its context's coalescing lane (where it replaces a task of that
     * context that has not started), any other task unordered. What the task throws goes to the uncaught-exception
     * handler (see {@link GatlingExecutor.Builder#uncaughtExceptionHandler}), on the worker that ran it.
     *
     * <p>If a capacity limit is set and the task would go over it, the {@link Overflow} policy decides: it is rejected
     * at once, or the caller waits for room (see {@link GatlingExecutor.Builder#overflow}).
     *
     * @param command the task
     * @throws RejectedExecutionException if the executor has been shut down, or a capacity limit refused the task
     *         (the message names the limit, its value and the context)
     * @throws NullPointerException if {@code command} is null, or it is a {@link SequentialRunnable} or
     *         {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    void execute(Runnable command);
}
