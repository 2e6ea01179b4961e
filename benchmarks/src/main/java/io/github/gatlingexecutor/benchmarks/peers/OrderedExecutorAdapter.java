package io.github.gatlingexecutor.benchmarks.peers;

/**
 * One executor under test, seen through the smallest interface every scenario needs: "run this task in the order of
 * key {@code key}". Each peer maps a key onto its own notion of an ordered lane (a lane handle, a hashed stripe, an
 * executor per key).
 *
 * <p>Keys are non-negative ints so that the harness pays no boxing and the peers pay the same lookup cost (an array
 * slot) for their per-key state.
 */
public interface OrderedExecutorAdapter extends AutoCloseable {

    /** Short label used in tables and charts. */
    String name();

    /** {@code false} for the references that run tasks of one key in any order (their order is not checked). */
    boolean ordered();

    /** Runs {@code task} after every earlier task of {@code key} (if {@link #ordered()}). */
    void execute(int key, Runnable task);

    /** Threads this peer has created so far (through a counting thread factory, see {@link #threadCountSource()}). */
    int threadsCreated();

    /** The most of this peer's threads alive at once. */
    int peakThreads();

    /** CPU time used so far by this peer's live threads, or -1 if unknown. */
    default long threadCpuNanos() {
        return -1;
    }

    /** Where {@link #threadsCreated()} comes from, for the report's footnotes. */
    default String threadCountSource() {
        return "counting ThreadFactory";
    }

    /** Shuts the peer down and waits (bounded) for its threads to finish. */
    @Override
    void close();
}
