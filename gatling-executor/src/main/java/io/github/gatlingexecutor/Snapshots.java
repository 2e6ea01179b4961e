package io.github.gatlingexecutor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How the public snapshots ({@link ExecutorStatistics}, {@link ContextStatistics}) are read from the engine's
 * counters while tasks flow: racy reads, ordered so that each figure errs in a stated direction, and walks that look
 * only where waiting work can be, so their cost follows the lanes with work, not the live ones. Nothing here blocks a
 * submitter or a worker.
 */
final class Snapshots {
    private final Engine engine;

    Snapshots(Engine engine) {
        this.engine = engine;
    }

    ExecutorStatistics executor() {
        // Accepted is read both before and after the counts of what left the queue. Queued is computed from the first
        // read: a task started, coalesced or returned after it may be subtracted without having been added, so the
        // result errs low, never high (read the other way round, every task started during the read of the workers'
        // counters counted as waiting: thousands over a limit of 64). Submitted is the second read, raised to what
        // left the queue: a submit counts itself just after its task is in the lane, where a worker may already have
        // started it, and every task that left the queue was accepted.
        // Failures are read before the tasks started, so every failure seen is of a task seen started: a future's
        // failure is counted while its task runs (a volatile add, after the worker's release store of started), a
        // thrown one by the worker before its executed count (see WorkerPool#counters). A task that failed has run,
        // so executed is raised to the failures seen: failed <= executed <= submitted in every snapshot.
        long acceptedBefore = engine.submittedCount();
        long failedFutures = engine.failedFutureCount();
        long[] p = engine.pool.counters();
        long failed = p[1] + failedFutures;
        long skipped = engine.skippedAtStopCount(); // executed without a worker's start (see Engine#skippedAtStop)
        long executed = Math.max(p[0] + skipped, failed);
        long coalescedCount = engine.coalescedCount();
        long returnedCount = engine.returnedCount();
        long left = p[7] + skipped + coalescedCount + returnedCount;
        long submittedCount = Math.max(engine.submittedCount(), left);
        long queued = Math.max(0, acceptedBefore - left);
        long now = System.nanoTime();
        long oldest = oldestWaiting(null);
        Admission adm = engine.admission;
        long live = engine.liveContexts();
        return new ExecutorStatistics(submittedCount, executed, coalescedCount, failed,
                returnedCount, live, (int) p[9], (int) p[10], (int) p[8], p[3], p[4], p[2],
                engine.checker.blockedDetections(), p[5], (int) p[6], engine.settings.maxThreads, queued,
                adm == null ? 0 : adm.rejected(), adm == null ? 0 : adm.waitingSubmitters(),
                adm == null ? 0 : adm.acceptedOverLimit(), oldest == Lane.NO_WAITING ? 0 : age(now, oldest),
                engine.timer.delayedCountOpaque());
    }

    private static long age(long now, long stamp) {
        return Math.max(0, now - stamp);
    }

    /**
     * The stamp of the oldest waiting task (or {@link Lane#NO_WAITING}), from the places where waiting work can be:
     * the ready queue (lanes and unordered tasks) and the lanes workers are running (which may have more behind the
     * running task). A lane with waiting work is in exactly one of them, except for the moment between the submit that
     * activates it and its entry into the ready queue, and while the checker holds a lane it took out of the queue
     * empty and found given work (see Checker#releaseStrandedRounds). Idle lanes are never looked at, so the cost grows
     * with the lanes that have work waiting, not with the live ones, and a queued item costs its queue node only (see
     * {@link ReadyQueue}). With {@code top} non-null, also offers it every lane with a waiting task.
     *
     * <p>None once terminated: every task accepted has run or was returned by then. What the queue may still hold is
     * an unordered task a refused submitter has queued and not yet taken back (it reads the state again only after its
     * offer, see Engine#attemptPlain), and nothing waits for that submitter: counted, it gave a terminated executor an
     * age above zero, and zero a moment later.
     */
    private long oldestWaiting(TopLanes top) {
        if (engine.isTerminated()) {
            return Lane.NO_WAITING;
        }
        OldestInQueue queued = new OldestInQueue(top, engine.stopping());
        engine.readyQueue.walk(queued);
        long oldest = queued.oldest;
        for (Worker w : engine.pool.workers()) {
            Lane lane = w.currentLane;
            if (lane != null) {
                long stamp = lane.oldestStamp();
                if (top != null) {
                    top.offer(lane, stamp);
                }
                oldest = older(oldest, stamp);
            }
        }
        return oldest;
    }

    /** The ready queue's part of {@link #oldestWaiting}: reads the queue's nodes only (see {@link ReadyQueue}). */
    private static final class OldestInQueue implements ReadyQueue.Visitor {
        private final TopLanes top;
        /**
         * Whether shutdownNow has begun: it takes the waiting tasks out of lanes that may be queued, so a queued
         * lane's stamp no longer says what waits there. One queued after its drain stays queued, closed and empty, for
         * good (a submitter that activated it before the shutdown may offer it even after termination): its stamp,
         * taken as waiting work, made the oldest age of a terminated executor grow without end.
         */
        private final boolean stopping;
        long oldest = Lane.NO_WAITING;

