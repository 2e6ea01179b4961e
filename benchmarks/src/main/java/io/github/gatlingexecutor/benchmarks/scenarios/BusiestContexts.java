package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.ContextStatistics;
import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.report.Table;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;

/**
 * What {@code busiestContexts(10)} and {@code statistics()} cost on an executor with many live lanes, each with a task
 * waiting: the worst case for both, which walk the lanes that have work waiting (idle lanes are never looked at). The
 * single worker is held by a gate, so nothing moves while they are timed. Reported: the median time of one call (of
 * 11, on the calling thread's CPU clock, so a descheduled caller does not inflate it) and the share of one core that
 * calling it once a second costs.
 */
public final class BusiestContexts {
    private BusiestContexts() {
    }

    public static Table measure(Sizes sizes, Runner runner) throws InterruptedException {
        int[] counts = sizes.quick() ? new int[] {10_000, 100_000} : new int[] {10_000, 100_000, 1_000_000};
        Table t = new Table("10. Observability cost: busiestContexts(10) and statistics() with N lanes waiting",
                "N contexts, one waiting task each (the worker is held), so every lane is live and has work waiting."
                        + " Median CPU time of one call on the calling thread, and the CPU share of calling it once a"
                        + " second.",
                List.of("live lanes with a waiting task", "busiestContexts(10) ms", "% of a core at 1/s",
                        "statistics() ms", "% of a core at 1/s"));
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int n : counts) {
            System.out.printf("  [%5.0fs] observability cost: %,d lanes%n", runner.elapsedSeconds(), n);
            try (GatlingExecutor executor = GatlingExecutor.builder().name("observed").coreThreads(1).maxThreads(1)
                    .build()) {
                CountDownLatch held = new CountDownLatch(1);
                CountDownLatch release = new CountDownLatch(1);
                executor.execute(() -> {
                    held.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                held.await();
                for (int i = 0; i < n; i++) {
                    Executor lane = executor.sequential(i);
                    lane.execute(() -> { });
                }
                double busiest = medianMillis(mx, () -> {
                    List<ContextStatistics> top = executor.busiestContexts(10);
                    if (top.size() != 10) {
                        throw new IllegalStateException("expected 10 lanes, got " + top.size());
                    }
                });
                double stats = medianMillis(mx, () -> {
                    if (executor.statistics().oldestQueuedAge().isZero()) {
                        throw new IllegalStateException("tasks wait, yet the oldest age is zero");
                    }
                });
                t.row(List.of(Table.num(n), Table.num(busiest), Table.num(busiest / 10), Table.num(stats),
                        Table.num(stats / 10)));
                release.countDown();
            }
        }
        t.notes.add("A live lane with nothing waiting (an idle lane within its grace) is never walked: with a million"
                + " such lanes and little waiting, both calls cost what the waiting lanes cost.");
        return t;
    }

    private static double medianMillis(ThreadMXBean mx, Runnable call) {
        double[] ms = new double[11];
        for (int i = 0; i < ms.length; i++) {
            long t0 = mx.getCurrentThreadCpuTime();
            call.run();
            ms[i] = (mx.getCurrentThreadCpuTime() - t0) / 1e6;
        }
        Arrays.sort(ms);
        return ms[ms.length / 2];
    }
}
