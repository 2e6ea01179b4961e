package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * One task in ten blocks for 1 ms (parkNanos, like a short I/O wait), the rest are tiny; 1,024 contexts, one
 * producer. Shows whether an executor adds threads when its threads are blocked rather than busy, and how many.
 */
public final class Blocking extends Scenario {
    public static final int CONTEXTS = 1024;
    private static final long BLOCK_NANOS = 1_000_000;
    private final Sizes sizes;
    private final int[][] keys;

    private static final OrderedWorkload.Work WORK = (key, index) -> runTask(index);

    /**
     * The body of a key's task number {@code index}: it blocks when {@code index % 10 == 3}, one in ten, spread through
     * every key's sequence. Public for the A/B harness's run of this row ({@code PoolGrowthRounds}).
     */
    public static void runTask(int index) {
        if (index % 10 == 3) {
            LockSupport.parkNanos(BLOCK_NANOS);
        }
    }

    /** The row's sequence of keys for {@code tasks} tasks (uniform, fixed seed). */
    public static int[] keys(int tasks) {
        return Keys.uniform(CONTEXTS, tasks, 44);
    }

    public Blocking(Sizes sizes) {
        super("blocking", "5. Blocking: 10% of " + sizes.blockingTasks() + " tasks block 1 ms, " + CONTEXTS
                        + " contexts",
                "Throughput when threads wait rather than compute. The unordered pools are references;"
                        + " GatlingExecutor keeps per-context order.",
                Math.max(1, sizes.warmups() - 1), Math.max(2, sizes.repetitions() - 2));
        this.sizes = sizes;
        this.keys = new int[][] {keys(sizes.blockingTasks())};
    }

    @Override
    public List<Peer> peers() {
        int cores = sizes.cores();
        return Peer.filtered(List.of(Peer.gatling(cores), Peer.fixedPool(cores), Peer.cachedPool(),
                Peer.forkJoin(cores), Peer.guava(cores), Peer.guavaCached(), Peer.perContext()));
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        return OrderedWorkload.run(peer, CONTEXTS, keys, WORK, 300, true);
    }

    @Override
    public double estimatedSecondsPerRun() {
        // the fixed pool is the slow one: tasks/10 x ~1.1 ms / cores; the others are much faster
        return sizes.blockingTasks() / 10.0 * 1.1e-3 / sizes.cores() / 3;
    }
}
