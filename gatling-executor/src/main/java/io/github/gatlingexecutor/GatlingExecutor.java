package io.github.gatlingexecutor;

import java.lang.Thread.UncaughtExceptionHandler;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The GatlingExecutor: sequential, coalescing and unordered tasks on one small elastic pool of threads.
 *
 * <p>See {@link ContextExecutor} for the semantics of the three task kinds. This class adds the pool: {@code
 * coreThreads} workers that live as long as the executor (started on demand), auxiliary workers started when work
 * waits, no worker is free and the busy ones leave a core unused (they are blocked or stuck in one task, or fewer
 * than the cores), retired after {@code auxiliaryKeepAlive} idle, and a hard cap of {@code maxThreads} workers. One
 * housekeeping thread per executor, the checker, watches for workers stuck in one task and fires scheduled tasks; it
 * never runs a task itself.
 *
 * <pre>{@code
 * try (GatlingExecutor executor = GatlingExecutor.builder().name("orders").coreThreads(4).build()) {
 *     Executor account = executor.sequential(accountId);
 *     account.execute(() -> debit(accountId, 10));
 *     account.execute(() -> credit(accountId, 5));     // runs after the debit, maybe on another thread
 *     executor.coalescing(instrument).execute(() -> publish(latestPrice(instrument)));
 * }
 * }</pre>
 *
 * <p>Threads are named {@code <name>-core-<n>}, {@code <name>-aux-<n>} and {@code <name>-checker}, unless a
 * {@link ThreadFactory} is given (it then makes every thread, the checker's included).
 */
public final class GatlingExecutor implements ContextExecutor {

    private final Engine engine;

    /** For tests in this package. */
    Engine engine() {
        return engine;
    }

    /**
     * An executor with the given name and core size, and every other setting at its default.
     *
     * @param name the executor's name, used in thread names
     * @param coreThreads workers that live as long as the executor
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is empty or {@code coreThreads < 1}
     */
    public GatlingExecutor(String name, int coreThreads) {
        this(builder().name(name).coreThreads(coreThreads).settings());
    }

    private GatlingExecutor(Settings settings) {
        this.engine = new Engine(settings);
        engine.owner = this;
    }

    /**
     * A builder with every setting at its default.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * {@inheritDoc}
     *
     * @throws NullPointerException {@inheritDoc}
     */
    @Override
    public Executor sequential(Object context) {
        return engine.laneHandle(Objects.requireNonNull(context, "context"), false);
    }

    /**
     * {@inheritDoc}
     *
     * @throws NullPointerException {@inheritDoc}
     */
    @Override
    public Executor coalescing(Object context) {
        return engine.laneHandle(Objects.requireNonNull(context, "context"), true);
    }

    /**
     * {@inheritDoc}
     *
     * @throws RejectedExecutionException {@inheritDoc}
     * @throws NullPointerException {@inheritDoc}
     */
    @Override
    public void execute(Runnable command) {
        engine.execute(Objects.requireNonNull(command, "command"));
    }

    @Override
    public String name() {
        return engine.settings.name;
    }

    @Override
    public ExecutorStatistics statistics() {
        return engine.snapshots.executor();
    }

    @Override
    public List<ContextStatistics> contextStatistics() {
        return engine.snapshots.contexts();
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException {@inheritDoc}
     */
    @Override
    public List<ContextStatistics> busiestContexts(int k) {
        if (k < 0) {
            throw new IllegalArgumentException("k must not be negative, was " + k);
        }
        return engine.snapshots.busiest(k);
    }

    /**
     * {@inheritDoc}
     *
     * @throws NullPointerException {@inheritDoc}
     */
    @Override
    public boolean offer(Runnable task) {
        return engine.submit(Objects.requireNonNull(task, "task"), true);
    }

    // ---- ExecutorService -------------------------------------------------------------------------------------

    /**
     * Submits {@code task} to run on a worker and returns a future whose {@code get()} returns {@code null} once the
     * task has completed. The returned future runs in the task's lane when the task is a {@link SequentialRunnable} or
     * {@link CoalescingRunnable}, and implements the same interface with the same context: a coalescing one replaced
     * by a newer task of its context is cancelled.
     *
     * <p>Under a capacity limit the call does what {@link #execute} does ({@link Overflow}): it is refused at once, or
     * parks the calling thread until there is room. What the task throws goes to the future, not to the
     * uncaught-exception handler. From a sequential task of this executor, {@code get()} on the future of a task
     * queued behind the caller in its own context throws {@link IllegalStateException} (see {@link #sequential}).
     *
     * @param task the task; its kind and context are kept
     * @return a future for the task
     * @throws RejectedExecutionException if the executor has been shut down, or a capacity limit refused the task
     *         (at once, or after the wait {@link Overflow#block} allows, or when interrupted while waiting; the message
     *         names the limit, its value and the context)
     * @throws NullPointerException if {@code task} is null, or it is a {@link SequentialRunnable} or
     *         {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public Future<?> submit(Runnable task) {
        return engine.submit(Objects.requireNonNull(task, "task"), null);
    }

    /**
     * Submits {@code task} as {@link #submit(Runnable)} does, with a future whose {@code get()} returns {@code result}
     * once the task has completed.
     *
     * @param task the task; its kind and context are kept
     * @param result what the future returns
     * @param <T> the type of the result
     * @return a future for the task
     * @throws RejectedExecutionException if the executor has been shut down, or a capacity limit refused the task
     *         (at once, or after the wait {@link Overflow#block} allows, or when interrupted while waiting; the message
     *         names the limit, its value and the context)
     * @throws NullPointerException if {@code task} is null, or it is a {@link SequentialRunnable} or
     *         {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public <T> Future<T> submit(Runnable task, T result) {
        return engine.submit(Objects.requireNonNull(task, "task"), result);
    }

    /**
     * Submits {@code task} as {@link #submit(Runnable)} does, with a future whose {@code get()} returns what the task
     * returns. A {@code Callable} that also implements {@link SequentialRunnable} or {@link CoalescingRunnable} runs
     * in that lane (its {@code call()} is what runs).
     *
     * @param task the task; its kind and context are kept
     * @param <T> the type of the result
     * @return a future for the task's result
     * @throws RejectedExecutionException if the executor has been shut down, or a capacity limit refused the task
     *         (at once, or after the wait {@link Overflow#block} allows, or when interrupted while waiting; the message
     *         names the limit, its value and the context)
     * @throws NullPointerException if {@code task} is null, or it is a {@link SequentialRunnable} or
     *         {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public <T> Future<T> submit(Callable<T> task) {
        return engine.submit(Objects.requireNonNull(task, "task"));
    }

    /**
     * Submits every task and waits until all have completed (normally, by throwing, or cancelled), then returns their
     * futures, done, in the collection's order. Each task keeps its kind and context, as in
     * {@link #submit(Callable)}, and the tasks are submitted in the collection's order on the calling thread.
     *
     * @param tasks the tasks
     * @param <T> the type of the results
     * @return the futures, in the order of {@code tasks}, all done
     * @throws InterruptedException if interrupted while waiting; the tasks not done are cancelled
     * @throws NullPointerException if {@code tasks} or one of its elements is null, or an element is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     * @throws RejectedExecutionException if a task is refused, as {@link #submit(Callable)} refuses it (the tasks
     *         submitted before it are then cancelled)
     * @throws IllegalStateException if called from a sequential task of this executor and one of the tasks is queued
     *         behind it in its own context, which would wait for the caller to return (the futures are then
     *         cancelled)
     */
    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks) throws InterruptedException {
        return Invocations.invokeAll(engine, tasks, false, 0L);
    }

    /**
     * As {@link #invokeAll(Collection)}, waiting no longer than the timeout: the tasks not done when it passes are
     * cancelled, and every future is returned, done. Each task keeps its kind and context, as in
     * {@link #submit(Callable)}. A timeout already past submits nothing. Under {@link Overflow#block} a task that
     * waits for room waits no longer than the timeout; the tasks not submitted by then are returned cancelled. A task
     * queued behind the caller in its own context makes the call wait until the timeout, as its contract says.
     *
     * @param tasks the tasks
     * @param timeout the longest wait
     * @param unit the unit of {@code timeout}
     * @param <T> the type of the results
     * @return the futures, in the order of {@code tasks}, all done
     * @throws InterruptedException if interrupted while waiting; the tasks not done are cancelled
     * @throws NullPointerException if {@code unit}, {@code tasks} or one of its elements is null, or an element is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     * @throws RejectedExecutionException if a task is refused, as {@link #submit(Callable)} refuses it (the tasks
     *         submitted before it are then cancelled)
     */
    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit)
            throws InterruptedException {
        return Invocations.invokeAll(engine, tasks, true, Objects.requireNonNull(unit, "unit").toNanos(timeout));
    }

    /**
     * Submits every task and returns the result of one that completed normally; the tasks not done when it returns or
     * throws are cancelled. Each task keeps its kind and context, as in {@link #submit(Callable)}.
     *
     * @param tasks the tasks
     * @param <T> the type of the result
     * @return the result of a task that completed normally
     * @throws InterruptedException if interrupted while waiting
     * @throws ExecutionException if no task completed normally (the last failure is its cause)
     * @throws IllegalArgumentException if {@code tasks} is empty
     * @throws NullPointerException if {@code tasks} or one of its elements is null, or an element is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     * @throws RejectedExecutionException if a task is refused, as {@link #submit(Callable)} refuses it (the tasks
     *         submitted before it are then cancelled)
     * @throws IllegalStateException if called from a sequential task of this executor and every task is queued behind
     *         it in its own context (checked before anything is submitted), or every other task has failed: waiting
     *         for those would wait for the caller to return
     */
    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks) throws InterruptedException, ExecutionException {
        try {
            return Invocations.invokeAny(engine, tasks, false, 0L);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    /**
     * As {@link #invokeAny(Collection)}, waiting no longer than the timeout; the tasks not done when it returns or
     * throws are cancelled. Each task keeps its kind and context, as in {@link #submit(Callable)}. Under
     * {@link Overflow#block} a task that waits for room waits no longer than the timeout, and the call then throws
     * {@code TimeoutException}.
     *
     * @param tasks the tasks
     * @param timeout the longest wait
     * @param unit the unit of {@code timeout}
     * @param <T> the type of the result
     * @return the result of a task that completed normally
     * @throws InterruptedException if interrupted while waiting
     * @throws ExecutionException if no task completed normally (the last failure is its cause)
     * @throws TimeoutException if no task completed normally within the timeout
     * @throws IllegalArgumentException if {@code tasks} is empty
     * @throws NullPointerException if {@code unit}, {@code tasks} or one of its elements is null, or an element is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     * @throws RejectedExecutionException if a task is refused, as {@link #submit(Callable)} refuses it (the tasks
     *         submitted before it are then cancelled)
     */
    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit)
            throws InterruptedException, ExecutionException, TimeoutException {
        return Invocations.invokeAny(engine, tasks, true, Objects.requireNonNull(unit, "unit").toNanos(timeout));
    }

    // ---- ScheduledExecutorService ----------------------------------------------------------------------------

    /**
     * Runs {@code command} once, after {@code delay} (at once if it is zero or negative). When due, the task enters its
     * lane (if it is a {@link SequentialRunnable} or {@link CoalescingRunnable}) and runs on a worker, never on the
     * checker. Until due it counts in {@link ExecutorStatistics#delayed()}; from then on it counts toward the capacity
     * limits, over them if need be: a scheduled task never waits for room. A delayed task still runs when due after
     * {@link #shutdown()}. A delay longer than about 73 years ({@code Long.MAX_VALUE / 4} nanoseconds) counts as that
     * long, so two such tasks are due at the same time and run in the order they were scheduled.
     *
     * @param command the task; its kind and context are kept
     * @param delay the delay from now
     * @param unit the unit of {@code delay}
     * @return a future whose {@code get()} returns {@code null} once the task has completed
     * @throws RejectedExecutionException if the executor has been shut down (a scheduled task is never refused for
     *         capacity)
     * @throws NullPointerException if {@code command} or {@code unit} is null, or the task is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        return engine.schedule(Objects.requireNonNull(command, "command"), null, delay, unit);
    }

    /**
     * Runs {@code callable} once, after {@code delay}, as {@link #schedule(Runnable, long, TimeUnit)} runs a
     * {@code Runnable}.
     *
     * @param callable the task; its kind and context are kept (a {@code Callable} that also implements
     *        {@link SequentialRunnable} or {@link CoalescingRunnable} runs in that lane)
     * @param delay the delay from now
     * @param unit the unit of {@code delay}
     * @param <V> the type of the result
     * @return a future whose {@code get()} returns what {@code callable} returns
     * @throws RejectedExecutionException if the executor has been shut down (a scheduled task is never refused for
     *         capacity)
     * @throws NullPointerException if {@code callable} or {@code unit} is null, or the task is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        return engine.schedule(null, Objects.requireNonNull(callable, "callable"), delay, unit);
    }

    /**
     * Runs {@code command} first after {@code initialDelay}, then every {@code period} from that first time, until its
     * future is cancelled, a run throws (the future then completes with that failure), or the executor shuts down.
     * Each run enters the task's lane when due. Runs never overlap: a run that is late makes the next one start
     * late, as in {@code ScheduledThreadPoolExecutor}. Periodic tasks stop at shutdown. A delay or period longer than
     * about 73 years counts as that long.
     *
     * <p>A {@link CoalescingRunnable} whose run, waiting in its lane, is replaced by a newer task of its context skips
     * that run (it counts in {@code coalesced()}) and stays scheduled: its future is not cancelled, since the runs of
     * a periodic task end only by a cancel, a run that throws, or the executor's shutdown. The next run is the first
     * time of its schedule after the replacement; runs owed from before it are not made up, as each would replace the
     * newer task in turn.
     *
     * @param command the task; its kind and context are kept
     * @param initialDelay the delay of the first run from now
     * @param period the time between the starts of two runs
     * @param unit the unit of {@code initialDelay} and {@code period}
     * @return a future that completes only by a cancel or a run that throws; {@code get()} never returns normally
     * @throws RejectedExecutionException if the executor has been shut down (a scheduled task is never refused for
     *         capacity)
     * @throws IllegalArgumentException if {@code period} is zero or negative
     * @throws NullPointerException if {@code command} or {@code unit} is null, or the task is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        return engine.schedulePeriodic(Objects.requireNonNull(command, "command"), initialDelay, period, true, unit);
    }

    /**
     * Runs {@code command} first after {@code initialDelay}, then again {@code delay} after each run ends, until its
     * future is cancelled, a run throws (the future then completes with that failure), or the executor shuts down.
     * Each run enters the task's lane when due. Periodic
     * tasks stop at shutdown. A {@link CoalescingRunnable} whose run is replaced in its lane by a newer task skips
     * that run (it counts in {@code coalesced()}) and stays scheduled, its next run one delay after the replacement;
     * its future is not cancelled (see {@link #scheduleAtFixedRate}). A delay longer than about 73 years counts as
     * that long.
     *
     * @param command the task; its kind and context are kept
     * @param initialDelay the delay of the first run from now
     * @param delay the time from the end of one run to the start of the next
     * @param unit the unit of {@code initialDelay} and {@code delay}
     * @return a future that completes only by a cancel or a run that throws; {@code get()} never returns normally
     * @throws RejectedExecutionException if the executor has been shut down (a scheduled task is never refused for
     *         capacity)
     * @throws IllegalArgumentException if {@code delay} is zero or negative
     * @throws NullPointerException if {@code command} or {@code unit} is null, or the task is a
     *         {@link SequentialRunnable} or {@link CoalescingRunnable} whose {@code context()} is null
     */
    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay,
                                                     TimeUnit unit) {
        return engine.schedulePeriodic(Objects.requireNonNull(command, "command"), initialDelay, delay, false, unit);
    }

    // ---- lifecycle -------------------------------------------------------------------------------------------

    /**
     * Starts an orderly shutdown: from now on every submission throws {@link RejectedExecutionException} and
     * {@link #offer} returns {@code false}. Every accepted task still runs: lanes drain, the last coalescing task of
     * each context runs, delayed one-shot tasks run when due; periodic tasks stop, as in
     * {@code ScheduledThreadPoolExecutor}: their futures are cancelled at once, or, for a run in progress, when that
     * run ends. A run already due and waiting in its lane is cancelled too; in a coalescing lane it may have replaced
     * a task submitted before it, which then does not run either (cancel the periodic task before shutting down if
     * that task must run). Does not wait (see {@link #awaitTermination} and {@link #close()}). Calling it again has no
     * additional effect.
     */
    @Override
    public void shutdown() {
        engine.shutdown();
    }

    /**
     * Shuts the executor down as {@link #shutdown()} does, takes back the tasks that never started, and interrupts the
     * running ones; does not wait for them to end. Returns exactly the accepted tasks that never started: the caller's
     * own {@code Runnable} for {@code execute} and lane submissions, the {@code Future} for {@code submit},
     * {@code invoke*} and {@code schedule*}, delayed and periodic tasks waiting for a run included, their futures
     * neither done nor cancelled. A periodic task already cancelled (by {@link #shutdown} or its caller) is not
     * returned, nor is a delayed task cancelled before it was due (the cancel took it out of the timer); a task
     * cancelled once it waits in a queue (a {@code submit} future, a scheduled one-shot already due) is returned, its
     * future cancelled, as {@code ThreadPoolExecutor} returns it. No task is both returned and run by the executor;
     * a returned one-shot future runs its task if the caller runs it (on the caller's thread, completing the future),
     * as {@code ThreadPoolExecutor}'s returned futures do ({@code ScheduledThreadPoolExecutor}'s cancel themselves
     * instead); a returned periodic task run by the caller cancels itself without running.
     *
     * @return the accepted tasks that never started, in no particular order
     */
    @Override
    public List<Runnable> shutdownNow() {
        return engine.shutdownNow();
    }

    /**
     * Whether {@link #shutdown()}, {@link #shutdownNow()} or {@link #close()} has been called.
     *
     * @return true once the executor refuses new tasks
     */
    @Override
    public boolean isShutdown() {
        return engine.isShutdown();
    }

    /**
     * Whether the executor has shut down and finished: true only once no task runs or waits and every thread of this
     * executor (its workers and its checker) has ended.
     *
     * @return true once terminated
     */
    @Override
    public boolean isTerminated() {
        return engine.terminatedAndThreadsGone();
    }

    /**
     * Waits until the executor has terminated after a shutdown, the timeout passes, or the calling thread is
     * interrupted. Terminated as {@link #isTerminated} means it: when this returns true, every thread of this
     * executor has ended.
     *
     * @param timeout the longest wait
     * @param unit the unit of {@code timeout}
     * @return true if terminated, false if the timeout passed first
     * @throws InterruptedException if interrupted while waiting
     * @throws NullPointerException if {@code unit} is null
     */
    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return engine.awaitTermination(Objects.requireNonNull(unit, "unit").toNanos(timeout));
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalStateException {@inheritDoc}
     */
    @Override
    public void close() {
        engine.close();
    }

    @Override
    public String toString() {
        return "GatlingExecutor[" + name() + ", " + engine.stateName() + ", " + statistics() + ']';
    }

    /**
     * Settings for a {@link GatlingExecutor}. Each setter checks its own argument and throws at once:
     * {@link NullPointerException} for a null, {@link IllegalArgumentException} naming the setting and the value
     * otherwise. {@link #build()} checks the settings against one another. A duration longer than about 73 years
     * ({@code Long.MAX_VALUE / 4} nanoseconds) counts as that long, as delays and periods of scheduled tasks do. Not
     * thread-safe: use a builder on one thread at a time. Each {@link #build()} makes a new executor from the
     * settings at that moment.
     */
    public static final class Builder {
        private String name = "gatling";
        private int coreThreads = -1; // unset: available processors, or a maxThreads set below them
        private int maxThreads = -1; // unset: max(256, coreThreads)
        private Duration auxiliaryKeepAlive = Duration.ofSeconds(10);
        private Duration checkPeriod = Duration.ofMillis(250);
        private Duration blockedThreshold = Duration.ofMillis(250);
        private int coreBumpThreshold = 10;
        private int batchSize = 64;
        private Duration minTurn = Duration.ofNanos(100_000);
        private ThreadFactory threadFactory;
        private UncaughtExceptionHandler uncaughtExceptionHandler;
        private int maxQueuedPerContext;
        private int maxQueued;
        private Overflow overflow = Overflow.reject();
        private int lingerLook = SequentialLane.LINGER_LOOK;

        private Builder() {
        }

        /**
         * The executor's name, used in thread names (default {@code "gatling"}). Must not be empty.
         *
         * @param name the executor's name, used in thread names
         * @return this builder
         * @throws NullPointerException if {@code name} is null
         * @throws IllegalArgumentException if {@code name} is empty
         */
        public Builder name(String name) {
            Objects.requireNonNull(name, "name");
            if (name.isEmpty()) {
                throw new IllegalArgumentException("name must not be empty");
            }
            this.name = name;
            return this;
        }

        /**
         * Workers that live as long as the executor. At least 1. The default is the number of available processors,
         * or {@code maxThreads} if that was set lower: a cap of two threads on a machine of sixteen cores builds a
         * pool of two core workers. A core size set explicitly above {@code maxThreads} is refused by {@link #build()}.
         *
         * @param coreThreads workers that live as long as the executor
         * @return this builder
         * @throws IllegalArgumentException if {@code coreThreads < 1}
         */
        public Builder coreThreads(int coreThreads) {
            if (coreThreads < 1) {
                throw new IllegalArgumentException("coreThreads must be at least 1, was " + coreThreads);
            }
            this.coreThreads = coreThreads;
            return this;
        }

        /**
         * The hard cap on worker threads, never exceeded (default {@code max(256, coreThreads)}). At least 1, and
         * not below a {@code coreThreads} set explicitly (checked by {@link #build()}); the default core size is
         * lowered to it instead.
         *
         * @param maxThreads the cap on worker threads
         * @return this builder
         * @throws IllegalArgumentException if {@code maxThreads < 1}
         */
        public Builder maxThreads(int maxThreads) {
            if (maxThreads < 1) {
                throw new IllegalArgumentException("maxThreads must be at least 1, was " + maxThreads);
            }
            this.maxThreads = maxThreads;
            return this;
        }

        /**
         * How long an auxiliary worker stays idle before it ends (default 10 s). Positive.
         *
         * @param keepAlive how long an idle auxiliary worker waits for work before it ends
         * @return this builder
         * @throws NullPointerException if {@code keepAlive} is null
         * @throws IllegalArgumentException if {@code keepAlive} is zero or negative
         */
        public Builder auxiliaryKeepAlive(Duration keepAlive) {
            this.auxiliaryKeepAlive = positive("auxiliaryKeepAlive", keepAlive);
            return this;
        }

        /**
         * How often the checker looks for stuck workers (default 250 ms). Positive. While tasks wait in the queue and
         * the pool is below {@code maxThreads}, the checker looks every 5 ms instead (or every {@code checkPeriod}, if
         * that is shorter), so work queued behind blocked workers gets threads within milliseconds.
         *
         * @param checkPeriod the time between two looks of the checker while no work waits
         * @return this builder
         * @throws NullPointerException if {@code checkPeriod} is null
         * @throws IllegalArgumentException if {@code checkPeriod} is zero or negative
         */
        public Builder checkPeriod(Duration checkPeriod) {
            this.checkPeriod = positive("checkPeriod", checkPeriod);
            return this;
        }

        /**
         * How long a worker may run one task before the checker counts it as stuck and lets other workers take the
         * queued work (default 250 ms). Positive.
         *
         * @param blockedThreshold the time in one task after which a worker counts as stuck
         * @return this builder
         * @throws NullPointerException if {@code blockedThreshold} is null
         * @throws IllegalArgumentException if {@code blockedThreshold} is zero or negative
         */
        public Builder blockedThreshold(Duration blockedThreshold) {
            this.blockedThreshold = positive("blockedThreshold", blockedThreshold);
            return this;
        }

        /**
         * Every this many auxiliary thread starts, the core size grows by one (default 10). At least 1.
         *
         * @param coreBumpThreshold auxiliary thread starts per core bump
         * @return this builder
         * @throws IllegalArgumentException if {@code coreBumpThreshold < 1}
         */
        public Builder coreBumpThreshold(int coreBumpThreshold) {
            if (coreBumpThreshold < 1) {
                throw new IllegalArgumentException("coreBumpThreshold must be at least 1, was " + coreBumpThreshold);
            }
            this.coreBumpThreshold = coreBumpThreshold;
            return this;
        }

        /**
         * How many tasks of one lane a worker runs in a row before it looks whether to put the lane at the back of the
         * ready queue, so that a busy context cannot starve the others (default 64). At least 1. The lane goes to the
         * back at the end of a batch if other work waits and the worker has been on it for {@link #minTurn} or more;
         * with {@code minTurn} zero, at the end of every batch.
         *
         * @param batchSize tasks of one lane per batch
         * @return this builder
         * @throws IllegalArgumentException if {@code batchSize < 1}
         */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1) {
                throw new IllegalArgumentException("batchSize must be at least 1, was " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /**
         * How long a worker's turn on a lane lasts before the lane, if it has more work and other work waits, goes to
         * the back of the ready queue (default 100 us; zero allowed). A turn runs whole batches of {@link #batchSize}
         * tasks and ends at the first batch end at or past this time, counted from the worker's last clock reading
         * before the turn (not a reading of its own, so it may end sooner): it lasts at least one batch and at most
         * {@code minTurn} plus one batch. With tiny tasks a batch takes a few microseconds, and putting the lane at
         * the back after each one would cost a trip round the ready queue, a wake-up check and, most often, the lane's
         * data moving to another core; tasks that take longer than {@code minTurn / batchSize} each are rotated after
         * every batch, as with zero.
         *
         * @param minTurn how long a turn on a busy lane lasts, in whole batches, before the lane is rotated
         * @return this builder
         * @throws NullPointerException if {@code minTurn} is null
         * @throws IllegalArgumentException if {@code minTurn} is negative
         */
        public Builder minTurn(Duration minTurn) {
            Objects.requireNonNull(minTurn, "minTurn");
            if (minTurn.isNegative()) {
                throw new IllegalArgumentException("minTurn must not be negative, was " + minTurn);
            }
            this.minTurn = minTurn;
            return this;
        }

        /**
         * Makes every thread of the executor: its workers and its checker thread (default: the executor's own,
         * named after the executor; workers non-daemon, the checker a daemon; all of normal priority, with the context
         * class loader of the thread that built the executor, and no inheritable thread-local values, whichever thread
         * starts them). It is called on the thread that needs the new one: the checker's for an auxiliary worker; for
         * a core worker or the checker itself, whichever thread finds it missing (a submitter, a worker, the checker,
         * a caller of {@code schedule*} or {@code shutdown}, or one waiting on the executor). A factory that throws,
         * returns {@code null}, gives a thread whose {@code start()} fails, or gives one it has already started
         * (refused, as {@code ThreadPoolExecutor} refuses it: none of the executor's work runs on it) is survived: the
         * executor goes on with the threads it has and tries again later (see the README's "Known limits").
         *
         * @param threadFactory makes the executor's threads
         * @return this builder
         * @throws NullPointerException if {@code threadFactory} is null
         */
        public Builder threadFactory(ThreadFactory threadFactory) {
            this.threadFactory = Objects.requireNonNull(threadFactory, "threadFactory");
            return this;
        }

        /**
         * Receives what a task given to {@code execute} or to a lane throws (default: the worker thread's own
         * handler), on the worker that ran the task. Tasks given to {@code submit}, {@code invoke*} or
         * {@code schedule*} report through their future. It also receives what the caller's own code throws when the
         * executor calls it outside any task, where no call of the caller's could get it: a context's
         * {@code hashCode} or {@code equals} as its lane is released or its waiting submitters are woken, a replaced
         * future's {@code cancel} (or what it runs), on the thread that made the call (a worker, the checker or a
         * submitter; without a handler, that thread's own).
         *
         * @param handler receives what tasks given to {@code execute} or to a lane throw (on the worker that ran the
         *        task), and what the caller's own code throws where the executor calls it outside any task
         * @return this builder
         * @throws NullPointerException if {@code handler} is null
         */
        public Builder uncaughtExceptionHandler(UncaughtExceptionHandler handler) {
            this.uncaughtExceptionHandler = Objects.requireNonNull(handler, "uncaughtExceptionHandler");
            return this;
        }

        /**
         * The most tasks one <em>sequential</em> lane may hold accepted and not yet started (default: unbounded).
         * A coalescing lane holds at most one waiting task and is not limited by it. Checked at each submission; what
         * a submission over the limit does is the {@link #overflow(Overflow)} policy. May be above
         * {@link #maxQueued(int)}: both apply.
         *
         * @param maxQueuedPerContext the most waiting tasks per sequential lane, at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code maxQueuedPerContext < 1}
         */
        public Builder maxQueuedPerContext(int maxQueuedPerContext) {
            if (maxQueuedPerContext < 1) {
                throw new IllegalArgumentException("maxQueuedPerContext must be at least 1, was "
                        + maxQueuedPerContext);
            }
            this.maxQueuedPerContext = maxQueuedPerContext;
            return this;
        }

        /**
         * The most tasks the whole executor may hold accepted and not yet started (default: unbounded): sequential
         * lanes, the one waiting task of each coalescing lane, and unordered tasks. A coalescing task that replaces a
         * waiting one takes that one's place. A delayed task counts from when it is due, and a due scheduled task is
         * never refused (it is accepted over the limit if need be).
         *
         * @param maxQueued the most waiting tasks in the executor, at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code maxQueued < 1}
         */
        public Builder maxQueued(int maxQueued) {
            if (maxQueued < 1) {
                throw new IllegalArgumentException("maxQueued must be at least 1, was " + maxQueued);
            }
            this.maxQueued = maxQueued;
            return this;
        }

        /**
         * What a submission that would go over {@link #maxQueued(int)} or {@link #maxQueuedPerContext(int)} does
         * (default {@link Overflow#reject()}). See {@link Overflow}.
         *
         * @param overflow the policy
         * @return this builder
         * @throws NullPointerException if {@code overflow} is null
         */
        public Builder overflow(Overflow overflow) {
            this.overflow = Objects.requireNonNull(overflow, "overflow");
            return this;
        }

        /**
         * Builds the executor. No thread starts until work arrives.
         *
         * @return the executor
         * @throws IllegalArgumentException if {@code maxThreads} was set below a {@code coreThreads} that was set
         */
        public GatlingExecutor build() {
            return new GatlingExecutor(settings());
        }

        /**
         * Not an option: the model checks' shorter linger, {@code SequentialLane.LINGER_LOOKS} looks every
         * {@code lookEvery} waits ({@code LincheckLaneTest.modelCheckBuilder} says why).
         */
        Builder linger(int lookEvery) {
            if (lookEvery < 1 || Integer.bitCount(lookEvery) != 1) {
                throw new IllegalArgumentException("linger looking every " + lookEvery + " waits: not a power of two");
            }
            this.lingerLook = lookEvery;
            return this;
        }

        Settings settings() {
            // A default core size gives way to an explicit cap: the machine's size is not the caller's mistake.
            int core = coreThreads > 0 ? coreThreads : Math.max(1, Runtime.getRuntime().availableProcessors());
            if (coreThreads < 0 && maxThreads > 0) {
                core = Math.min(core, maxThreads);
            }
            int max = maxThreads < 0 ? Math.max(256, core) : maxThreads;
            if (max < core) {
                throw new IllegalArgumentException("maxThreads (" + max + ") must not be below coreThreads ("
                        + core + ")");
            }
            return new Settings(name, core, max, nanos(auxiliaryKeepAlive), nanos(checkPeriod),
                    nanos(blockedThreshold), coreBumpThreshold, batchSize, nanos(minTurn), threadFactory,
                    uncaughtExceptionHandler, maxQueuedPerContext, maxQueued, overflow, lingerLook);
        }

        private static Duration positive(String setting, Duration value) {
            Objects.requireNonNull(value, setting);
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(setting + " must be positive, was " + value);
            }
            return value;
        }

        /**
         * Capped as scheduled delays are: the engine adds these to {@code System.nanoTime()} readings and compares
         * the sums by difference, which holds only while a sum stays within half the range of a long of the reading
         * (a {@code checkPeriod} of {@code Long.MAX_VALUE} nanoseconds made every next inspection lie in the past, so
         * the checker never inspected and, while work waited, never slept).
         */
        private static long nanos(Duration d) {
            try {
                return Math.min(d.toNanos(), Settings.MAX_DURATION_NANOS);
            } catch (ArithmeticException tooLong) {
                return Settings.MAX_DURATION_NANOS;
            }
        }
    }
}
