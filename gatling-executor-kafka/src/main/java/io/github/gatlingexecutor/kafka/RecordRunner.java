package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Runs one record through the handler and the failure policy, and keeps the counters. Stateless per record except
 * for what the record itself carries, so any worker may call it.
 */
final class RecordRunner<K, V> {

    private static final System.Logger LOG = System.getLogger(KafkaProcessor.class.getName());
    /** The backoff doubles up to this (or up to the configured backoff, if that is longer). */
    static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final RecordHandler<K, V> handler;
    private final FailureHandler<K, V> onFailure;
    private final int retries;
    private final long backoffNanos;
    private final long maxBackoffNanos;
    private volatile ScheduledExecutorService executor;
    /** Under {@link Ordering#UNORDERED}: each try counts itself in {@link PartitionState#calls}. */
    private final boolean countCalls;
    /** Set by the processor just before it stops its own executor ({@code shutdownNow}): see {@link #tryHandle}. */
    volatile boolean stopping;
    /** Set once the processor is closed: hand-offs refused for capacity are no longer tried again. */
    volatile boolean closed;
    /**
     * The runner whose handler or failure handler the current thread is in, if any: {@link KafkaProcessor#close()}
     * called from there must not wait for that call (it could never end). Per runner, not "a worker of the
     * executor": an executor may be shared, and a handler of another processor is free to wait for this one's close.
     */
    private static final ThreadLocal<RecordRunner<?, ?>> IN_HANDLER = new ThreadLocal<>();

    final LongAdder completed = new LongAdder();
    final LongAdder superseded = new LongAdder();
    final LongAdder failed = new LongAdder();
    final LongAdder retried = new LongAdder();

    RecordRunner(RecordHandler<K, V> handler, FailureHandler<K, V> onFailure, int retries, Duration backoff) {
        this(handler, onFailure, retries, backoff, false);
    }

    RecordRunner(RecordHandler<K, V> handler, FailureHandler<K, V> onFailure, int retries, Duration backoff,
                 boolean countCalls) {
        this.countCalls = countCalls;
        this.handler = handler;
        this.onFailure = onFailure;
        this.retries = retries;
        this.backoffNanos = backoff.toNanos();
        this.maxBackoffNanos = Math.max(MAX_BACKOFF_NANOS, backoffNanos);
    }

    void executor(ScheduledExecutorService executor) {
        this.executor = executor;
    }

    /** Whether the executor is shut down: it refuses every task from now on, but runs those it took. */
    boolean executorShutDown() {
        return executor.isShutdown();
    }

    FailureHandler<K, V> failureHandler() {
        return onFailure;
    }

    /** {@link #tryHandle}: the handler (or the failure handler) returned; the caller accounts for the record. */
    static final int DONE = 0;
    /** {@link #tryHandle}: it failed and must be tried again after {@link #backoff}. */
    static final int RETRY = 1;
    /** {@link #tryHandle}: its partition is no longer ours; it did not run and the next owner processes it. */
    static final int DROPPED = 2;

    /**
     * One try of {@code w}: true when it is done with (completed and counted, acknowledged by the failure handler,
     * or dropped because its partition is no longer ours); false when it must be tried again after {@link #backoff}.
     */
    boolean attempt(Work<K, V> w) {
        int outcome = tryHandle(w);
        if (outcome == DONE) {
            finish(w);
        } else if (outcome == DROPPED) {
            w.record = null;
        }
        return outcome != RETRY;
    }

    /**
     * One try of {@code w} that leaves the accounting of a {@link #DONE} record to the caller: the router counts the
     * records it runs itself once per batch instead of once per record.
     */
    int tryHandle(Work<K, V> w) {
        if (!countCalls) {
            return tryOnce(w);
        }
        AtomicInteger calls = w.partition.calls;
        calls.incrementAndGet(); // before the look at revoked: see PartitionState#calls
        try {
            return tryOnce(w);
        } finally {
            calls.decrementAndGet();
        }
    }

