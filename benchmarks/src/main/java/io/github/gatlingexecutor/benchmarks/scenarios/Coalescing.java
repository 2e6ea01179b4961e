package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.GatlingAdapter;
import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.peers.StripedSingleThreadAdapter;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Producers update 10,000 keys as fast as they can for a fixed time; only each key's latest value matters. Reports
 * how many updates were processed, how many were dropped as stale, the CPU spent, and how old a value was when it was
 * processed. Afterwards every key's last update must have been processed ("the last one always runs").
 */
public final class Coalescing extends Scenario {
    public static final int KEYS = 10_000;
    static final String GATLING = "GatlingExecutor (coalescing lanes)";
    static final String MAP_DRAIN = "ConcurrentHashMap + drain per key group";
    private final Sizes sizes;
    private final int producers;

    public Coalescing(Sizes sizes) {
        super("coalescing", "4. Coalescing: " + Math.max(2, sizes.cores()) + " producers update " + KEYS
                        + " keys for " + sizes.coalescingSeconds() + " s",
                "Latest-value-wins processing. The peer keeps the latest value per key in a ConcurrentHashMap and"
                        + " schedules a drain on one of " + sizes.cores() + " single-thread executors (by key) only"
                        + " when a key goes from clean to dirty. Time = update phase + drain.",
                1, Math.max(2, sizes.repetitions() - 2));
        this.sizes = sizes;
        this.producers = Math.max(2, sizes.cores());
    }

    @Override
    public List<Peer> peers() {
        return Peer.filtered(List.of(new Peer(GATLING, true, k -> null), new Peer(MAP_DRAIN, true, k -> null)));
    }

    @Override
    public double estimatedSecondsPerRun() {
        return sizes.coalescingSeconds() + 0.2;
    }

    @Override
    public boolean timeMatters() {
        return false;
    }

    /**
     * One way of getting "process the latest value of key k", over an executor adapter whose threads are the ones
     * counted and stopped.
     */
    private abstract static class Coalescer implements AutoCloseable {
        final OrderedExecutorAdapter executor;

        Coalescer(OrderedExecutorAdapter executor) {
            this.executor = executor;
        }

        abstract void update(int key, long stamp);

        /** Updates the executor itself reports as coalesced, or -1 if it does not count them. */
        long coalescedByExecutor() {
            return -1;
        }

        final int threadsCreated() {
            return executor.threadsCreated();
        }

        final int peakThreads() {
            return executor.peakThreads();
        }

        @Override
        public final void close() {
            executor.close();
        }
    }

    /** Processing shared by both peers: record the age, check freshness, a little work. */
    private static final class Sink {
        final Recorder ages = Histograms.recorder();
        final LongAdder executions = new LongAdder();
        final AtomicLongArray lastProcessed = new AtomicLongArray(KEYS);
        final long[] work = new long[KEYS];
        volatile int staleOrOverlap;

        void process(int key, long stamp) {
            long now = System.nanoTime();
            Histograms.record(ages, now - stamp);
            executions.increment();
            if (stamp < lastProcessed.get(key)) {
                staleOrOverlap++; // an older value after a newer one: order lost
            }
            lastProcessed.set(key, stamp);
            long x = stamp;
            for (int i = 0; i < 64; i++) { // ~0.1 us of "pricing"
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
            }
            work[key] += x;
        }
    }

    private static final class GatlingCoalescer extends Coalescer {
        private final GatlingAdapter adapter;
        private final Sink sink;

        GatlingCoalescer(GatlingAdapter adapter, Sink sink) {
            super(adapter);
            this.adapter = adapter;
            this.sink = sink;
        }

        @Override
        void update(int key, long stamp) {
            adapter.execute(key, () -> sink.process(key, stamp));
        }

        @Override
        long coalescedByExecutor() {
            return adapter.statistics().coalesced();
        }
    }

    private static final class MapDrainCoalescer extends Coalescer {
        private final ConcurrentHashMap<Integer, Long> latest = new ConcurrentHashMap<>();
        private final AtomicIntegerArray dirty = new AtomicIntegerArray(KEYS);
        private final Integer[] boxed = new Integer[KEYS];
        private final Runnable[] drains = new Runnable[KEYS];
        private final StripedSingleThreadAdapter groups;

