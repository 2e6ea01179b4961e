package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.function.Consumer;

/**
 * A {@link CountingAdapter} that keeps one ordered executor ("lane") per key, made on first use by
 * {@link #newLane(int)} and cached in an array slot ({@link PerKey}), so every such peer pays the same lookup.
 *
 * @param <L> the per-key executor type
 */
abstract class LanePerKeyAdapter<L extends Executor> extends CountingAdapter {
    private final PerKey<L> lanes;

    LanePerKeyAdapter(String name, String threadPrefix, int keys) {
        this(name, threadPrefix, null, keys);
    }

    LanePerKeyAdapter(String name, String threadPrefix, ThreadFactory delegate, int keys) {
        super(name, threadPrefix, delegate);
        // Lanes are made lazily, after the subclass constructor has built the executors newLane uses.
        this.lanes = new PerKey<>(keys, this::newLane, this::discard);
    }

    /** Makes the lane for {@code key}; called at most once per key, except when two producers race for it. */
    protected abstract L newLane(int key);

    /** Releases a lane that lost a creation race (never used). Nothing by default. */
    protected void discard(L lane) {
    }

    /** The lane of {@code key}, made on first use. */
    protected final L lane(int key) {
        return lanes.get(key);
    }

    protected final void forEachLane(Consumer<L> action) {
        lanes.forEach(action);
    }
}
