package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.Overflow;
import io.github.gatlingexecutor.benchmarks.peers.BookKeeperAdapter;
import io.github.gatlingexecutor.benchmarks.peers.GatlingAdapter;
import io.github.gatlingexecutor.benchmarks.peers.NettyPinnedAdapter;
import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.peers.UnorderedPoolAdapter;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Overload: two producers offer CPU-bound tasks (about 20 us each) three times faster than the workers can run them,
 * for a fixed time. Measured: tasks completed per second while it lasts, the peak heap above the starting point
 * (sampled every 10 ms), and how many submissions were refused. An unbounded executor keeps accepting, so its queue and
 * heap grow for as long as the overload lasts; a bounded one should hold its heap flat and lose no throughput. Peers
 * that only reject (BookKeeper's {@code maxTasksInQueue}, Netty's {@code maxPendingTasks}) are retried by the producer
 * after a 20 us pause, the usual way to live with them; the bounded {@code ThreadPoolExecutor} runs a refused task on
 * the producer ({@code CallerRunsPolicy}). Each producer owns half the keys, so per-key order is checked.
 */
public final class Overload extends Scenario {
    private static final int KEYS = 1024;
    private static final long TASK_NANOS = 20_000;
    /** The executor-wide bound given to every bounded peer (split per thread for those that bound per thread). */
    public static final int CAPACITY = 10_000;
    private static final int PRODUCERS = 2;
    private final Sizes sizes;
    private final double seconds;

    public Overload(Sizes sizes) {
        super("overload", "9. Overload: producers offer 3x what " + sizes.cores() + " workers can run (20 us tasks, "
                        + KEYS + " keys) for " + (sizes.quick() ? 2 : 10) + " s",
                "Completed tasks/s during the overload, the peak heap growth, and refused submissions. Bounded peers"
                        + " hold " + CAPACITY + " waiting tasks in all; refused ones are retried after 20 us.",
                1, sizes.quick() ? 2 : 3);
        this.sizes = sizes;
        this.seconds = sizes.quick() ? 2 : 10;
    }

    @Override
    public List<Peer> peers() {
        int cores = sizes.cores();
        int perThread = Math.max(1, CAPACITY / cores);
        return Peer.filtered(List.of(
                Peer.gatling(cores),
                new Peer(GATLING_BOUNDED, true, keys -> new GatlingAdapter(GATLING_BOUNDED, keys, cores, false,
                        b -> b.maxQueued(CAPACITY).overflow(Overflow.block(Duration.ofMinutes(1))))),
                new Peer("BookKeeper maxTasksInQueue", true,
                        keys -> new BookKeeperAdapter("BookKeeper maxTasksInQueue", cores, perThread)),
                new Peer("Netty maxPendingTasks", true,
                        keys -> new NettyPinnedAdapter("Netty maxPendingTasks", cores, perThread)),
                new Peer("ThreadPoolExecutor CallerRuns (no order)", false,
                        keys -> UnorderedPoolAdapter.boundedCallerRuns(cores, CAPACITY))));
    }

    /** GatlingExecutor with {@code maxQueued(CAPACITY)} and {@code Overflow.block}. */
    public static final String GATLING_BOUNDED = "GatlingExecutor maxQueued + block";

    @Override
    public double estimatedSecondsPerRun() {
        return seconds + 2;
    }

    @Override
    public boolean timeMatters() {
        return false;
    }

    private static final class State {
        final int[] next = new int[KEYS];
        final AtomicLong violations = new AtomicLong();
        final LongAdder done = new LongAdder();
        volatile boolean draining; // after the overload: tasks stop computing, so the backlog drains fast
    }

    private static final class Work implements Runnable {
        private final State state;
        private final int key;
        private final int seq;

        Work(State state, int key, int seq) {
            this.state = state;
            this.key = key;
            this.seq = seq;
        }

        @Override
        public void run() {
            if (state.next[key] != seq) {
                state.violations.incrementAndGet();
            }
            state.next[key] = seq + 1;
            if (!state.draining) {
                long end = System.nanoTime() + TASK_NANOS;
                while (System.nanoTime() - end < 0) {
                    Thread.onSpinWait();
                }
            }
            state.done.increment();
        }
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        State state = new State();
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        System.gc();
        long baseHeap = memory.getHeapMemoryUsage().getUsed();
        AtomicLong peakHeap = new AtomicLong(baseHeap);
        AtomicLong accepted = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        // Offered rate: three times what the workers can run, split between the producers.
        double perProducerPerSecond = 3.0 * sizes.cores() * 1e9 / TASK_NANOS / PRODUCERS;
        OrderedExecutorAdapter adapter = peer.create(KEYS);
        try {
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            Thread sampler = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    peakHeap.accumulateAndGet(memory.getHeapMemoryUsage().getUsed(), Math::max);
                    LockSupport.parkNanos(10_000_000L);
                }
            }, "overload-heap-sampler");
            sampler.setDaemon(true);
            sampler.start();
            Thread[] producers = new Thread[PRODUCERS];
            for (int p = 0; p < PRODUCERS; p++) {
                int producer = p;
                producers[p] = new Thread(() -> {
                    int[] seqs = new int[KEYS];
                    long sent = 0;
                    int key = producer;
                    while (System.nanoTime() - end < 0) {
                        // Pace in bursts of 100: the producer is ahead of its schedule only when it may rest.
                        long due = start + (long) (sent / perProducerPerSecond * 1e9);
                        long ahead = due - System.nanoTime();
                        if (ahead > 0) {
                            LockSupport.parkNanos(ahead);
                        }
                        for (int i = 0; i < 100; i++) {
                            Work w = new Work(state, key, seqs[key]);
                            for (;;) {
                                try {
                                    adapter.execute(key, w);
                                    break;
                                } catch (RejectedExecutionException full) {
                                    refused.incrementAndGet();
                                    LockSupport.parkNanos(20_000);
                                }
                            }
                            seqs[key]++;
                            accepted.incrementAndGet();
                            key = (key + PRODUCERS) % KEYS; // this producer's keys only: per-key order is defined
                        }
                        sent += 100;
                    }
                }, "overload-producer-" + p);
                producers[p].start();
            }
            for (Thread t : producers) {
                t.join();
            }
            long overloadNanos = System.nanoTime() - start;
            long completedDuring = state.done.sum();
            sampler.interrupt();
            state.draining = true;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (state.done.sum() < accepted.get() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            String failure = null;
            if (state.done.sum() < accepted.get()) {
                failure = "timed out draining: " + state.done.sum() + " of " + accepted.get() + " tasks ran";
            } else if (adapter.ordered() && state.violations.get() > 0) {
                failure = "order lost: " + state.violations.get() + " tasks ran out of sequence";
            }
            Map<String, Double> extra = new LinkedHashMap<>();
            extra.put("completed/s", completedDuring / (overloadNanos / 1e9));
            extra.put("accepted/s", accepted.get() / (overloadNanos / 1e9));
            extra.put("peak heap +MB", (peakHeap.get() - baseHeap) / (double) (1 << 20));
            extra.put("refused", (double) refused.get());
            return new RunResult(peer.name(), overloadNanos, completedDuring, adapter.threadsCreated(),
                    adapter.peakThreads(), failure, extra);
        } finally {
            adapter.close();
        }
    }
}
