package io.github.gatlingexecutor.benchmarks.scenarios;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadMXBean;

/** Process and thread CPU time and heap use, through the platform MXBeans. */
public final class Cpu {
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /**
     * Whether {@link #currentThreadNanos} measures anything: supported and enabled (a JVM where it is disabled
     * answers -1, which a difference would turn into a CPU time of 0).
     */
    public static final boolean THREAD_TIMED = threadTimed();

    private Cpu() {
    }

    /** CPU time used by the whole process (all threads, including the GC and the JIT), in nanoseconds. */
    public static long processNanos() {
        return OS.getProcessCpuTime();
    }

    /** CPU time used by the calling thread so far, counted only while it runs; meaningful if {@link #THREAD_TIMED}. */
    public static long currentThreadNanos() {
        return THREADS.getCurrentThreadCpuTime();
    }

    private static boolean threadTimed() {
        try {
            return THREADS.isCurrentThreadCpuTimeSupported() && THREADS.isThreadCpuTimeEnabled();
        } catch (UnsupportedOperationException e) {
            return false;
        }
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