    private int tryOnce(Work<K, V> w) {
        if (w.partition.revoked) {
            return DROPPED;
        }
        if (w.attempts > 0) {
            retried.increment(); // here, not when the try is scheduled: a try dropped above is no handler call
        }
        ConsumerRecord<K, V> record = w.record;
        // Several records may run in one executor task (a router's batch, a slot's run), and the executor clears a
        // worker's interrupt status only between its tasks: an interrupt an earlier handler left set must not reach
        // this one. Set again once the processor stops its own executor, as the handler's contract says (the
        // processor is closing and its time has passed): read after the clear, and written before the executor's
        // shutdownNow, so an interrupt of that shutdownNow that the clear swallowed is put back.
        Thread.interrupted();
        if (stopping) {
            Thread.currentThread().interrupt();
        }
        Throwable error;
        RecordRunner<?, ?> outer = enterHandler();
        try {
            handler.handle(record);
            return DONE;
        } catch (Throwable t) {
            error = t;
        } finally {
            leaveHandler(outer);
        }
        if (w.partition.revoked) {
            // Let go while the handler ran (a revocation or close() past its closeTimeout, whose interrupt is likely
            // what the handler threw): not the record's failure. Counted failed and handed to the failure handler (a
            // dead-letter topic), it was then processed again by its next owner, the commit being short of it.
            return DROPPED;
        }
        w.attempts++;
        if (w.attempts <= retries) {
            return RETRY;
        }
        if (!w.failedCounted) {
            w.failedCounted = true;
            failed.increment();
        }
        Throwable handlerError = null;
        if (onFailure != null) {
            RecordRunner<?, ?> outerOfFailure = enterHandler();
            try {
                onFailure.onFailure(record, error);
                return DONE;
            } catch (Throwable t) {
                handlerError = t;
            } finally {
                leaveHandler(outerOfFailure);
            }
        }
        if (LOG.isLoggable(Level.WARNING)) {
            // The user's throwables are logged, never changed: a failure handler that rethrows the error it was given
            // (to keep the record failed) made an addSuppressed of that error onto itself throw, which ended the retry
            // and froze the record's key (or partition) and commit for good; one that rethrows an exception it keeps
            // would have gained one suppressed error per try.
            Throwable logged = error;
            if (handlerError != null) {
                logged = new Exception("the failure handler threw", handlerError);
                logged.addSuppressed(error);
            }
            LOG.log(Level.WARNING, "Record " + w.partition.tp + "@" + w.offset + " failed " + w.attempts
                    + " times"
                    + (onFailure == null ? " and no failure handler is set" : " and the failure handler threw")
                    + "; it holds back its key and the partition's commit, and is tried again in "
                    + Duration.ofNanos(backoff(w.attempts)), logged);
        }
        return RETRY;
    }

    /** The wait before the next try, after {@code attempts} failed tries: doubling from the base, capped. */
    long backoff(int attempts) {
        int doublings = Math.min(attempts - 1, 40);
        long d = backoffNanos;
        for (int i = 0; i < doublings && d < maxBackoffNanos; i++) {
            d = d > maxBackoffNanos / 2 ? maxBackoffNanos : d * 2;
        }
        return Math.min(d, maxBackoffNanos);
    }

    /**
     * Has {@code action} run after the backoff, on the executor (a timer: no worker sleeps meanwhile). The executor
     * refuses only once it is shut down (the processor's own as it closes, or a given one by its owner): the retry
     * then never comes, and the record stays failed, holding back what waits behind it and the commit.
     */
    void scheduleRetry(Work<K, V> w, Runnable action) {
        try {
            schedule(action, backoff(w.attempts));
        } catch (RejectedExecutionException shutDown) {
            // see above
        }
    }

    /**
     * The processor's timers on the executor: retries and hand-offs tried again. Each leaves the set as it runs;
     * those still waiting when the processor closes are cancelled ({@link #cancelTimers}), which matters for an
     * executor the caller gave: left there, they kept its {@code shutdown()} waiting for them (a one-shot delayed
     * task still runs when due, up to the 10 s of the capped backoff, or longer if {@code retryBackoff} is), and the
     * processor's records and lanes in memory meanwhile; {@code shutdownNow()} handed them to the caller.
     */
    private final Set<Timer> timers = ConcurrentHashMap.newKeySet();

    private final class Timer implements Runnable {
        private final Runnable action;
        volatile Future<?> future;

        Timer(Runnable action) {
            this.action = action;
        }

        @Override
        public void run() {
            timers.remove(this);
            action.run();
        }
    }

