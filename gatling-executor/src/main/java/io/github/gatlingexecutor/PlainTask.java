package io.github.gatlingexecutor;

/**
 * An unordered task on its way through the ready queue, with the coarse time it was accepted (for
 * {@link ExecutorStatistics#oldestQueuedAge()}). The ready queue holds these and lanes, so a worker tells them apart
 * by type, and {@code shutdownNow} hands back the caller's own task, not this holder.
 */
final class PlainTask {
    final Runnable task;
    final long stamp;

    PlainTask(Runnable task, long stamp) {
        this.task = task;
        this.stamp = stamp;
    }
}