        OldestInQueue(TopLanes top, boolean stopping) {
            this.top = top;
            this.stopping = stopping;
        }

        @Override
        public void lane(Object lane, long stamp) {
            if (stamp == Lane.NO_WAITING || stopping) {
                // Queued with nothing waiting (sent round once more, see SequentialLane#runBatch): what came since
                // is only in the lane. Rare, so following these few to their lanes keeps the walk cheap. After
                // shutdownNow began, every lane is read (see stopping).
                stamp = ((Lane) lane).oldestStamp();
            }
            if (top != null) {
                top.offer(lane, stamp);
            }
            oldest = older(oldest, stamp);
        }

        @Override
        public void task(long stamp) {
            oldest = older(oldest, stamp);
        }
    }

    /**
     * The k lanes with the oldest waiting task seen so far. A heap with the youngest kept lane at its root, so a lane
     * no older than that one (most of a long walk, which goes roughly oldest first) is turned away with one compare
     * and touches nothing else; the arrays grow with what is kept, not with k. A lane offered twice (it moved between
     * the queue and a worker during the walk) is kept once: the kept lanes are also in an identity set. A walk over a
     * million waiting lanes costs O(n log k) whatever k is, and memory follows min(k, lanes waiting).
     */
    private static final class TopLanes {
        private final int k;
        private Object[] lanes = new Object[16]; // not cast while offered (see ReadyQueue.Visitor)
        private long[] stamps = new long[16];
        private int size;
        private final Set<Object> kept = Collections.newSetFromMap(new IdentityHashMap<>());
        /** Whether a lane with a waiting task was not kept (turned away, or pushed out by an older one). */
        boolean turnedAway;

        TopLanes(int k) {
            this.k = k;
        }

        void offer(Object lane, long stamp) {
            if (stamp == Lane.NO_WAITING) {
                return;
            }
            if (size == k && stamp - stamps[0] >= 0) {
                turnedAway = true; // not older than the youngest kept (or kept already: at worst one walk more)
                return;
            }
            if (!kept.add(lane)) {
                return;
            }
            if (size == k) {
                turnedAway = true;
                kept.remove(lanes[0]);
                lanes[0] = lane;
                stamps[0] = stamp;
                siftDown(0);
                return;
            }
            if (size == lanes.length) {
                int capacity = (int) Math.min(k, 2L * lanes.length);
                lanes = Arrays.copyOf(lanes, capacity);
                stamps = Arrays.copyOf(stamps, capacity);
            }
            lanes[size] = lane;
            stamps[size] = stamp;
            siftUp(size++);
        }

        /** The kept lanes, oldest first; empties the heap. */
        Object[] oldestFirst() {
            Object[] out = new Object[size];
            for (int i = size - 1; i >= 0; i--) {
                out[i] = lanes[0];
                size--;
                lanes[0] = lanes[size];
                stamps[0] = stamps[size];
                lanes[size] = null;
                siftDown(0);
            }
            return out;
        }

        /** Whether the task stamped {@code a} arrived after the one stamped {@code b} (stamps may wrap). */
        private static boolean younger(long a, long b) {
            return a - b > 0;
        }

        private void siftUp(int i) {
            while (i > 0) {
                int parent = (i - 1) >>> 1;
                if (!younger(stamps[i], stamps[parent])) {
                    return;
                }
                swap(i, parent);
                i = parent;
            }
        }

        private void siftDown(int i) {
            for (;;) {
                int child = 2 * i + 1;
                if (child >= size) {
                    return;
                }
                if (child + 1 < size && younger(stamps[child + 1], stamps[child])) {
                    child++;
                }
                if (!younger(stamps[child], stamps[i])) {
                    return;
                }
                swap(i, child);
                i = child;
            }
        }

        private void swap(int i, int j) {
            Object lane = lanes[i];
            lanes[i] = lanes[j];
            lanes[j] = lane;
            long stamp = stamps[i];
            stamps[i] = stamps[j];
            stamps[j] = stamp;
        }
    }

    private static long older(long a, long b) {
        if (a == Lane.NO_WAITING) {
            return b;
        }
        if (b == Lane.NO_WAITING) {
            return a;
        }
        return b - a < 0 ? b : a; // nanoTime values: compare by difference
    }

