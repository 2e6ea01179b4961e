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

    Settings(String name, int coreThreads, int maxThreads, long auxiliaryKeepAliveNanos, long checkPeriodNanos,
             long blockedThresholdNanos, int coreBumpThreshold, int batchSize, long minTurnNanos,
             ThreadFactory threadFactory, UncaughtExceptionHandler exceptionHandler, int maxQueuedPerContext,
             int maxQueued, Overflow overflow) {
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
    }

    /** Whether any capacity limit is set: otherwise the submit paths skip every admission step. */
    boolean bounded() {
        return maxQueuedPerContext > 0 || maxQueued > 0;
    }
}
