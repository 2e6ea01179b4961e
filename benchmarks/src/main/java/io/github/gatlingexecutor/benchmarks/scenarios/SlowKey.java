package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One slow key among many: context 0 gets a backlog of CPU-bound tasks (about 200 us each, about a second of work in
 * all, submitted up front); meanwhile tiny tasks for the other contexts arrive at about 20,000 a second, the producer
 * parking between them. Measured: the submit-to-start wait of the other contexts' tasks. An executor that pins keys to
 * threads makes every context that hashes onto the slow key's thread wait for its backlog; one that shares its
 * threads between contexts should not.
 */
public final class SlowKey extends Scenario {
    public static final int CONTEXTS = 256;
    /** How long each of the slow context's tasks computes. */
    public static final long SLOW_TASK_NANOS = 200_000;
    /** The pace of the tiny tasks for the other contexts: one per this many nanoseconds. */
    public static final long INTERVAL_NANOS = 50_000;
    private final Sizes sizes;
    private final int slowTasks;
    private final int[] keys;

    public SlowKey(Sizes sizes) {
        super("slow-key", "8. One slow key: a " + sizes.slowKeySeconds() + " s backlog of 200 us tasks in one of "
                        + CONTEXTS + " contexts, ~20,000 tiny tasks/s for the others",
                "Submit-to-start wait of the other contexts' tasks (HdrHistogram) while one context works off its"
                        + " backlog. The clock of each wait starts at the actual submit.",
                1, oddAtLeast3(sizes.repetitions()));
        this.sizes = sizes;
        this.slowTasks = (int) (sizes.slowKeySeconds() * 1e9 / SLOW_TASK_NANOS);
        int[] uniform = Keys.uniform(CONTEXTS - 1, (int) (sizes.slowKeySeconds() * 1e9 / INTERVAL_NANOS), 47);
        for (int i = 0; i < uniform.length; i++) {
            uniform[i]++; // contexts 1 .. CONTEXTS-1: never the slow one
        }
        this.keys = uniform;
    }

    @Override
    public List<Peer> peers() {
        return Peer.filtered(Peer.orderedPeers(sizes.cores(), false));
    }

    @Override
    public double estimatedSecondsPerRun() {
        return sizes.slowKeySeconds() * 1.4;
    }

    @Override
    public boolean timeMatters() {
        return false;
    }

    /** Per-context order check, shared by both kinds of task; only touched by the context's running task. */
    private static final class Order {
        final int[] next = new int[CONTEXTS];
        final AtomicLong violations = new AtomicLong();
        final AtomicLong done = new AtomicLong();

        void check(int key, int seq) {
            if (next[key] != seq) {
                violations.incrementAndGet();
            }
            next[key] = seq + 1;
            done.incrementAndGet();
        }
    }

    private static final class Slow implements Runnable {
        private final Order order;
        private final int seq;

        Slow(Order order, int seq) {
            this.order = order;
            this.seq = seq;
        }

        @Override
        public void run() {
            order.check(0, seq);
            long end = System.nanoTime() + SLOW_TASK_NANOS;
            while (System.nanoTime() - end < 0) {
                Thread.onSpinWait(); // CPU-bound on purpose: the thread stays busy, it does not block
            }
        }
    }

    private static final class Tiny implements Runnable {
        private final Order order;
        private final Recorder waits;
        private final int key;
        private final int seq;
        private final long submitted;

        Tiny(Order order, Recorder waits, int key, int seq, long submitted) {
            this.order = order;
            this.waits = waits;
            this.key = key;
            this.seq = seq;
            this.submitted = submitted;
        }

        @Override
        public void run() {
            Histograms.record(waits, System.nanoTime() - submitted);
            order.check(key, seq);
        }
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        Recorder waits = Histograms.recorder();
        Order order = new Order();
        int[] seqs = new int[CONTEXTS];
        long total = slowTasks + keys.length;
        OrderedExecutorAdapter adapter = peer.create(CONTEXTS);
        try {
            touchEveryKey(adapter, CONTEXTS, INTERVAL_NANOS);
            long t0 = System.nanoTime();
            for (int i = 0; i < slowTasks; i++) {
                adapter.execute(0, new Slow(order, seqs[0]++));
            }
            long due = System.nanoTime();
            for (int key : keys) {
                due += INTERVAL_NANOS;
                parkUntil(due);
                adapter.execute(key, new Tiny(order, waits, key, seqs[key]++, System.nanoTime()));
            }
            long submitEnd = System.nanoTime();
            long deadline = submitEnd + TimeUnit.SECONDS.toNanos(30);
            while (order.done.get() < total && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            long nanos = System.nanoTime() - t0;
            String failure = null;
            if (order.done.get() < total) {
                failure = "timed out: " + order.done.get() + " of " + total + " tasks ran";
            } else if (adapter.ordered() && order.violations.get() > 0) {
                failure = "order lost: " + order.violations.get() + " tasks ran out of sequence";
            }
            Histogram h = waits.getIntervalHistogram();
            Map<String, Double> extra = new LinkedHashMap<>();
            extra.put("p50 us", h.getValueAtPercentile(50) / 1e3);
            extra.put("p99 us", h.getValueAtPercentile(99) / 1e3);
            extra.put("p99.9 us", h.getValueAtPercentile(99.9) / 1e3);
            extra.put("max us", h.getMaxValue() / 1e3);
            return new RunResult(peer.name(), nanos, total, adapter.threadsCreated(), adapter.peakThreads(), failure,
                    extra);
        } finally {
            adapter.close();
        }
    }
}
