package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The many-producers workload for {@link ClassLoaderAb} ({@code -Dab.workload=producers}): {@code ab.producers}
 * threads (default 8) submit tiny ordered tasks to {@code keys} contexts, each spreading its share of the round's tasks
 * over the contexts at random, as the comparison runner's "8 producers into 8 contexts" does. Each task checks its
 * order among its producer's tasks of its context (a task out of order fails the round). A round ends when every
 * context has run all its tasks and returns millions of tasks per second. Public members are called reflectively.
 */
public final class ProducersRounds {
    private static final int PRODUCERS = Integer.getInteger("ab.producers", 8);

    /** What the tasks of one context share; only the context's running task writes {@code next}. */
    private static final class Key {
        final long[] next = new long[PRODUCERS]; // per producer: the sequence number due next
        final AtomicLong done = new AtomicLong();
        volatile String violation; // the first task that ran out of order, if any
    }

    private static final class Task implements Runnable {
        private final Key key;
        private final int producer;
        private final long seq;

        Task(Key key, int producer, long seq) {
            this.key = key;
            this.producer = producer;
            this.seq = seq;
        }

        @Override
        public void run() {
            if (key.next[producer] != seq && key.violation == null) {
                // Counted all the same, so the round ends and reports it rather than wait for a task that ran.
                key.violation = "task " + seq + " of producer " + producer + " ran when " + key.next[producer]
                        + " was due";
            }
            key.next[producer] = seq + 1;
            key.done.lazySet(key.done.get() + 1); // tasks of one context run one at a time
        }
    }

    private final GatlingExecutor executor;
    private final Executor[] lanes;
    private final Key[] states;
    private final int[][] orders = new int[PRODUCERS][];
    private final long[][] submitted;
    private final long tasksPerRound;

    public ProducersRounds(int keys, int tasksPerRound) {
        executor = GatlingExecutor.builder().name("ab").build();
        lanes = new Executor[keys];
        states = new Key[keys];
        for (int k = 0; k < keys; k++) {
            lanes[k] = executor.sequential(k);
            states[k] = new Key();
        }
        for (int p = 0; p < PRODUCERS; p++) {
            orders[p] = Keys.uniform(keys, tasksPerRound / PRODUCERS, 100 + p);
        }
        submitted = new long[PRODUCERS][keys];
        this.tasksPerRound = (long) PRODUCERS * (tasksPerRound / PRODUCERS);
    }

    /** Runs one round; returns millions of tasks per second. */
    public double round() throws InterruptedException {
        CountDownLatch ready = new CountDownLatch(PRODUCERS);
        CountDownLatch go = new CountDownLatch(1);
        Thread[] threads = new Thread[PRODUCERS];
        for (int p = 0; p < PRODUCERS; p++) {
            int producer = p;
            threads[p] = new Thread(() -> {
                long[] mine = submitted[producer];
                ready.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int k : orders[producer]) {
                    lanes[k].execute(new Task(states[k], producer, mine[k]++));
                }
            }, "producer-" + p);
            threads[p].start();
        }
        ready.await();
        long t0 = System.nanoTime();
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        for (int k = 0; k < states.length; k++) {
            long expected = 0;
            for (int p = 0; p < PRODUCERS; p++) {
                expected += submitted[p][k];
            }
            while (states[k].done.get() != expected) {
                Thread.onSpinWait();
            }
            if (states[k].violation != null) {
                throw new AssertionError("context " + k + ": " + states[k].violation);
            }
        }
        return tasksPerRound / ((System.nanoTime() - t0) / 1e3);
    }

    public void close() {
        executor.close();
    }
}