    /** Schedules {@code action} on the executor as one of the processor's timers; throws what the executor throws. */
    private void schedule(Runnable action, long delayNanos) {
        Timer t = new Timer(action);
        timers.add(t);
        try {
            t.future = executor.schedule(t, delayNanos, TimeUnit.NANOSECONDS);
        } catch (RuntimeException refused) {
            timers.remove(t);
            throw refused;
        }
        // The future is written, then closed read; cancelTimers writes closed first, then reads the futures: one of
        // the two sees the other, so no timer scheduled as the processor closes is left waiting.
        if (closed) {
            cancelTimers();
        }
    }

    /** The processor is closed: its timers still waiting are cancelled (their records are not committed). */
    void cancelTimers() {
        for (Timer t : timers) {
            Future<?> f = t.future;
            if (f != null) {
                f.cancel(false);
                timers.remove(t);
            }
        }
    }

    /** How soon a hand-off that a bounded executor refused for capacity is first tried again; it doubles from there. */
    static final long REFUSED_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** The longest wait between two tries of a refused hand-off. */
    static final long REFUSED_RETRY_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(32);

    /**
     * Hands {@code task} to {@code target} (the executor, or a lane of it). An executor given to the processor may be
     * bounded ({@code maxQueued}, {@code maxQueuedPerContext}) and refuse it for capacity; the hand-off is then made
     * again by the executor's timer (a due scheduled task is never refused for capacity, and its run hands the task
     * over again), after {@link #REFUSED_RETRY_NANOS}, doubling up to {@link #REFUSED_RETRY_MAX_NANOS} while it is
     * refused, so a refused record waits instead of being dropped with its partition's commit held behind it for
     * good, and a full executor is not asked a thousand times a second per record. Gives up once the executor is
     * shut down (the processor is closing, and what was not handed over is not committed) or the processor is closed,
     * and then runs {@code givenUp} (if not null), now or on the timer's retry.
     */
    void handOff(Executor target, Runnable task, Runnable givenUp) {
        handOff(target, task, givenUp, REFUSED_RETRY_NANOS);
    }

    private void handOff(Executor target, Runnable task, Runnable givenUp, long wait) {
        try {
            target.execute(task);
            return;
        } catch (RejectedExecutionException refused) {
            ScheduledExecutorService ex = executor;
            if (!ex.isShutdown() && !closed) {
                long next = Math.min(wait * 2, REFUSED_RETRY_MAX_NANOS);
                try {
                    schedule(() -> handOff(target, task, givenUp, next), wait);
                    return;
                } catch (RejectedExecutionException closing) {
                    // shut down meanwhile
                }
            }
        }
        if (givenUp != null) {
            givenUp.run();
        }
    }

    /** {@link Ordering#UNORDERED}: nothing waits behind a failed record, so it is simply run again later. */
    void retryLater(Work<K, V> w) {
        scheduleRetry(w, w);
    }

    /** A waiting record replaced by a newer one of its key, before anything ran it. */
    void superseded(Work<K, V> w) {
        if (w.partition.revoked) {
            // Its partition was revoked or lost while it waited (its key held by a straggler): dropped, as a run
            // would drop it, not superseded; its next owner processes it, and this processor counts it nowhere.
            w.record = null;
            return;
        }
        superseded.increment();
        finish(w);
    }

    /** Marks a tracked record done and counts it. */
    void finish(Work<K, V> w) {
        w.record = null;
        // Counted before it is marked done: the commit follows the mark, and a reader that saw the commit pass the
        // record read completed() one short while a worker was descheduled between the two.
        completed.increment();
        w.done = true;
        w.partition.completedOne();
    }

    /**
     * Marks the current thread as running one of this processor's handlers, until {@link #leaveHandler}; returns the
     * mark it had, to be put back (a handler may run another's on its own thread, an executor's caller-runs, say).
     */
    RecordRunner<?, ?> enterHandler() {
        RecordRunner<?, ?> outer = IN_HANDLER.get();
        IN_HANDLER.set(this);
        return outer;
    }

    void leaveHandler(RecordRunner<?, ?> outer) {
        IN_HANDLER.set(outer);
    }

    /** Whether the current thread is inside a handler or failure handler of this processor. */
    boolean inHandler() {
        return IN_HANDLER.get() == this;
    }

    /** The configured number of retries of a failing record. */
    int retries() {
        return retries;
    }
}
