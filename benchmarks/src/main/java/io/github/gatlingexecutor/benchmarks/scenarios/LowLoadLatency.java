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
 * One producer submits ~10,000 tiny tasks a second (one every 100 us, paced by parkNanos, so the producer itself
 * leaves the cores free) over 1,024 contexts. Measures submit-to-start: how long a task waits for a thread when
 * the executor is mostly idle, which is the price of waking a parked worker.
 */
public final class LowLoadLatency extends Scenario {
    public static final int CONTEXTS = 1024;
    private static final long INTERVAL_NANOS = 100_000;
    private final Sizes sizes;
    private final int[] keys;

    public LowLoadLatency(Sizes sizes) {
        super("latency", "6. Latency at low load: ~10,000 tasks/s for " + sizes.latencySeconds() + " s, "
                        + CONTEXTS + " contexts",
                "Submit-to-start delay (HdrHistogram). The producer parks between submissions; a schedule slip"
                        + " is not counted against the executor (the clock starts at the actual submit).",
                1, oddAtLeast3(sizes.repetitions()));
        this.sizes = sizes;
        this.keys = Keys.uniform(CONTEXTS, (int) (sizes.latencySeconds() * 1e9 / INTERVAL_NANOS), 45);
    }

    @Override
    public List<Peer> peers() {
        return Peer.filtered(Peer.orderedPeers(sizes.cores(), true));
    }

    @Override
    public double estimatedSecondsPerRun() {
        return sizes.latencySeconds() * 1.3;
    }

    @Override
    public boolean timeMatters() {
        return false;
    }

    private static final class Probe implements Runnable {
        private final Recorder recorder;
        private final AtomicLong done;
        private final int[] next;
        private final AtomicLong violations;
        private final int key;
        private final int seq;
        private final long submitted;

        Probe(Recorder recorder, AtomicLong done, int[] next, AtomicLong violations, int key, int seq,
              long submitted) {
            this.recorder = recorder;
            this.done = done;
            this.next = next;
            this.violations = violations;
            this.key = key;
            this.seq = seq;
            this.submitted = submitted;
        }

        @Override
        public void run() {
            Histograms.record(recorder, System.nanoTime() - submitted);
            if (next[key] != seq) {
                violations.incrementAndGet();
            }
            next[key] = seq + 1;
            done.incrementAndGet();
        }
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        Recorder recorder = Histograms.recorder();
        AtomicLong done = new AtomicLong();
        AtomicLong violations = new AtomicLong();
        int[] next = new int[CONTEXTS];
        int[] seqs = new int[CONTEXTS];
        OrderedExecutorAdapter adapter = peer.create(CONTEXTS);
        try {
            touchEveryKey(adapter, CONTEXTS, INTERVAL_NANOS);
            long t0 = System.nanoTime();
            long due = t0;
            for (int key : keys) {
                due += INTERVAL_NANOS;
                parkUntil(due);
                adapter.execute(key, new Probe(recorder, done, next, violations, key, seqs[key]++,
                        System.nanoTime()));
            }
            long submitEnd = System.nanoTime();
            long deadline = submitEnd + TimeUnit.SECONDS.toNanos(10);
            while (done.get() < keys.length && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            long nanos = System.nanoTime() - t0;
            int created = adapter.threadsCreated();
            int peak = adapter.peakThreads();
            String failure = null;
            if (done.get() < keys.length) {
                failure = "timed out: " + done.get() + " of " + keys.length + " tasks ran";
            } else if (adapter.ordered() && violations.get() > 0) {
                failure = "order lost: " + violations.get() + " tasks ran out of sequence";
            }
            Histogram h = recorder.getIntervalHistogram();
            Map<String, Double> extra = new LinkedHashMap<>();
            extra.put("rate/s", keys.length / ((submitEnd - t0) / 1e9));
            extra.put("p50 us", h.getValueAtPercentile(50) / 1e3);
            extra.put("p99 us", h.getValueAtPercentile(99) / 1e3);
            extra.put("p99.9 us", h.getValueAtPercentile(99.9) / 1e3);
            extra.put("max us", h.getMaxValue() / 1e3);
            return new RunResult(peer.name(), nanos, keys.length, created, peak, failure, extra);
        } finally {
            adapter.close();
        }
    }
}
