package io.github.gatlingexecutor.benchmarks.scenarios;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/** Process CPU time and heap use, through the platform MXBeans. */
public final class Cpu {
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

    private Cpu() {
    }

    /** CPU time used by the whole process (all threads, including the GC and the JIT), in nanoseconds. */
    public static long processNanos() {
        return OS.getProcessCpuTime();
    }

    /** Heap in use after a few full collections (several, because one may leave finalizable or soft garbage). */
    public static long usedHeapAfterGc() {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            sleep(30);
            used = Math.min(used, MEMORY.getHeapMemoryUsage().getUsed());
        }
        return used;
    }

    public static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