        MapDrainCoalescer(StripedSingleThreadAdapter groups, Sink sink) {
            super(groups);
            this.groups = groups;
            for (int k = 0; k < KEYS; k++) {
                int key = k;
                boxed[k] = k;
                drains[k] = () -> {
                    // Clear first, then read: an update that lands after the read re-marks the key and schedules
                    // another drain, so the last value is never missed.
                    dirty.set(key, 0);
                    sink.process(key, latest.get(boxed[key]));
                };
            }
        }

        @Override
        void update(int key, long stamp) {
            latest.put(boxed[key], stamp);
            if (dirty.get(key) == 0 && dirty.compareAndSet(key, 0, 1)) {
                groups.execute(key, drains[key]); // key group: key % cores
            }
        }
    }

    @Override
    public RunResult runOnce(Peer peer) throws InterruptedException {
        Sink sink = new Sink();
        Coalescer c = peer.name().equals(GATLING)
                ? new GatlingCoalescer(new GatlingAdapter(KEYS, sizes.cores(), true), sink)
                : new MapDrainCoalescer(new StripedSingleThreadAdapter(MAP_DRAIN, "drain", sizes.cores()), sink);
        try {
            long[][] lastSubmitted = new long[producers][KEYS];
            long[] updates = new long[producers];
            long durationNanos = (long) (sizes.coalescingSeconds() * 1e9);
            Thread[] threads = new Thread[producers];
            java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
            for (int p = 0; p < producers; p++) {
                int producer = p;
                // producer p owns keys k with k % producers == p, so each key has one writer and a well-defined
                // last value
                int[] order = Keys.uniform(KEYS / producers, 1 << 16, 7 + p);
                threads[p] = new Thread(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    long end = System.nanoTime() + durationNanos;
                    long n = 0;
                    long[] mine = lastSubmitted[producer];
                    while (true) {
                        for (int i = 0; i < 256; i++) {
                            int key = order[(int) (n++ & 0xFFFF)] * producers + producer;
                            long stamp = System.nanoTime();
                            mine[key] = stamp;
                            c.update(key, stamp);
                        }
                        if (System.nanoTime() - end >= 0) {
                            break;
                        }
                    }
                    updates[producer] = n;
                }, "updater-" + p);
                threads[p].setDaemon(true);
                threads[p].start();
            }
            long cpu0 = Cpu.processNanos();
            long t0 = System.nanoTime();
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            long updatePhase = System.nanoTime() - t0;
            // Drain: wait until every key's last update has been processed.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int missing = KEYS;
            while (System.nanoTime() < deadline) {
                missing = 0;
                for (int k = 0; k < KEYS; k++) {
                    long last = lastSubmitted[k % producers][k];
                    if (last != 0 && sink.lastProcessed.get(k) != last) {
                        missing++;
                    }
                }
                if (missing == 0) {
                    break;
                }
                Thread.sleep(1);
            }
            long nanos = System.nanoTime() - t0;
            long cpu = Cpu.processNanos() - cpu0;
            int created = c.threadsCreated();
            int peak = c.peakThreads();
            long total = 0;
            for (long u : updates) {
                total += u;
            }
            long executions = sink.executions.sum();
            Histogram ages = sink.ages.getIntervalHistogram();
            String failure = null;
            if (missing > 0) {
                failure = "last update lost for " + missing + " keys";
            } else if (sink.staleOrOverlap > 0) {
                failure = "order lost: " + sink.staleOrOverlap + " stale values processed after newer ones";
            }
            Map<String, Double> extra = new LinkedHashMap<>();
            extra.put("updates/s (M)", total / (updatePhase / 1e9) / 1e6);
            extra.put("executions (k)", executions / 1e3);
            extra.put("coalesced (k)", (total - executions) / 1e3);
            long byExecutor = c.coalescedByExecutor();
            if (byExecutor >= 0) {
                extra.put("coalesced by stats (k)", byExecutor / 1e3);
            }
            extra.put("drain ms", (nanos - updatePhase) / 1e6);
            extra.put("CPU (cores busy)", (double) cpu / nanos);
            extra.put("age p50 us", ages.getValueAtPercentile(50) / 1e3);
            extra.put("age p99 us", ages.getValueAtPercentile(99) / 1e3);
            long sum = 0;
            for (long w : sink.work) {
                sum += w;
            }
            Blackhole.consume(sum);
            return new RunResult(peer.name(), nanos, total, created, peak, failure, extra);
        } finally {
            c.close();
        }
    }
}
