package io.github.gatlingexecutor.benchmarks;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.SequentialRunnable;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The seed design's "benchmark comparison test" as a standalone program: 16 contexts each get 50,000 events of
 * ~1,000 atomic increments, first on one {@code Executors.newSingleThreadExecutor()} per context, then on one
 * {@code new GatlingExecutor(name, 2)}, submitted exactly as the seed's code does (the same Runnable per context,
 * round-robin over contexts).
 *
 * <p>Two corrections to the seed's code: the clock stops when <em>all</em> contexts have finished (the seed's
 * {@code CountDownLatch(1)} stopped it at the first), and the increments go to a per-context {@code AtomicLong} that
 * is read afterwards rather than a fresh local one the JIT may remove.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar io.github.gatlingexecutor.benchmarks.SeedScenario [runs]</pre>
 */
public final class SeedScenario {
    static final int LOOP_MAX = 50_000;
    static final int CONTEXT_COUNT = 16;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private SeedScenario() {
    }

    /** Elapsed nanos and threads started during the run (JVM-wide count: nothing else starts threads here). */
    record Run(long nanos, long threadsStarted, long work) {
    }

    static Run executorPerContext() throws InterruptedException {
        CountDownLatch allDone = new CountDownLatch(CONTEXT_COUNT);
        AtomicLong[] counters = new AtomicLong[CONTEXT_COUNT];
        AtomicLong[] work = new AtomicLong[CONTEXT_COUNT];
        ExecutorService[] executors = new ExecutorService[CONTEXT_COUNT];
        Runnable[] runnables = new Runnable[CONTEXT_COUNT];
        for (int i = 0; i < CONTEXT_COUNT; i++) {
            AtomicLong counter = counters[i] = new AtomicLong();
            AtomicLong someWork = work[i] = new AtomicLong();
            executors[i] = Executors.newSingleThreadExecutor();
            runnables[i] = () -> {
                for (int j = 0; j < 1000; j++) {
                    someWork.incrementAndGet();
                }
                if (counter.incrementAndGet() == LOOP_MAX) {
                    allDone.countDown();
                }
            };
        }
        long threads0 = THREADS.getTotalStartedThreadCount();
        long t0 = System.nanoTime();
        for (int j = 0; j < LOOP_MAX; j++) {
            for (int i = 0; i < CONTEXT_COUNT; i++) {
                executors[i].execute(runnables[i]);
            }
        }
        allDone.await();
        long nanos = System.nanoTime() - t0;
        long threads = THREADS.getTotalStartedThreadCount() - threads0;
        for (ExecutorService e : executors) {
            e.shutdown();
        }
        for (ExecutorService e : executors) {
            e.awaitTermination(10, TimeUnit.SECONDS);
        }
        return new Run(nanos, threads, sum(work));
    }

    static Run gatling() throws InterruptedException {
        CountDownLatch allDone = new CountDownLatch(CONTEXT_COUNT);
        AtomicLong[] counters = new AtomicLong[CONTEXT_COUNT];
        AtomicLong[] work = new AtomicLong[CONTEXT_COUNT];
        SequentialRunnable[] runnables = new SequentialRunnable[CONTEXT_COUNT];
        long threads0 = THREADS.getTotalStartedThreadCount();
        GatlingExecutor gatling = new GatlingExecutor("test-vs-exec", 2);
        for (int i = 0; i < CONTEXT_COUNT; i++) {
            Integer context = i;
            AtomicLong counter = counters[i] = new AtomicLong();
            AtomicLong someWork = work[i] = new AtomicLong();
            runnables[i] = new SequentialRunnable() {
                @Override
                public void run() {
                    for (int j = 0; j < 1000; j++) {
                        someWork.incrementAndGet();
                    }
                    if (counter.incrementAndGet() == LOOP_MAX) {
                        allDone.countDown();
                    }
                }

                @Override
                public Object context() {
                    return context;
                }
            };
        }
        long t0 = System.nanoTime();
        for (int j = 0; j < LOOP_MAX; j++) {
            for (int i = 0; i < CONTEXT_COUNT; i++) {
                gatling.execute(runnables[i]);
            }
        }
        allDone.await();
        long nanos = System.nanoTime() - t0;
        long threads = THREADS.getTotalStartedThreadCount() - threads0;
        gatling.close();
        return new Run(nanos, threads, sum(work));
    }

    private static long sum(AtomicLong[] values) {
        long s = 0;
        for (AtomicLong v : values) {
            s += v.get();
        }
        return s;
    }

    public static void main(String[] args) throws InterruptedException {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        System.out.printf(Locale.ROOT, "Seed scenario: %d contexts x %d tasks; %d cores; %s %s%n", CONTEXT_COUNT,
                LOOP_MAX, Runtime.getRuntime().availableProcessors(), System.getProperty("java.vm.name"),
                Runtime.version());
        System.out.println("(one unmeasured warm-up of each first; then the two alternate, executor first)");
        executorPerContext();
        gatling();
        System.out.println();
        System.out.println("| Run | Executor per context (ms) | threads created | GatlingExecutor(name, 2) (ms)"
                + " | threads created |");
        System.out.println("| --- | ---: | ---: | ---: | ---: |");
        long expected = (long) CONTEXT_COUNT * LOOP_MAX * 1000;
        for (int r = 1; r <= runs; r++) {
            System.gc();
            Run e = executorPerContext();
            System.gc();
            Run g = gatling();
            if (e.work != expected || g.work != expected) {
                throw new AssertionError("work lost: " + e.work + " / " + g.work + " of " + expected);
            }
            System.out.printf(Locale.ROOT, "| %d | %d | %d | %d | %d |%n", r, e.nanos / 1_000_000, e.threadsStarted,
                    g.nanos / 1_000_000, g.threadsStarted);
        }
        System.out.println();
        System.out.println("threads created = ThreadMXBean.getTotalStartedThreadCount() delta over the run (for"
                + " GatlingExecutor: its workers and its checker thread).");
    }
}
