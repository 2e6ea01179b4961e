package io.github.gatlingexecutor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * What the operating system says of a worker's thread, where it says it through {@code /proc} (Linux): whether the
 * thread is runnable (on a core, or waiting for one) or asleep in the kernel.
 *
 * <p>Why the checker needs it: outside Java code, a thread blocked in native I/O and one that a saturated machine has
 * taken off its core in the middle of a short native call look the same to the JVM (both {@code RUNNABLE}, in native,
 * their CPU clocks still). Only the kernel tells them apart: the first sleeps ({@code S} or {@code D}), the second is
 * runnable ({@code R}). Counted as blocked, the second started an auxiliary thread on saturated cores, against SPEC 6.
 *
 * <p>Read only for a worker the checker already finds stuck in one task and outside Java code, so the file read stays
 * off every common path. Anything that fails (no {@code /proc}, a security manager) makes the answer unknown, and the
 * checker then judges as it does without it. A virtual-thread worker gets no id (its carrier changes), but never needs
 * one: it has no CPU clock, so the checker counts it as stuck at the threshold before it would ask.
 */
final class OsThreads {

    /** {@link #state}: the thread is on a core or waits for one. */
    static final int RUNNABLE = 1;
    /** {@link #state}: the thread sleeps in the kernel (an interruptible or an uninterruptible wait). */
    static final int ASLEEP = 0;
    /** {@link #state}: not known (no such file, or a state that is neither, such as stopped by a debugger). */
    static final int UNKNOWN = -1;

    private OsThreads() {
    }

    /**
     * The calling thread's id in the kernel, or 0 if it cannot be known here: not Linux (no {@code /proc/thread-self},
     * Linux 3.17+), no access, or a virtual thread (the id would be its carrier's of the moment). Called once by each
     * worker as it starts: one system call (a readlink).
     */
    static int currentId() {
        if (SubmitCounter.isVirtual(Thread.currentThread())) {
            return 0;
        }
        try {
            // "<pid>/task/<tid>": the link names the calling thread, whatever thread reads it.
            Path link = Files.readSymbolicLink(Paths.get("/proc/thread-self"));
            return Integer.parseInt(link.getFileName().toString());
        } catch (IOException | RuntimeException unavailable) { // no such link, or a SecurityException
            return 0;
        }
    }

    /**
     * The kernel's state of the thread with id {@code tid} of this process (from {@link #currentId}):
     * {@link #RUNNABLE}, {@link #ASLEEP} or {@link #UNKNOWN}. One read of its {@code stat} file; racy, as any look at
     * another thread is.
     */
    static int state(int tid) {
        if (tid <= 0) {
            return UNKNOWN;
        }
        byte[] stat;
        try {
            stat = Files.readAllBytes(Paths.get("/proc/self/task/" + tid + "/stat"));
        } catch (IOException | RuntimeException unavailable) { // ended, or no access
            return UNKNOWN;
        }
        return stateOf(new String(stat, StandardCharsets.US_ASCII));
    }

    /**
     * The state field of a {@code stat} line: "tid (name) S ...". The name is the thread's, chosen by its factory, and
     * may hold spaces and parentheses itself, so the state is found after the last ')'.
     */
    static int stateOf(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0 || close + 2 >= stat.length()) {
            return UNKNOWN;
        }
        switch (stat.charAt(close + 2)) {
            case 'R':
                return RUNNABLE;
            case 'S': // interruptible sleep: a futex, a socket, a pipe, a timer
            case 'D': // uninterruptible sleep: disk I/O, some file systems
                return ASLEEP;
            default: // stopped or traced (a debugger), dead, a zombie, or unknown to this reader
                return UNKNOWN;
        }
    }
}
