package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * What the young collections keep after one context held a long backlog: the lanes' chunks that survive a few
 * collections while they wait are promoted, and whatever a promoted, passed chunk still links to is kept by every young
 * collection until an old-generation cycle (docs/hand-off-experiments.md, twenty-sixth set).
 *
 * <p>One context's first task waits on a latch while {@code BACKLOG} tiny tasks are queued behind it, with garbage
 * allocated between them so that young collections fall while they wait. The latch opens, and {@code ROUNDS} rounds
 * of {@code PER_ROUND} more tasks follow, each round queued before the previous one is waited for, so the context is
 * never empty. Prints the young collections in the rounds, their total time, the heap the last of them left, and the
 * process CPU per task (median of the last half of the rounds).
 *
 * <pre>
 * java -Xms2g -Xmx2g -Xmn256m -cp benchmarks/target/benchmarks.jar \
 *     io.github.gatlingexecutor.benchmarks.ab.BacklogGc 3000000 1000000 150
 * </pre>
 * To read a change of the core, compile it to a directory and put that directory ahead of the jar on the class path.
 */
public final class BacklogGc {
    private BacklogGc() {
    }

    private static final class Tiny implements Runnable {
        private final long[] count;

        Tiny(long[] count) {
            this.count = count;
        }

        @Override
        public void run() {
            count[0]++;
        }
    }

    /** Where the garbage goes, so the allocation is not removed. */
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        int backlog = Integer.parseInt(args[0]);
        int perRound = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        GatlingExecutor executor = GatlingExecutor.builder().name("backlog-gc").coreThreads(2).build();
        Executor context = executor.sequential("held");
        long[] count = new long[1];
        CountDownLatch gate = new CountDownLatch(1);
        context.execute(() -> {
            try {
                gate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        for (int i = 0; i < backlog; i++) {
            context.execute(new Tiny(count));
            if ((i & 1023) == 0) {
                for (int g = 0; g < 200; g++) {
                    sink = new byte[1024];
                }
            }
        }
        gate.countDown();

        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long[] gc0 = youngCollections();
        double[] cpu = new double[rounds];
        CountDownLatch previous = null;
        for (int r = 0; r < rounds; r++) {
            long c0 = os.getProcessCpuTime();
            for (int i = 0; i < perRound; i++) {
                context.execute(new Tiny(count));
            }
            CountDownLatch done = new CountDownLatch(1);
            context.execute(done::countDown);
            if (previous != null) {
                previous.await(); // this round is queued behind it: the context never empties
            }
            previous = done;
            cpu[r] = (os.getProcessCpuTime() - c0) / (double) perRound;
        }
        previous.await();
        long[] gc1 = youngCollections();
        executor.shutdown();
        if (!executor.awaitTermination(1, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the executor did not terminate");
        }
        long expected = (long) backlog + (long) perRound * rounds;
        if (count[0] != expected) {
            throw new IllegalStateException("ran " + count[0] + " of " + expected);
        }
        double[] last = Arrays.copyOfRange(cpu, rounds / 2, rounds);
        Arrays.sort(last);
        System.out.printf("young collections %d, %d ms in all; heap after the last %d MB; process CPU %.0f ns a task%n",
                gc1[0] - gc0[0], gc1[1] - gc0[1], heapAfterLastCollection() >> 20, last[last.length / 2]);
    }

    /** Count and total milliseconds of the young collections so far (G1's "Young Generation" collector). */
    private static long[] youngCollections() {
        long[] r = new long[2];
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc.getName().contains("Young")) {
                r[0] += gc.getCollectionCount();
                r[1] += gc.getCollectionTime();
            }
        }
        return r;
    }

    /** The heap in use right after the last young collection, summed over the pools. */
    private static long heapAfterLastCollection() {
        long used = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc.getName().contains("Young") && gc instanceof com.sun.management.GarbageCollectorMXBean) {
                com.sun.management.GcInfo last = ((com.sun.management.GarbageCollectorMXBean) gc).getLastGcInfo();
                if (last != null) {
                    for (MemoryUsage after : last.getMemoryUsageAfterGc().values()) {
                        used += after.getUsed();
                    }
                }
            }
        }
        return used;
    }
}
