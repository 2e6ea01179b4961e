package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.ExecutorStatistics;
import io.github.gatlingexecutor.benchmarks.peers.GatlingAdapter;
import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Producers submit pre-computed key sequences to a peer; every task checks that it is the next one of its key (per
 * producer), and the run ends when every key has run every task (all keys, not the first to finish).
 *
 * <p>Timed: from the moment the producers are released until the last task of the last key has run. Work that
 * could be optimised away is not: the seed work increments a shared-per-key {@link AtomicLong}, and its total is
 * checked at the end.
 */
public final class OrderedWorkload {

    /** What a task does besides the order check. */
    public interface Work {
        void run(KeyState key, int index);
    }

    /** The seed design's event: about 1,000 atomic increments. */
    public static final Work SEED = (key, index) -> {
        AtomicLong work = key.work;
        for (int j = 0; j < 1000; j++) {
            work.incrementAndGet();
        }
    };

    /** Nothing but the order check: the cost is all hand-off. */
    public static final Work TINY = (key, index) -> { };

    /** Per-key state; {@code next} and {@code violations} are only touched by the key's running task. */
    public static final class KeyState {
        final int[] next;
        final AtomicLong work = new AtomicLong();
        final AtomicLong done = new AtomicLong();
        long expected;
        int violations;
        final CountDownLatch finished;

        KeyState(int producers, CountDownLatch finished) {
            this.next = new int[producers];
            this.finished = finished;
        }
    }

    /** One submitted event: allocated at submission, like a real event would be. */
    private static final class Task implements Runnable {
        private final KeyState key;
        private final Work work;
        private final int producer;
        private final int seq;

        Task(KeyState key, Work work, int producer, int seq) {
            this.key = key;
            this.work = work;
            this.producer = producer;
            this.seq = seq;
        }

        @Override
        public void run() {
            KeyState k = key;
            if (k.next[producer] != seq) {
                k.violations++;
            }
            k.next[producer] = seq + 1;
            work.run(k, seq);
            if (k.done.incrementAndGet() == k.expected) {
                k.finished.countDown();
            }
        }
    }

    private OrderedWorkload() {
    }

    /**
     * The column with the producers' own CPU time per task: what a submit costs, counted only while a producer runs
     * (this machine gives no hardware counters, and with one producer the producer bounds every fast peer).
     */
    public static final String PRODUCER_CPU = "producer CPU ns/task";
    /** The column with the process's CPU time, in cores busy over the run. */
    public static final String CORES_BUSY = "CPU (cores busy)";

    /**
     * @param keysByProducer producer p submits tasks to keys {@code keysByProducer[p][0..]}, in that order
     * @param keyCount       keys are {@code 0 .. keyCount-1}
     */
    public static RunResult run(Peer peer, int keyCount, int[][] keysByProducer, Work work, long timeoutSeconds)
            throws InterruptedException {
        return run(peer, keyCount, keysByProducer, work, timeoutSeconds, false);
    }

    /** @param poolStats add GatlingExecutor's pool counters (auxiliary starts, core bumps...) to its row */
    public static RunResult run(Peer peer, int keyCount, int[][] keysByProducer, Work work, long timeoutSeconds,
                                boolean poolStats) throws InterruptedException {
        int producers = keysByProducer.length;
        long[] perKey = new long[keyCount];
        long total = 0;
        for (int[] keys : keysByProducer) {
            for (int k : keys) {
                perKey[k]++;
            }
            total += keys.length;
        }
        int used = 0;
        for (long n : perKey) {
            used += n > 0 ? 1 : 0;
        }
        CountDownLatch finished = new CountDownLatch(used);
        KeyState[] states = new KeyState[keyCount];
        for (int k = 0; k < keyCount; k++) {
            states[k] = new KeyState(producers, finished);
            states[k].expected = perKey[k];
        }

        OrderedExecutorAdapter adapter = peer.create(keyCount);
        try {
            CountDownLatch go = new CountDownLatch(1);
            Thread[] threads = new Thread[producers];
            java.util.concurrent.atomic.AtomicReferenceArray<Throwable> failures =
                    new java.util.concurrent.atomic.AtomicReferenceArray<>(1);
            boolean cpuTimed = Cpu.THREAD_TIMED;
            AtomicLongArray producerCpu = new AtomicLongArray(producers);
            for (int p = 0; p < producers; p++) {
                int producer = p;
                threads[p] = new Thread(() -> {
                    try {
                        go.await();
                        long cpu0 = cpuTimed ? Cpu.currentThreadNanos() : 0;
                        submitAll(adapter, states, keysByProducer[producer], producer, work);
                        if (cpuTimed) {
                            producerCpu.set(producer, Cpu.currentThreadNanos() - cpu0);
                        }
                    } catch (Throwable t) {
                        failures.set(0, t);
                    }
                }, "producer-" + p);
                threads[p].setDaemon(true);
                threads[p].start();
            }
            long cpu0 = Cpu.processNanos();
            long t0 = System.nanoTime();
            go.countDown();
            long deadline = t0 + TimeUnit.SECONDS.toNanos(timeoutSeconds);
            boolean done;
            // Poll rarely (the latch wakes us at once when done); stop early if a producer died.
            while (!(done = finished.await(20, TimeUnit.MILLISECONDS))) {
                if (failures.get(0) != null || System.nanoTime() - deadline > 0) {
                    break;
                }
            }
            long nanos = System.nanoTime() - t0;
            long cpu = Cpu.processNanos() - cpu0;
            for (Thread t : threads) {
                t.join(10_000);
            }
            int created = adapter.threadsCreated();
            int peak = adapter.peakThreads();

            String failure = null;
            if (failures.get(0) != null) {
                failure = "producer failed: " + failures.get(0);
            } else if (!done) {
                long ran = 0;
                for (KeyState s : states) {
                    ran += s.done.get();
                }
                failure = "timed out after " + timeoutSeconds + " s: " + ran + " of " + total + " tasks ran";
            } else if (adapter.ordered()) {
                long violations = 0;
                for (KeyState s : states) {
                    violations += s.violations;
                }
                if (violations > 0) {
                    failure = "order lost: " + violations + " tasks ran out of sequence";
                }
            }
            if (failure == null && work == SEED) {
                long sum = 0;
                for (KeyState s : states) {
                    sum += s.work.get();
                }
                if (sum != total * 1000) {
                    failure = "work lost: " + sum + " of " + total * 1000 + " increments";
                }
            }
            Map<String, Double> extra = new LinkedHashMap<>();
            extra.put(CORES_BUSY, nanos > 0 ? (double) cpu / nanos : 0);
            if (cpuTimed) {
                long producersCpu = 0;
                for (int p = 0; p < producers; p++) {
                    producersCpu += producerCpu.get(p);
                }
                extra.put(PRODUCER_CPU, (double) producersCpu / total);
            }
            if (poolStats && adapter instanceof GatlingAdapter g) {
                ExecutorStatistics st = g.statistics();
                extra.put("aux threads started", (double) st.auxiliaryThreadsStarted());
                extra.put("core bumps", (double) st.coreBumps());
                extra.put("blocked detections", (double) st.blockedDetections());
                extra.put("transfers", (double) st.transfers());
            }
            return new RunResult(peer.name(), nanos, total, created, peak, failure, extra);
        } finally {
            adapter.close();
        }
    }

    private static void submitAll(OrderedExecutorAdapter adapter, KeyState[] states, int[] keys, int producer,
                                  Work work) {
        int[] seqs = new int[states.length];
        for (int key : keys) {
            adapter.execute(key, new Task(states[key], work, producer, seqs[key]++));
        }
    }
}
