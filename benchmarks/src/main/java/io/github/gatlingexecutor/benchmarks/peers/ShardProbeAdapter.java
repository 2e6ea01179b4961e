package io.github.gatlingexecutor.benchmarks.peers;

import io.github.gatlingexecutor.benchmarks.probe.ShardProbe;

/**
 * The {@link ShardProbe} design probe seen as a peer, so the comparison runner can measure it beside the executor
 * and the pinned peers (with {@code -Dprobe.shard=true}). Keys map to shards by hash, like SOFAJRaft's index.
 */
public final class ShardProbeAdapter extends LanePerKeyAdapter<java.util.concurrent.Executor> {
    private final ShardProbe probe;

    public ShardProbeAdapter(String name, int keys, int workers, boolean lanes) {
        super(name, "shard", keys);
        this.probe = new ShardProbe(workers, Integer.getInteger("probe.shardsPerWorker", 2), lanes,
                Long.getLong("probe.takeoverNanos", 100_000L), threads);
    }

    @Override
    protected java.util.concurrent.Executor newLane(int key) {
        return probe.handle(key);
    }

    @Override
    public void execute(int key, Runnable task) {
        lane(key).execute(task);
    }

    @Override
    protected void shutdown() {
        probe.close();
    }
}
