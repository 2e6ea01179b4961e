package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The tests' one checker of per-context order (SPEC points 2 and 3): tasks of one context never overlap, and the tasks
 * of one context from one stream (a producer, say) run in the order of their numbers: for sequential tasks 1, 2, 3,
 * ..., none missing or repeated ({@link #enter(int, int, long)}); where gaps are allowed (a coalescing context, whose
 * waiting tasks are replaced by newer ones; a stream that numbers its tasks across several contexts), in increasing
 * order ({@link #enterIncreasing}). A task calls an {@code enter} method first thing and {@link #exit} last thing.
 *
 * <p>Only an overlap can make two tasks of one context touch its per-stream state at once, and the overlap counter is
 * an atomic, so an overlap is always reported even when it also garbles that state. Without an overlap the state is
 * passed from task to task by the executor's own happens-before edge (one task of a context happens before the next),
 * which is itself under test: a missing edge shows up as a stale sequence number, that is as an order problem.
 */
final class OrderChecker {
    /** Problems kept with their text; the counters below count them all. */
    private static final int KEPT = 20;

    private final int streams;
    private final AtomicInteger[] inside;
    /** The last sequence number that ran, per context and stream; plain (see the class comment). */
    private final long[] last;
    private final long[] runs;
    private final AtomicLong ran = new AtomicLong();
    private final AtomicInteger overlaps = new AtomicInteger();
    private final AtomicInteger misorders = new AtomicInteger();
    private final Queue<String> problems = new ConcurrentLinkedQueue<>();

    /** A checker of {@code contexts} contexts (numbered from 0), each fed by {@code streams} streams. */
    OrderChecker(int contexts, int streams) {
        this.streams = streams;
        inside = new AtomicInteger[contexts];
        for (int i = 0; i < contexts; i++) {
            inside[i] = new AtomicInteger();
        }
        last = new long[contexts * streams];
        runs = new long[contexts];
    }

    /** A checker of {@code contexts} contexts with one stream each. */
    OrderChecker(int contexts) {
        this(contexts, 1);
    }

    /** Task {@code seq} (1-based) of {@code stream} in {@code context} starts. */
    void enter(int context, int stream, long seq) {
        enter(context);
        int i = context * streams + stream;
        if (seq != last[i] + 1) {
            misorders.incrementAndGet();
            problem("context " + context + " stream " + stream + ": task " + seq + " ran after " + last[i]);
        }
        last[i] = seq;
    }

    /** Task {@code value} of {@code stream} in {@code context} starts: it must be greater than the last one's. */
    void enterIncreasing(int context, int stream, long value) {
        enter(context);
        int i = context * streams + stream;
        if (value <= last[i]) {
            misorders.incrementAndGet();
            problem("context " + context + " stream " + stream + ": task " + value + " ran after " + last[i]);
        }
        last[i] = value;
    }

    /** Task {@code seq} (1-based) of the only stream of {@code context} starts. */
    void enter(int context, long seq) {
        enter(context, 0, seq);
    }

    /** A task of {@code context} whose order is not checked starts (it is checked for overlap only). */
    void enter(int context) {
        if (inside[context].incrementAndGet() != 1) {
            overlaps.incrementAndGet();
            problem("overlap in context " + context);
        }
    }

    /** The task of {@code context} that entered last ends. */
    void exit(int context) {
        runs[context]++;
        inside[context].decrementAndGet();
        ran.incrementAndGet();
    }

    private void problem(String text) {
        if (problems.size() < KEPT) {
            problems.add(text);
        }
    }

    /** Tasks that ran to their {@link #exit}. */
    long ran() {
        return ran.get();
    }

    /**
     * Tasks of {@code context} that ran. Read it only once those tasks are known to be done through some
     * happens-before edge (a latch they counted down, a future), as for any plain state the tasks wrote.
     */
    long runs(int context) {
        return runs[context];
    }

    /** The last sequence number of {@code stream} that ran in {@code context}; the same visibility rule as runs. */
    long last(int context, int stream) {
        return last[context * streams + stream];
    }

    /** Fails if any two tasks of one context overlapped or any stream ran out of order. */
    void assertClean(String what) {
        assertTrue(overlaps.get() == 0 && misorders.get() == 0, () -> what + ": " + overlaps.get()
                + " overlap(s), " + misorders.get() + " order problem(s); first ones: " + problems);
    }
}
