package io.github.gatlingexecutor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One randomized round of the stress suite: {@code producers} threads push sequential, coalescing and plain tasks
 * into one executor, optionally racing a {@code shutdown()} or {@code shutdownNow()} fired by whichever producer
 * crosses a random point of the run; afterwards every task is accounted for.
 *
 * <p>What a round checks (each violation is recorded with the round's seed, so a failure can be replayed):
 * <ul>
 *   <li>sequential lanes: per (context, producer) the tasks that ran are exactly 1, 2, 3, ... in order (a gap, a
 *       repeat or a reordering is reported at once), never two tasks of one lane at the same time, and every task
 *       sees the plain (non-volatile) writes of the one before it in its lane;</li>
 *   <li>coalescing lanes: never two at a time; in a context owned by one producer the tasks that ran have strictly
 *       increasing numbers and the last accepted task ran (or, after {@code shutdownNow()}, was returned);
 *       {@code shutdownNow()} returns at most one task per coalescing context; a replaced task submitted through
 *       {@code submit} has a cancelled future; in shared contexts a final task submitted after all producers finished
 *       runs;</li>
 *   <li>exact accounting: accepted (the submit call returned normally) = ran + returned + coalesced, where only
 *       coalescing tasks may be coalesced; no task runs twice, no task both runs and is returned, no rejected task
 *       runs, and {@code shutdownNow()} returns only accepted tasks, each once;</li>
 *   <li>the executor's own counters agree exactly once it has terminated, no lane is left live, and every worker
 *       thread it made has ended;</li>
 *   <li>no task starts with its thread interrupted unless {@code shutdownNow()} has been called.</li>
 * </ul>
 */
final class StressWorkload {

    enum End { NONE, SHUTDOWN, SHUTDOWN_NOW }

    /** The knobs of one round; {@link #random(long, int)} draws them from a seed. */
    static final class Config {
        long seed;
        int producers = 3;
        int contexts = 16;            // keys 0..contexts-1, used by both sequential and coalescing lanes
        int tasksPerProducer = 20_000;
        double pCoalescing = 0.25;
        double pPlain = 0.1;
        double pThrow = 0.01;
        double pBlock = 0.002;
        long maxBlockNanos = TimeUnit.MILLISECONDS.toNanos(3);
        double pFuture = 0.1;         // submit(...) instead of execute
        double pHandle = 0.5;         // of the rest: lane handle instead of execute(task)
        End end = End.NONE;
        double endAt = 0.5;           // fraction of all tasks accepted when the end is fired
        int coreThreads = 2;
        int maxThreads = 6;
        int batchSize = 8;
        Duration minTurn = Duration.ZERO;
        Duration checkPeriod = Duration.ofMillis(10);
        Duration blockedThreshold = Duration.ofMillis(20);
        Duration keepAlive = Duration.ofMillis(50);
        int coreBumpThreshold = 10;
        int scheduled = 0;            // delayed and periodic tasks scheduled beside the producers (0: none)
        double pPeriodic = 0.3;       // of those, periodic (half fixed rate, half fixed delay)
        double pCancel = 0.2;         // of those, cancelled by the scheduling thread at a random later moment
        int maxQueuedPerContext = 0;  // 0: unbounded
        int maxQueued = 0;            // 0: unbounded
        Duration maxWait = null;      // null: Overflow.reject(), else Overflow.block(maxWait)

        static Config random(long seed, int tasksPerProducer) {
            SplittableRandom r = new SplittableRandom(seed);
            Config c = new Config();
            c.seed = seed;
            c.producers = 1 + r.nextInt(4);
            c.contexts = 1 + r.nextInt(64);
            c.tasksPerProducer = tasksPerProducer;
            c.pCoalescing = r.nextDouble(0.5);
            c.pPlain = r.nextDouble(0.3);
            c.pThrow = r.nextDouble(0.05);
            c.pBlock = r.nextDouble(0.005);
            c.maxBlockNanos = 50_000 + r.nextLong(TimeUnit.MILLISECONDS.toNanos(4));
            c.pFuture = r.nextDouble(0.3);
            c.pHandle = r.nextDouble();
            c.end = End.values()[r.nextInt(3)];
            c.endAt = r.nextDouble();
            c.coreThreads = 1 + r.nextInt(3);
            c.maxThreads = c.coreThreads + r.nextInt(6);
            c.batchSize = new int[] {1, 2, 3, 8, 64}[r.nextInt(5)];
            c.minTurn = Duration.ofNanos(new long[] {0, 20_000, 100_000}[r.nextInt(3)]);
            c.checkPeriod = Duration.ofMillis(2 + r.nextInt(30));
            c.blockedThreshold = Duration.ofMillis(2 + r.nextInt(50));
            c.keepAlive = Duration.ofMillis(5 + r.nextInt(200));
            c.coreBumpThreshold = 1 + r.nextInt(20);
            c.scheduled = r.nextBoolean() ? 0 : 20 + r.nextInt(200);
            c.pPeriodic = r.nextDouble(0.5);
            c.pCancel = r.nextDouble(0.4);
            // A third of the rounds bound each lane, a third the executor (independently); half of the bounded ones
            // block, with a wait long or short enough that some submitters time out.
            c.maxQueuedPerContext = r.nextInt(3) == 0 ? 1 + r.nextInt(64) : 0;
            c.maxQueued = r.nextInt(3) == 0 ? 1 + r.nextInt(512) : 0;
            c.maxWait = r.nextBoolean() ? Duration.ofMillis(1 + r.nextInt(200)) : null;
            return c;
        }

        @Override
        public String toString() {
            return "Config{seed=" + seed + ", producers=" + producers + ", contexts=" + contexts + ", tasksPerProducer="
                    + tasksPerProducer + ", pCoalescing=" + pCoalescing + ", pPlain=" + pPlain + ", pThrow=" + pThrow
                    + ", pBlock=" + pBlock + ", maxBlockNanos=" + maxBlockNanos + ", pFuture=" + pFuture + ", pHandle="
                    + pHandle + ", end=" + end + ", endAt=" + endAt + ", coreThreads=" + coreThreads + ", maxThreads="
                    + maxThreads + ", batchSize=" + batchSize + ", minTurn=" + minTurn + ", checkPeriod=" + checkPeriod
                    + ", blockedThreshold=" + blockedThreshold + ", keepAlive=" + keepAlive + ", coreBumpThreshold="
                    + coreBumpThreshold + ", scheduled=" + scheduled + ", pPeriodic=" + pPeriodic + ", pCancel="
                    + pCancel + ", maxQueuedPerContext=" + maxQueuedPerContext + ", maxQueued=" + maxQueued
                    + ", maxWait=" + maxWait + '}';
        }
    }

    /** What a round did, for the report. */
    static final class Outcome {
        long accepted, ran, returned, coalesced, rejected, thrown;
        /** Shared coalescing contexts whose last task a stopped round could name, and checked. */
        long sharedLastChecked;
        ExecutorStatistics statistics;
        String scheduled = "";

        @Override
        public String toString() {
            return "accepted=" + accepted + " ran=" + ran + " returned=" + returned + " coalesced=" + coalesced
                    + " rejected=" + rejected + " thrown=" + thrown + " sharedLastChecked=" + sharedLastChecked
                    + (scheduled.isEmpty() ? "" : " " + scheduled)
                    + " stats=" + statistics;
        }
    }

    // ---- task bookkeeping ------------------------------------------------------------------------------------

    static final int SEQ = 0, COAL = 1, PLAIN = 2;
    private static final AtomicIntegerFieldUpdater<Task> RUNS =
            AtomicIntegerFieldUpdater.newUpdater(Task.class, "runs");

    /** Per-lane state; the plain fields are only touched by the lane's own tasks, so they also check happens-before. */
    static final class LaneState {
        final AtomicInteger inside = new AtomicInteger();
        long[] lastSeq;           // sequential: last seq that ran, per producer
        long lastCoalescingSeq;   // coalescing, owned context: last seq that ran
        long plainCounter;        // incremented by every task of the lane, compared with the runs at the end
    }

    abstract class Task implements Runnable {
        final int kind;
        final int context;
        final int producer;
        final long seq;
        final boolean throwIt;
        final long blockNanos;
        volatile int runs;
        volatile boolean accepted, rejected, returned;
        volatile Future<?> future;

        Task(int kind, int context, int producer, long seq, boolean throwIt, long blockNanos) {
            this.kind = kind;
            this.context = context;
            this.producer = producer;
            this.seq = seq;
            this.throwIt = throwIt;
            this.blockNanos = blockNanos;
        }

        @Override
        public final void run() {
            if (RUNS.incrementAndGet(this) != 1) {
                violation("ran twice: " + this);
            }
            if (Thread.currentThread().isInterrupted() && !shutdownNowCalled) {
                violation("task started with the interrupt status set: " + this + " on " + Thread.currentThread());
            }
            LaneState lane = kind == SEQ ? sequential[context] : kind == COAL ? coalescing[context] : null;
            if (lane != null) {
                int in = lane.inside.incrementAndGet();
                if (in != 1) {
                    violation(in + " tasks inside one lane at once: " + this);
                }
                check(lane);
                lane.plainCounter++;
            }
            ranCount.incrementAndGet();
            try {
                if (blockNanos > 0) {
                    LockSupport.parkNanos(blockNanos);
                }
            } finally {
                if (lane != null) {
                    lane.inside.decrementAndGet();
                }
            }
            if (throwIt) {
                thrownCount.incrementAndGet();
                throw new StressException(this);
            }
        }

        abstract void check(LaneState lane);

        @Override
        public String toString() {
            return (kind == SEQ ? "seq" : kind == COAL ? "coal" : "plain") + "[ctx=" + context + ", producer="
                    + producer + ", seq=" + seq + ']';
        }
    }

    final class SeqTask extends Task implements SequentialRunnable {
        SeqTask(int context, int producer, long seq, boolean throwIt, long blockNanos) {
            super(SEQ, context, producer, seq, throwIt, blockNanos);
        }

        @Override
        public Object context() {
            return keys[context];
        }

        @Override
        void check(LaneState lane) {
            long last = lane.lastSeq[producer];
            if (seq != last + 1) {
                violation("sequential order broken: " + this + " ran after seq " + last + " of the same producer");
            }
            lane.lastSeq[producer] = seq;
        }
    }

    final class CoalTask extends Task implements CoalescingRunnable {
        final boolean owned;
        /**
         * A shared context's tasks: a ticket taken just before the submit and one just after it returned. A task whose
         * first ticket is above the second of every other accepted task of its context was submitted after all of
         * them had been accepted: it is the context's last, and must run (or be returned by shutdownNow). Written by
         * the producer, read after its join.
         */
        long ticketBefore, ticketAfter;

        CoalTask(int context, int producer, long seq, boolean throwIt, long blockNanos, boolean owned) {
            super(COAL, context, producer, seq, throwIt, blockNanos);
            this.owned = owned;
        }

        @Override
        public Object context() {
            return keys[context];
        }

        @Override
        void check(LaneState lane) {
            if (owned) {
                if (seq <= lane.lastCoalescingSeq) {
                    violation("coalescing order broken: " + this + " ran after seq " + lane.lastCoalescingSeq);
                }
                lane.lastCoalescingSeq = seq;
            }
        }
    }

    final class PlainTask extends Task {
        PlainTask(int producer, long seq, boolean throwIt, long blockNanos) {
            super(PLAIN, -1, producer, seq, throwIt, blockNanos);
        }

        @Override
        void check(LaneState lane) {
        }
    }

    static final class StressException extends RuntimeException {
        StressException(Object task) {
            super("planned failure of " + task, null, false, false);
        }
    }

    // ---- the round --------------------------------------------------------------------------------------------

    final Config config;
    final Object[] keys;
    final LaneState[] sequential;
    final LaneState[] coalescing;
    final AtomicLong ranCount = new AtomicLong();
    /** Submissions refused for capacity (a limit, or a blocked submitter that timed out): never accepted. */
    final AtomicLong capacityRefusals = new AtomicLong();

    /** A refusal for capacity names a limit; one for shutdown says the executor has been shut down. */
    static boolean forCapacity(RejectedExecutionException e) {
        String m = String.valueOf(e.getMessage());
        return !m.contains("has been shut down") && (m.contains("maxQueued") || m.contains("waiting for room")
                || m.contains("wait for room"));
    }
    final AtomicLong thrownCount = new AtomicLong();
    final AtomicLong handled = new AtomicLong();
    final AtomicLong violations = new AtomicLong();
    final Queue<String> firstViolations = new ConcurrentLinkedQueue<>();
    volatile boolean shutdownNowCalled;
    /** Set once shutdownNow() has returned: a task it returned must never start after that. */
    volatile boolean shutdownNowReturned;
    final List<Thread> madeThreads = new ArrayList<>();

    StressWorkload(Config config) {
        this.config = config;
        keys = new Object[config.contexts];
        sequential = new LaneState[config.contexts];
        coalescing = new LaneState[config.contexts];
        for (int i = 0; i < config.contexts; i++) {
            keys[i] = "ctx-" + i;
            sequential[i] = new LaneState();
            sequential[i].lastSeq = new long[config.producers];
            coalescing[i] = new LaneState();
        }
    }

    void violation(String what) {
        if (violations.incrementAndGet() <= 20) {
            firstViolations.add(what);
        }
    }

    /** Runs the round; returns the outcome, or throws {@link AssertionError} listing what was broken. */
    Outcome run() throws InterruptedException {
        Config c = config;
        ThreadFactory factory = r -> {
            Thread t = new Thread(r, "stress-" + c.seed + "-" + madeThreadsSize());
            synchronized (madeThreads) {
                madeThreads.add(t);
            }
            return t;
        };
        GatlingExecutor.Builder builder = GatlingExecutor.builder();
        if (c.maxQueuedPerContext > 0) {
            builder.maxQueuedPerContext(c.maxQueuedPerContext);
        }
        if (c.maxQueued > 0) {
            builder.maxQueued(c.maxQueued);
        }
        if (c.maxWait != null) {
            builder.overflow(Overflow.block(c.maxWait));
        }
        GatlingExecutor executor = builder.name("stress")
                .coreThreads(c.coreThreads).maxThreads(c.maxThreads).batchSize(c.batchSize).minTurn(c.minTurn)
                .checkPeriod(c.checkPeriod).blockedThreshold(c.blockedThreshold).auxiliaryKeepAlive(c.keepAlive)
                .coreBumpThreshold(c.coreBumpThreshold).threadFactory(factory)
                .uncaughtExceptionHandler((t, e) -> {
                    if (e instanceof StressException) {
                        handled.incrementAndGet();
                    } else {
                        violation("unexpected throwable at the handler: " + e);
                    }
                })
                .build();
        Executor[] seqHandles = new Executor[c.contexts];
        Executor[] coalHandles = new Executor[c.contexts];
        for (int i = 0; i < c.contexts; i++) {
            seqHandles[i] = executor.sequential(keys[i]);
            coalHandles[i] = executor.coalescing(keys[i]);
        }

        long total = (long) c.producers * c.tasksPerProducer;
        long endThreshold = c.end == End.NONE ? Long.MAX_VALUE : Math.max(1, (long) (c.endAt * total));
        AtomicLong acceptedSoFar = new AtomicLong();
        AtomicLong coalescingTickets = new AtomicLong();
        AtomicBoolean endFired = new AtomicBoolean();
        List<Runnable> returnedList = new ArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        @SuppressWarnings("unchecked")
        List<Task>[] perProducer = new List[c.producers];
        Thread[] producers = new Thread[c.producers];
        Throwable[] producerFailure = new Throwable[1];
        for (int p = 0; p < c.producers; p++) {
            int producer = p;
            List<Task> mine = new ArrayList<>(c.tasksPerProducer);
            perProducer[p] = mine;
            producers[p] = new Thread(() -> {
                SplittableRandom r = new SplittableRandom(c.seed * 31 + producer);
                long[] seqOf = new long[c.contexts];     // next sequential seq per context for this producer
                long[] coalSeqOf = new long[c.contexts];
                try {
                    start.await();
                    for (int i = 0; i < c.tasksPerProducer; i++) {
                        double kindDraw = r.nextDouble();
                        int ctx = r.nextInt(c.contexts);
                        boolean throwIt = r.nextDouble() < c.pThrow;
                        long block = r.nextDouble() < c.pBlock ? 1 + r.nextLong(c.maxBlockNanos) : 0;
                        boolean viaFuture = r.nextDouble() < c.pFuture;
                        boolean viaHandle = r.nextDouble() < c.pHandle;
                        Task task;
                        Executor handle;
                        if (kindDraw < c.pPlain) {
                            task = new PlainTask(producer, i, throwIt && !viaFuture, block);
                            handle = null;
                        } else if (kindDraw < c.pPlain + c.pCoalescing) {
                            // odd contexts are owned by one producer each, even ones are shared by all
                            int own = c.producers == 1 ? ctx : ctx % 2 == 1 ? ownedContext(ctx, producer) : -1;
                            boolean owned = own >= 0;
                            ctx = owned ? own : ctx & ~1;
                            task = new CoalTask(ctx, producer, ++coalSeqOf[ctx], throwIt && !viaFuture, block,
                                    owned);
                            handle = coalHandles[ctx];
                        } else {
                            task = new SeqTask(ctx, producer, ++seqOf[ctx], throwIt && !viaFuture, block);
                            handle = seqHandles[ctx];
                        }
                        CoalTask shared = task instanceof CoalTask && !((CoalTask) task).owned ? (CoalTask) task : null;
                        if (shared != null) {
                            shared.ticketBefore = coalescingTickets.incrementAndGet();
                        }
                        try {
                            if (viaFuture) {
                                task.future = executor.submit(task);
                            } else if (viaHandle && handle != null) {
                                handle.execute(task);
                            } else {
                                executor.execute(task);
                            }
                        } catch (RejectedExecutionException rejected) {
                            task.rejected = true;
                            mine.add(task);
                            if (forCapacity(rejected)) {
                                capacityRefusals.incrementAndGet();
                                if (task.kind == SEQ) {
                                    seqOf[ctx]--; // never accepted: the next task of the lane takes its number
                                }
                                continue;
                            }
                            if (!endFired.get()) {
                                violation("rejected before any shutdown: " + task);
                            }
                            return;  // this producer is done: the executor has been shut down
                        }
                        if (shared != null) {
                            shared.ticketAfter = coalescingTickets.incrementAndGet();
                        }
                        task.accepted = true;
                        mine.add(task);
                        if (acceptedSoFar.incrementAndGet() == endThreshold && endFired.compareAndSet(false, true)) {
                            if (c.end == End.SHUTDOWN) {
                                executor.shutdown();
                            } else {
                                shutdownNowCalled = true;
                                List<Runnable> back = executor.shutdownNow();
                                shutdownNowReturned = true;
                                synchronized (returnedList) {
                                    returnedList.addAll(back);
                                }
                            }
                        }
                    }
                } catch (Throwable t) {
                    producerFailure[0] = t;
                }
            }, "producer-" + p);
            producers[p].start();
        }
        ScheduledLoad scheduledLoad = c.scheduled > 0 ? new ScheduledLoad(this, executor, endFired) : null;
        start.countDown();
        if (scheduledLoad != null) {
            scheduledLoad.start();
        }
        for (Thread t : producers) {
            t.join();
        }
        if (scheduledLoad != null) {
            scheduledLoad.join();
        }
        if (producerFailure[0] != null) {
            throw new AssertionError("producer failed, " + c, producerFailure[0]);
        }

        // Shared coalescing contexts: after every producer is done, one more task each; it is the last and must run.
        List<Task> finals = new ArrayList<>();
        if (!endFired.get()) {
            for (int ctx = 0; ctx < c.contexts; ctx++) {
                if (!(c.producers == 1 || ctx % 2 == 1)) {
                    CoalTask last = new CoalTask(ctx, -1, Long.MAX_VALUE, false, 0, false);
                    for (;;) {
                        try {
                            coalHandles[ctx].execute(last);
                            break;
                        } catch (RejectedExecutionException full) {
                            if (!forCapacity(full)) {
                                throw full;
                            }
                            capacityRefusals.incrementAndGet();
                            Thread.yield(); // the workers make room
                        }
                    }
                    last.accepted = true;
                    finals.add(last);
                }
            }
            executor.shutdown();
        }
        boolean terminated = executor.awaitTermination(60, TimeUnit.SECONDS);
        if (!terminated) {
            throw new AssertionError("did not terminate within 60 s: " + executor + "\n" + c + "\n" + threadDump());
        }

        // ---- accounting ----
        Outcome out = new Outcome();
        Map<Object, Task> byFuture = new IdentityHashMap<>();
        List<Task> all = new ArrayList<>();
        for (List<Task> l : perProducer) {
            all.addAll(l);
        }
        all.addAll(finals);
        for (Task t : all) {
            if (t.future != null) {
                byFuture.put(t.future, t);
            }
        }
        int[] returnedPerCoalescingContext = new int[c.contexts];
        for (Runnable r : returnedList) {
            if (scheduledLoad != null && scheduledLoad.claimReturned(r)) {
                continue;
            }
            Task t = r instanceof Task ? (Task) r : byFuture.get(r);
            if (t == null) {
                violation("shutdownNow returned something that is neither an accepted task nor its future: " + r);
                continue;
            }
            if (r instanceof Task && t.future != null) {
                violation("shutdownNow returned the task instead of its future: " + t);
            }
            if (!t.accepted) {
                violation("shutdownNow returned a task that was not accepted: " + t);
            }
            if (t.returned) {
                violation("shutdownNow returned a task twice: " + t);
            }
            t.returned = true;
            if (t.kind == COAL && ++returnedPerCoalescingContext[t.context] > 1) {
                violation("shutdownNow returned two tasks of coalescing context " + t.context);
            }
        }
        for (Task t : all) {
            int runs = t.runs;
            if (t.rejected && runs > 0) {
                violation("a rejected task ran: " + t);
            }
            if (!t.accepted) {
                out.rejected++;
                continue;
            }
            out.accepted++;
            if (runs > 0) {
                out.ran++;
                if (t.returned) {
                    violation("a task both ran and was returned: " + t);
                }
                if (t.future != null && (!t.future.isDone() || t.future.isCancelled())) {
                    violation("a task ran but its future is " + (t.future.isCancelled() ? "cancelled" : "not done")
                            + ": " + t);
                }
            } else if (t.returned) {
                out.returned++;
            } else if (t.kind == COAL) {
                out.coalesced++;
                if (t.future != null && !t.future.isCancelled()) {
                    violation("a replaced coalescing task's future is not cancelled: " + t);
                }
            } else {
                violation("lost: an accepted task neither ran nor was returned: " + t);
            }
        }
        // Per-lane order of what ran vs what was returned, and the last coalescing task.
        for (List<Task> mine : perProducer) {
            Map<Integer, List<Task>> seqByContext = new java.util.HashMap<>();
            Map<Integer, Task> lastOwnedCoalescing = new java.util.HashMap<>();
            for (Task t : mine) {
                if (!t.accepted) {
                    continue;
                }
                if (t.kind == SEQ) {
                    seqByContext.computeIfAbsent(t.context, k -> new ArrayList<>()).add(t);
                } else if (t.kind == COAL && ((CoalTask) t).owned) {
                    Task previous = lastOwnedCoalescing.put(t.context, t);
                    if (previous != null && previous.returned) {
                        violation("a returned coalescing task had a newer task in its context: " + previous);
                    }
                }
            }
            for (List<Task> lane : seqByContext.values()) {
                boolean sawReturned = false;
                for (Task t : lane) {
                    if (t.returned) {
                        sawReturned = true;
                    } else if (sawReturned) {
                        violation("a sequential task ran after an earlier one of its lane was returned: " + t);
                    }
                }
            }
            for (Task last : lastOwnedCoalescing.values()) {
                if (last.runs == 0 && !last.returned) {
                    violation("the last task of an owned coalescing context did not run: " + last);
                }
            }
        }
        for (Task last : finals) {
            if (last.runs == 0) {
                violation("the final task of a shared coalescing context did not run: " + last);
            }
        }
        if (finals.isEmpty()) {
            // A round that ended by a stop has no finals: a shared context's last task is the one submitted after
            // every other of its context had been accepted, when there is one (see CoalTask#ticketBefore).
            Map<Integer, List<CoalTask>> sharedByContext = new java.util.HashMap<>();
            for (Task t : all) {
                if (t.accepted && t instanceof CoalTask && !((CoalTask) t).owned) {
                    sharedByContext.computeIfAbsent(t.context, k -> new ArrayList<>()).add((CoalTask) t);
                }
            }
            for (List<CoalTask> tasks : sharedByContext.values()) {
                CoalTask latest = null;
                for (CoalTask t : tasks) {
                    if (latest == null || t.ticketBefore > latest.ticketBefore) {
                        latest = t;
                    }
                }
                boolean afterAllOthers = true;
                for (CoalTask t : tasks) {
                    if (t != latest && t.ticketAfter > latest.ticketBefore) {
                        afterAllOthers = false;
                        break;
                    }
                }
                if (afterAllOthers) {
                    out.sharedLastChecked++;
                    if (latest.runs == 0 && !latest.returned) {
                        violation("the last task of a shared coalescing context neither ran nor was returned: "
                                + latest);
                    }
                }
            }
        }
        if (c.end != End.SHUTDOWN_NOW && out.returned != 0) {
            violation("tasks returned without shutdownNow");
        }
        for (int i = 0; i < c.contexts; i++) {
            if (coalescing[i].inside.get() != 0 || sequential[i].inside.get() != 0) {
                violation("a lane's task is still inside after termination: ctx " + i);
            }
        }
        long laneRuns = 0;
        for (int i = 0; i < c.contexts; i++) {
            laneRuns += sequential[i].plainCounter + coalescing[i].plainCounter;
        }
        long laneTasksThatRan = all.stream().filter(t -> t.kind != PLAIN && t.runs > 0).count();
        if (laneRuns != laneTasksThatRan) {
            violation("plain per-lane counters lost updates (missing happens-before): counted " + laneRuns
                    + ", ran " + laneTasksThatRan);
        }
        out.thrown = thrownCount.get();
        if (handled.get() != out.thrown) {
            violation("handler saw " + handled.get() + " failures, tasks threw " + out.thrown);
        }
        if (ranCount.get() != out.ran) {
            violation("ran counter " + ranCount.get() + " != tasks that ran " + out.ran);
        }
        ExecutorStatistics s = executor.statistics();
        out.statistics = s;
        if (scheduledLoad == null) {
            expect("submitted", s.submitted(), out.accepted);
            expect("executed", s.executed(), out.ran);
            expect("coalesced", s.coalesced(), out.coalesced);
            expect("returned", s.returned(), out.returned);
            expect("failed", s.failed(), out.thrown);
        } else {
            // Scheduled runs enter the pool once per dispatch, which only the executor sees: the identity must hold
            // exactly, and the producers' tasks are part of each counter.
            expect("submitted - executed - coalesced - returned",
                    s.submitted() - s.executed() - s.coalesced() - s.returned(), 0);
            atLeast("executed", s.executed(), out.ran);
            atLeast("coalesced", s.coalesced(), out.coalesced);
            atLeast("returned", s.returned(), out.returned);
            atLeast("failed", s.failed(), out.thrown);
            scheduledLoad.check();
            out.scheduled = scheduledLoad.summary();
        }
        expect("rejected (for capacity)", s.rejected(), capacityRefusals.get());
        expect("waitingSubmitters", s.waitingSubmitters(), 0);
        if (c.maxQueuedPerContext == 0 && c.maxQueued == 0) {
            expect("acceptedOverLimit", s.acceptedOverLimit(), 0);
        }
        expect("queued", s.queued(), 0);
        expect("liveContexts", s.liveContexts(), 0);
        expect("threads", s.threads(), 0);
        if (s.peakThreads() > c.maxThreads) {
            violation("peakThreads " + s.peakThreads() + " above maxThreads " + c.maxThreads);
        }
        if (!executor.contextStatistics().isEmpty()) {
            violation("contextStatistics not empty after termination: " + executor.contextStatistics());
        }
        List<Thread> threads;
        synchronized (madeThreads) {
            threads = new ArrayList<>(madeThreads);
        }
        for (Thread t : threads) {
            t.join(5_000);
            if (t.isAlive()) {
                violation("worker thread outlived termination: " + t);
            }
        }
        if (violations.get() > 0) {
            throw new AssertionError(violations.get() + " violation(s) in " + c + "\n  " + String.join("\n  ",
                    firstViolations) + "\n  outcome: " + out);
        }
        return out;
    }

    /**
     * Owned coalescing contexts are the odd ones; odd context k belongs to producer (k / 2) % producers. Returns
     * an owned context of {@code producer} near the draw, or -1 when it owns none (the task then goes to a shared,
     * even context).
     */
    private int ownedContext(int ctx, int producer) {
        for (int k = ctx | 1; k < config.contexts; k += 2) {
            if ((k / 2) % config.producers == producer) {
                return k;
            }
        }
        for (int k = 1; k < config.contexts; k += 2) {
            if ((k / 2) % config.producers == producer) {
                return k;
            }
        }
        return -1;
    }

    private int madeThreadsSize() {
        synchronized (madeThreads) {
            return madeThreads.size();
        }
    }

    private void atLeast(String counter, long actual, long expected) {
        if (actual < expected) {
            violation("statistics." + counter + "() = " + actual + ", expected at least " + expected);
        }
    }

    private void expect(String counter, long actual, long expected) {
        if (actual != expected) {
            violation("statistics." + counter + "() = " + actual + ", expected " + expected);
        }
    }

    static String threadDump() {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            sb.append(e.getKey()).append(' ').append(e.getKey().getState()).append('\n');
            for (StackTraceElement el : e.getValue()) {
                sb.append("    at ").append(el).append('\n');
            }
        }
        return sb.toString();
    }
}
