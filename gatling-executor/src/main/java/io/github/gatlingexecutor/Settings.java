package io.github.gatlingexecutor;

import java.lang.Thread.UncaughtExceptionHandler;
import java.util.concurrent.ThreadFactory;

/** The validated, immutable settings of one executor, as the builder produced them. */
final class Settings {
    /**
     * The longest duration the engine keeps, about 73 years: settings and scheduled delays and periods longer than
     * this count as this long. Added to {@code System.nanoTime()} readings, whose sums are compared by difference.
     */
    static final long MAX_DURATION_NANOS = Long.MAX_VALUE >> 2;

    final String name;
    final int coreThreads;
    final int maxThreads;
    final long auxiliaryKeepAliveNanos;
    final long checkPeriodNanos;
    final long blockedThresholdNanos;
    final int coreBumpThreshold;
    final int batchSize;
    final long minTurnNanos;
    final ThreadFactory threadFactory;               // null: the executor names and creates its own threads
    final UncaughtExceptionHandler exceptionHandler; // null: the worker thread's own handler
    final int maxQueuedPerContext;                   // 0: unbounded
    final int maxQueued;                             // 0: unbounded
    final Overflow overflow;
    final int lingerLook;                            // SequentialLane.LINGER_LOOK but in the model checks
    /** The context class loader of the thread that built the executor, given to every thread of the executor's own. */
    private final ClassLoader builderClassLoader;

    Settings(String name, int coreThreads, int maxThreads, long auxiliaryKeepAliveNanos, long checkPeriodNanos,
             long blockedThresholdNanos, int coreBumpThreshold, int batchSize, long minTurnNanos,
             ThreadFactory threadFactory, UncaughtExceptionHandler exceptionHandler, int maxQueuedPerContext,
             int maxQueued, Overflow overflow, int lingerLook) {
        this.name = name;
        this.coreThreads = coreThreads;
        this.maxThreads = maxThreads;
        this.auxiliaryKeepAliveNanos = auxiliaryKeepAliveNanos;
        this.checkPeriodNanos = checkPeriodNanos;
        this.blockedThresholdNanos = blockedThresholdNanos;
        this.coreBumpThreshold = coreBumpThreshold;
        this.batchSize = batchSize;
        this.minTurnNanos = minTurnNanos;
        this.threadFactory = threadFactory;
        this.exceptionHandler = exceptionHandler;
        this.maxQueuedPerContext = maxQueuedPerContext;
        this.maxQueued = maxQueued;
        this.overflow = overflow;
        this.lingerLook = lingerLook;
        this.builderClassLoader = Thread.currentThread().getContextClassLoader();
    }

    /**
     * Makes one of the executor's own threads, when no factory is given. Threads start lazily, on whichever thread
     * finds one missing (a submitter, a worker, the checker, a caller waiting), and {@code new Thread} copies from
     * that thread its inheritable thread-local values, its context class loader, its priority and its daemon status:
     * a request's values would then live as long as the executor and be seen by every task run there, and what the
     * threads are would depend on who happened to start them. So nothing is inherited but the thread group; the class
     * loader is the builder's, the priority normal (capped by the group, as {@code Executors.defaultThreadFactory()}
     * does).
     */
    Thread newOwnThread(Runnable body, String threadName, boolean daemon) {
        Thread t = new Thread(null, body, threadName, 0, false);
        t.setDaemon(daemon);
        t.setPriority(Thread.NORM_PRIORITY);
        t.setContextClassLoader(builderClassLoader);
        return t;
    }

    /** Whether any capacity limit is set: otherwise the submit paths skip every admission step. */
    boolean bounded() {
        return maxQueuedPerContext > 0 || maxQueued > 0;
    }
}
