package io.github.gatlingexecutor;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.*;

/** Temporary stub: replaced by the real engine. */
final class Engine {
    final Settings settings;
    Engine(Settings s) { this.settings = s; }
    Executor laneHandle(Object c, boolean coalescing) { throw new UnsupportedOperationException(); }
    void execute(Runnable r) { throw new UnsupportedOperationException(); }
    ExecutorStatistics statistics() { throw new UnsupportedOperationException(); }
    List<ContextStatistics> contextStatistics() { throw new UnsupportedOperationException(); }
    <T> Future<T> submit(Runnable r, T v) { throw new UnsupportedOperationException(); }
    <T> Future<T> submit(Callable<T> c) { throw new UnsupportedOperationException(); }
    <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> t, boolean timed, long n) throws InterruptedException { throw new UnsupportedOperationException(); }
    <T> T invokeAny(Collection<? extends Callable<T>> t, boolean timed, long n) throws InterruptedException, ExecutionException, TimeoutException { throw new UnsupportedOperationException(); }
    <V> ScheduledFuture<V> schedule(Runnable r, Callable<V> c, long d, TimeUnit u) { throw new UnsupportedOperationException(); }
    ScheduledFuture<?> schedulePeriodic(Runnable r, long i, long p, boolean rate, TimeUnit u) { throw new UnsupportedOperationException(); }
    void shutdown() {}
    List<Runnable> shutdownNow() { return List.of(); }
    boolean isShutdown() { return false; }
    boolean isTerminated() { return false; }
    boolean awaitTermination(long n) { return false; }
    void close() {}
    String stateName() { return "?"; }
}
