package io.github.gatlingexecutor.benchmarks.kafka.pc;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The handler every peer runs, and what it measures: calls, the threads they ran on, and lag (now minus the
 * record's timestamp). Uses only JDK types, because the parallel-consumer peer loads its own copy of this class in
 * its own class loader (next to kafka-clients 3.9) and hands results back as plain maps.
 */
public final class Probe {

    private final long sleepMillis;
    private final LongAdder handled = new LongAdder();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final AtomicLong first = new AtomicLong();
    /**
     * Each handler thread writes the time of its last call to its own object: one shared field written on every call
     * (and a CAS on {@link #first} every call) would bounce a cache line between the handler threads, a cost the
     * measurement would add to the peers that run many handler threads and not to the plain loop.
     */
    private final Set<Clock> clocks = ConcurrentHashMap.newKeySet();
    private final ThreadLocal<Clock> mine = ThreadLocal.withInitial(() -> {
        Clock c = new Clock();
        clocks.add(c);
        threads.add(Thread.currentThread());
        return c;
    });

    private static final class Clock {
        volatile long last;
    }

    private final long[] lags;
    private final AtomicInteger lagCount = new AtomicInteger();

    /**
     * @param sleepMillis the handler blocks this long (0: no-op)
     * @param lagSamples  lags to keep (0: none)
     */
    public Probe(long sleepMillis, int lagSamples) {
        this.sleepMillis = sleepMillis;
        this.lags = new long[lagSamples];
    }

    public void handle(long recordTimestamp) throws InterruptedException {
        Clock clock = mine.get();
        if (sleepMillis > 0) {
            Thread.sleep(sleepMillis);
        }
        if (lags.length > 0) {
            int i = lagCount.getAndIncrement();
            if (i < lags.length) {
                lags[i] = System.currentTimeMillis() - recordTimestamp;
            }
        }
        long now = System.nanoTime();
        if (first.get() == 0) {
            first.compareAndSet(0, now);
        }
        clock.last = now;
        handled.increment();
    }

    /** The newest handler call on any thread. */
    private long last() {
        long l = 0;
        for (Clock c : clocks) {
            l = Math.max(l, c.last);
        }
        return l;
    }

    public long handled() {
        return handled.sum();
    }

    /**
     * Waits until {@code done} reaches {@code expected} (once {@code producerDone}), or until {@code limitMillis}
     * after the first record; then reports records/s over the time from the first record to the last.
     */
    public Map<String, Object> await(LongSupplier done, AtomicLong expected, AtomicBoolean producerDone,
                                     long limitMillis) throws InterruptedException {
        long start = System.nanoTime();
        while (true) {
            long f = first.get();
            long now = System.nanoTime();
            if (producerDone.get() && done.getAsLong() >= expected.get()) {
                break;
            }
            if ((f != 0 && now - f > limitMillis * 1_000_000L) || now - start > (limitMillis + 60_000) * 1_000_000L) {
                break;
            }
            Thread.sleep(2);
        }
        Map<String, Object> r = new HashMap<>();
        long f = first.get();
        long elapsed = Math.max(1, last() - f);
        long completed = done.getAsLong();
        r.put("completed", completed);
        r.put("calls", handled.sum());
        r.put("seconds", elapsed / 1e9);
        r.put("recordsPerSecond", f == 0 ? 0.0 : completed / (elapsed / 1e9));
        r.put("threads", threads.size());
        int n = Math.min(lagCount.get(), lags.length);
        if (n > 0) {
            long[] sorted = Arrays.copyOf(lags, n);
            Arrays.sort(sorted);
            r.put("lagP99Ms", (double) sorted[Math.min(n - 1, (int) Math.ceil(n * 0.99) - 1)]);
        }
        return r;
    }
}