    /**
     * Every lane with queued or running work: the active lanes of both maps, and the lanes workers are in. After
     * {@code shutdownNow} a lane whose task still runs is closed (its queue was returned), and only its worker still
     * knows it.
     *
     * <p>One entry per context: a worker names its lane until its batch has returned, so the lane it names may have
     * gone idle since, been released and given way to a new lane of the same context. So the workers' lanes are read
     * first, the maps walked next, and only then are the workers' lanes looked at, each left out if it is idle or
     * released (it neither runs nor holds anything), or closed by shutdown while its worker runs nothing. A lane is
     * released before a newer one of its context is made: if the walk saw a newer lane of a named lane's context, the
     * look after the walk finds the named one released; if a worker named the newer one, the walk, which came after,
     * finds the older one released too. (Taking the workers' lanes as named, a context was listed twice for
     * milliseconds at a time; reading them after the walk, a lane made since the walk was listed beside the one the
     * walk saw.)
     */
    List<ContextStatistics> contexts() {
        long now = System.nanoTime();
        Worker[] workers = engine.pool.workers();
        Lane[] named = new Lane[workers.length];
        // Only the workers' lanes can also be met in the walk, so only they are tracked: a set of at most a lane per
        // worker, not one entry per live context.
        Set<Lane> notListed = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int i = 0; i < workers.length; i++) {
            named[i] = workers[i].currentLaneAcquire(); // ordered before the walk, and seeing what preceded the take
            if (named[i] != null) {
                notListed.add(named[i]);
            }
        }
        List<ContextStatistics> out = new ArrayList<>();
        for (ConcurrentHashMap<Object, Lane> lanes : engine.laneMaps()) {
            for (Lane lane : lanes.values()) {
                if (lane.isActive()) {
                    out.add(statisticsOf(lane, now));
                    notListed.remove(lane);
                }
            }
        }
        for (int i = 0; i < named.length; i++) {
            Lane lane = named[i];
            if (lane == null || lane.isIdle() || lane.isReleased()) {
                continue;
            }
            // Closed: by shutdownNow while its task runs (listed), or by the quiescence check after its worker made it
            // idle and before the worker let go of it (nothing runs). Two workers may name one lane (one of them a
            // batch late): it is listed once, as the walk lists each lane once (each context maps to one lane).
            if ((lane.isActive() || workers[i].runningTask != null) && notListed.remove(lane)) {
                out.add(statisticsOf(lane, now));
            }
        }
        return out;
    }

    /**
     * Read in the order that keeps the figures coherent while tasks flow: what ran first, then what waits, then what
     * was submitted. Every count only grows, and a task waits before it runs, so {@code executed + queued <= submitted}
     * holds in the result (read the other way round, a burst between the reads showed more executed than submitted).
     * A coalescing submit counts itself just after the CAS that makes its task wait, so submitted is raised to what
     * the other two show (a new coalescing lane read queued 1 and submitted 0).
     */
    private static ContextStatistics statisticsOf(Lane lane, long now) {
        long executed = lane.executedCount();
        long queued = lane.queuedCount();
        long stamp = lane.oldestStamp();
        long submitted = Math.max(lane.submittedCount(), executed + queued);
        return new ContextStatistics(lane.context, lane.coalescing(), submitted, executed, queued,
                stamp == Lane.NO_WAITING ? 0 : age(now, stamp));
    }

    /**
     * The walk keeps the k oldest lanes it sees, but a kept lane may start its last waiting task before it is read
     * (the oldest lanes are the ones nearest the head of the ready queue, which workers poll as the walk goes): then
     * it is dropped, and if the walk turned lanes away, it is walked again keeping more, so that k lanes waiting are
     * not answered with fewer. At most {@link #BUSIEST_WALKS} walks: on a machine where every kept lane starts each
     * time, an answer a few lanes short is better than a call that does not return.
     *
     * <p>The answer is sorted by the ages it reports, read after the walk: a kept lane whose oldest tasks started
     * in between reports a younger age than the walk saw, and, left in the walk's order, came out ahead of older ones.
     */
    List<ContextStatistics> busiest(int k) {
        if (k == 0) {
            return new ArrayList<>();
        }
        int keep = k;
        for (int walk = 1; ; walk++) {
            TopLanes top = new TopLanes(keep);
            oldestWaiting(top);
            boolean turnedAway = top.turnedAway;
            long now = System.nanoTime();
            List<ContextStatistics> out = new ArrayList<>(Math.min(keep, 64));
            for (Object lane : top.oldestFirst()) {
                ContextStatistics cs = statisticsOf((Lane) lane, now);
                if (cs.queued() > 0) { // else it started its last waiting task since the walk
                    out.add(cs);
                }
            }
            if (out.size() >= k || !turnedAway || walk == BUSIEST_WALKS) {
                return oldestFirst(out, k);
            }
            keep = (int) Math.min(Integer.MAX_VALUE, 2L * keep + 16);
        }
    }

    private static final int BUSIEST_WALKS = 3;

    /** The {@code k} entries of {@code all} whose oldest waiting task is oldest, oldest first. */
    private static List<ContextStatistics> oldestFirst(List<ContextStatistics> all, int k) {
        all.sort((a, b) -> b.oldestQueuedAge().compareTo(a.oldestQueuedAge()));
        return all.size() > k ? new ArrayList<>(all.subList(0, k)) : all;
    }
}
