package io.github.gatlingexecutor.benchmarks.ab;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.scenarios.Keys;

import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The workload {@link ClassLoaderAb} runs in each build: one producer submits tiny ordered tasks to {@code keys}
 * contexts (uniform, fixed seed), and a round ends when every context has run all its tasks. Loaded once per class
 * loader, so each instance drives the GatlingExecutor of its own build. Public members are called reflectively.
 */
public final class HotPathRounds {

    private static final class Key {
        long next; // only the context's running task touches it
        final AtomicLong done = new AtomicLong();
    }

    private static final class Task implements Runnable {
        private final Key key;
        private final long seq;

        Task(Key key, long seq) {
            this.key = key;
            this.seq = seq;
        }

        @Override
        public void run() {
            if (key.next != seq) {
                throw new AssertionError("task " + seq + " ran when " + key.next + " was due");
            }
            key.next = seq + 1;
            key.done.lazySet(seq + 1);
        }
    }

    private final GatlingExecutor executor;
    private final Executor[] lanes;
    private final Key[] states;
    private final long[] submitted;
    private final int[] order;

    public HotPathRounds(int keys, int tasksPerRound) {
        executor = GatlingExecutor.builder().name("ab").build();
        lanes = new Executor[keys];
        states = new Key[keys];
        submitted = new long[keys];
        for (int k = 0; k < keys; k++) {
            lanes[k] = executor.sequential(k);
            states[k] = new Key();
        }
        order = Keys.uniform(keys, tasksPerRound, 1);
    }

    /** Runs one round; returns millions of tasks per second. */
    public double round() {
        long t0 = System.nanoTime();
        for (int k : order) {
            lanes[k].execute(new Task(states[k], submitted[k]++));
        }
        for (int k = 0; k < states.length; k++) {
            while (states[k].done.get() != submitted[k]) {
                Thread.onSpinWait();
            }
        }
        return order.length / ((System.nanoTime() - t0) / 1e3);
    }

    public void close() {
        executor.close();
    }
}
