package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * References that ignore the key and keep no order: what the hand-off costs without ordering, and (for blocking
 * tasks) how many threads plain pools spend. Their results are never "order checked".
 */
public final class UnorderedPoolAdapter extends CountingAdapter {
    private final ExecutorService pool;

    /** @param pool makes the pool from the adapter's counting thread factory */
    private UnorderedPoolAdapter(String name, String threadPrefix,
                                 Function<CountingThreadFactory, ExecutorService> pool) {
        super(name, threadPrefix);
        this.pool = pool.apply(threads);
    }

    /** {@code new ThreadPoolExecutor(n, n, ...)} with an unbounded queue: the JDK's fixed pool. */
    public static UnorderedPoolAdapter fixed(int threadCount) {
        return new UnorderedPoolAdapter("ThreadPoolExecutor (" + threadCount + ", no order)", "tpe",
                tf -> new ThreadPoolExecutor(threadCount, threadCount, 0, TimeUnit.MILLISECONDS,
                        new LinkedBlockingQueue<>(), tf));
    }

    /**
     * {@code new ThreadPoolExecutor(n, n, ...)} over an {@code ArrayBlockingQueue(capacity)} with
     * {@code CallerRunsPolicy}: the JDK's usual bounded pool, where a full queue makes the submitter run the task.
     */
    public static UnorderedPoolAdapter boundedCallerRuns(int threadCount, int capacity) {
        return new UnorderedPoolAdapter("ThreadPoolExecutor (" + threadCount + ", queue " + capacity
                + ", CallerRuns, no order)", "tpe-bounded",
                tf -> new ThreadPoolExecutor(threadCount, threadCount, 0, TimeUnit.MILLISECONDS,
                        new java.util.concurrent.ArrayBlockingQueue<>(capacity), tf,
                        new ThreadPoolExecutor.CallerRunsPolicy()));
    }

    /** {@code Executors.newCachedThreadPool()}: a new thread whenever none is idle. */
    public static UnorderedPoolAdapter cached() {
        return new UnorderedPoolAdapter("cached pool (no order)", "cached",
                tf -> new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new SynchronousQueue<>(), tf));
    }

    /** A FIFO ForkJoinPool of {@code n} workers (no ManagedBlocker, so no compensation threads for parkNanos). */
    public static UnorderedPoolAdapter forkJoin(int threadCount) {
        return new UnorderedPoolAdapter("ForkJoinPool (" + threadCount + ", no order)", "fjp",
                tf -> new ForkJoinPool(threadCount, p -> new CountingWorker(p, tf), null, true));
    }

    @Override
    public boolean ordered() {
        return false;
    }

    @Override
    public void execute(int key, Runnable task) {
        pool.execute(task);
    }

    @Override
    protected void shutdown() {
        Shutdown.terminate(pool);
    }

    /** A ForkJoin worker that reports its life to a {@link CountingThreadFactory}'s counters. */
    private static final class CountingWorker extends ForkJoinWorkerThread {
        private final CountingThreadFactory counters;

        CountingWorker(ForkJoinPool pool, CountingThreadFactory counters) {
            super(pool);
            this.counters = counters;
            setDaemon(true);
            setName("fjp-" + counters.countCreation());
            counters.track(this);
        }

        @Override
        protected void onStart() {
            super.onStart();
            counters.started();
        }

        @Override
        protected void onTermination(Throwable exception) {
            counters.ended();
            super.onTermination(exception);
        }
    }
}
