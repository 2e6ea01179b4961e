package io.github.gatlingexecutor;

import java.lang.reflect.Field;

/**
 * Builds engine pieces for the jcstress tests without starting any thread: an {@link Engine} with one core thread
 * (no worker starts until {@code signalWork} asks for one, and the tests that call it first fill the pool's thread
 * count), and detached {@link Worker}s that the test's own actor threads play.
 */
final class LaneFixtures {
    private LaneFixtures() {
    }

    static Engine engine() {
        return engine(64);
    }

    /**
     * An engine whose visits of a lane end after {@code batchSize} tasks exactly: no minimum turn, which would keep a
     * visit of tasks shorter than it going (then a test's hand-back after one task happened in 2 runs of 1,000). Its
     * linger is the model checks' (48 waits), as these tests had it until production's grew to 384: with an owner
     * that lingers eight times as long, more of the offers it races with land in its linger, and fewer race with its
     * going idle, which is what these tests are about.
     */
    static Engine engine(int batchSize) {
        return new Engine(GatlingExecutor.builder().name("jcstress").coreThreads(1).maxThreads(1)
                .batchSize(batchSize).minTurn(java.time.Duration.ZERO).linger(8).settings());
    }

    /** A core worker not started by the pool; {@code thread} stands in for the thread that plays it. */
    /**
     * The tasks in {@code returned}, weighed by identity: 1 for {@code a}, 10 for {@code b}, 1,000 for anything else.
     * A count alone would let one task returned twice stand for two (and a lost one go unseen).
     */
    static int weigh(java.util.List<Runnable> returned, Runnable a, Runnable b) {
        int w = 0;
        for (Runnable r : returned) {
            w += r == a ? 1 : r == b ? 10 : 1_000;
        }
        return w;
    }

    static Worker worker(Engine engine, Thread thread) {
        Worker w = new Worker(engine, engine.pool, true, 1);
        w.thread = thread;
        return w;
    }

    /** Makes the pool believe its core threads exist, so {@code signalWork} never starts a real one. */
    static void fillCore(WorkerPool pool) {
        set(pool, "threads", pool.coreTarget());
    }

    /** Registers detached workers, as the pool does for the threads it starts (shutdownNow walks this list). */
    static void register(WorkerPool pool, Worker... workers) {
        set(pool, "workers", workers);
    }

    private static void set(Object target, String field, Object value) {
        try {
            Field f = target.getClass().getDeclaredField(field);
            f.setAccessible(true);
            f.set(target, value);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("engine layout changed: " + field, e);
        }
    }

    /**
     * Plays the owner of {@code lane} over its visits, as {@code Worker#runLane} does: batches of 64 while the lane
     * stays its own, after a full batch (MORE) or an emptied lane sent round the ready queue once more (ROUND), whose
     * next visit is the next batch here.
     */
    static void runWhileOwned(Lane lane, Worker worker) {
        int outcome;
        do {
            outcome = lane.runBatch(worker, 64);
        } while (outcome == Lane.MORE || outcome == Lane.ROUND);
    }
}
