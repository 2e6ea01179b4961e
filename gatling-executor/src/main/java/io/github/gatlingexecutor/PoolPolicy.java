package io.github.gatlingexecutor;

/**
 * Every decision about the pool's size and about spinning, in one place. The other pool classes carry the decisions
 * out or supply what they rest on, and decide nothing themselves:
 * <ul>
 *   <li>{@link WorkerPool} is the mechanism: it reserves slots, starts and parks threads, keeps the idle stack;</li>
 *   <li>the {@link Checker} observes: per busy worker, whether it is stuck in one task, blocked off its CPU, or merely
 *       descheduled, and hands the counts to {@link #inspected};</li>
 *   <li>workers ask before they spin ({@link #maySearch}, {@link #spinningPays}) and before they retire
 *       ({@link #mayRetire}).</li>
 * </ul>
 *
 * <h2>The rules</h2>
 * <ol>
 *   <li><b>Core starts on demand.</b> Work offered while no worker is idle or searching starts a core worker if the
 *       pool is below its core size; otherwise the checker is nudged to look at the busy workers soon, unless a
 *       searcher is only yielding (it polls again in microseconds). A delayed task scheduled while no worker is
 *       listed starts one too ({@link #delayedTaskScheduled}).</li>
 *   <li><b>Auxiliary starts only for blocking.</b> After each look of the checker, if work waits and no worker is
 *       idle, start {@code cores - running} workers ({@code running}: busy workers neither stuck nor blocked off
 *       their CPU), and at least one when some worker is stuck and none runs, but never more than the items
 *       waiting. A CPU-bound backlog that already fills the cores starts none (SPEC point 6: never more workers than
 *       cores for CPU-bound work), and growth is damped to one thread per core per look.</li>
 *   <li><b>Refill.</b> A pool below its core size with work waiting (a thread factory failed earlier) starts a core
 *       worker at the next look. The refilled worker counts against the items waiting, so a refill and an auxiliary
 *       start never come for the same task.</li>
 *   <li><b>Core bump.</b> Every {@code coreBumpThreshold}-th auxiliary start raises the core size by one, up to
 *       {@code maxThreads}: a load that keeps needing auxiliary workers gets them for good.</li>
 *   <li><b>Retirement.</b> An auxiliary worker idle for {@code auxiliaryKeepAlive} ends, unless that would take the
 *       pool below the core size.</li>
 *   <li><b>Spinning.</b> At most half the cores' worth of workers search at once, and a worker spins (searches, or
 *       lingers on its emptied lane) only while the workers in long items and the searchers leave a core to spare;
 *       each worker's search budget adapts between {@link #MIN_SEARCH_NANOS} and {@link #MAX_SEARCH_NANOS}, or drops
 *       to none while work is sparse: then the worker neither searches nor lingers, releases its idle lanes (unless
 *       lanes were released too early lately: {@link #releasesAllAtPark}) and parks at once ({@link #sparse}), until
 *       a wake-up soon after a park shows that a short search would have paid.</li>
 * </ol>
 */
final class PoolPolicy {
    /** Available processors, read once. */
    static final int CORES = Runtime.getRuntime().availableProcessors();

    /**
     * Bounds of a worker's search: how long it polls the ready queue, one spin apart (yielding every 16th poll, outside
     * the count of searchers), before it parks (the park phase of the {@link Waiting} strategy). Each worker adapts its
     * own budget between these, as adaptive spinning does for locks: a search that finds work doubles it (work is
     * flowing, and a park/unpark pair would cost the submitter a system call), a search that ends in a park halves it
     * (work is sparse, and spinning would only burn a CPU). An idle executor therefore spins at most once, briefly,
     * after its last task. A budget of time, not of polls: a poll count stretched with the yields in the waits, and at
     * 10,000 tasks a second a budget grown to 4,096 polls outlasted the 100 us between tasks, so a worker spun for good
     * on a nearly idle executor. Such a spinner, preempted by the producer it shares a CPU with, holds up the very task
     * it waits for (a submitter that sees a searcher wakes nobody): p99 at low load went from about 35 us to hundreds
     * in some rounds. Capped at 50 us, a search outlives only the short gaps of a stream of tasks.
     */
    static final long MIN_SEARCH_NANOS = 4_000L;
    static final long MAX_SEARCH_NANOS = 50_000L;

    /**
     * A park that a submitter ended within this long would have been saved by a search of the shortest budget and a
     * little more: a worker that has stopped searching ({@link #sparse}) takes it up again.
     */
    private static final long QUICK_WAKE_NANOS = 2 * MIN_SEARCH_NANOS;

    /** An item (a lane's batch, an unordered task) running longer than this keeps its CPU busy for long stretches. */
    private static final long LONG_ITEM_NANOS = 1_000_000L;

    private final Engine engine;
    private final Settings settings;
    private final int maxSearchers = Math.max(1, CORES / 2);

    PoolPolicy(Engine engine) {
        this.engine = engine;
        this.settings = engine.settings;
    }

    // ---- sizing -------------------------------------------------------------------------------------------------

    /** Rule 1: work was offered and no worker is idle or searching (a searcher in its yield does not count). */
    void noWorkerIdle(WorkerPool pool) {
        if (pool.threads() < pool.coreTarget()) {
            pool.tryStart(false);
        } else if (!pool.searcherYielding()) {
            engine.checker.nudge(); // every worker is busy: let the checker see whether they are blocked
        }
    }

    /**
     * Rule 1, for a delayed task: until it is due only the checker holds it, and the checker is a daemon, so with no
     * worker alive a program whose main thread returned would exit and drop it. {@code ScheduledThreadPoolExecutor}
     * starts a core thread for a delayed task; so does this. Returns whether it started one (which also tried the
     * checker: see {@link WorkerPool#tryStart}).
     *
     * <p>No worker listed, not no slot taken: a first worker's start still in a slow factory call is no worker yet, and
     * the schedule call then leaves the checker to that start (see TaskTimer#startChecker). Counted as a worker here,
     * it would make this call start nothing at all, and the task, due in milliseconds, wait for that one factory call
     * (for good with a factory that waits for the executor's own work), where an {@code execute} starts the next core
     * worker at once. So below the core size a core worker is started here as for that execute; at the core size,
     * nothing is.
     */
    boolean delayedTaskScheduled(WorkerPool pool) {
        return pool.workers().length == 0 && pool.tryStart(false);
    }

    /**
     * Rules 2 and 3, after one look of the checker: {@code running} busy workers neither stuck nor blocked off their
     * CPU, {@code stuck} workers in one task for {@code blockedThreshold}, {@code notBusy} workers that are not in an
     * item (searching, parked, or about to run). Returns whether it started a worker, auxiliary or a core refill (work
     * is backing up, and the checker looks again within a few milliseconds).
     */
    boolean inspected(WorkerPool pool, int running, int stuck, int notBusy) {
        if (engine.readyQueue.isEmpty() || engine.stopping()) {
            return false;
        }
        boolean refilled = pool.threads() < pool.coreTarget() && pool.tryStart(false);
        if (notBusy > 0) {
            pool.signalWork(); // an idle worker takes the work without a new thread
            return refilled;
        }
        // Workers being started are capacity on its way, as idle ones are: not seen among the workers while the
        // factory makes their thread, a core start made this look start an auxiliary worker beside it (three threads
        // for a CPU-bound load on two cores, with a slow factory). With no worker running or starting at all, even a
        // machine whose cores are taken by stuck tasks needs one more thread. A core worker refilled in this look is
        // such capacity too: its start has returned, so it is counted neither among the workers looked at nor among
        // the starts (with coreThreads = cores, a refill after failed starts brought an auxiliary worker beside it).
        int starting = pool.startsInProgress() + (refilled ? 1 : 0);
        int toStart = Math.max(CORES - running - starting, stuck > 0 && running + starting == 0 ? 1 : 0);
        // No more than the items waiting: each new worker takes one, and a lane runs on one thread at a time. (Started
        // for cores alone, the last of an even number of blocked tasks on two cores brought an idle thread with it.)
        // A core worker refilled in this look takes one of them (it and an auxiliary worker came for one task).
        int waiting = Math.max(1, engine.readyQueue.countUpTo(toStart + 1));
        toStart = Math.min(toStart, waiting - (refilled ? 1 : 0));
        int started = 0;
        while (started < toStart && pool.tryStart(true)) {
            started++;
        }
        return started > 0 || refilled;
    }

    /**
     * Rule 2's companion: whether lanes sent round the ready queue once more with nothing waiting (see
     * SequentialLane#runBatch) should be released by the checker rather than wait for a worker: every worker is in an
     * item that has run for over a millisecond, so none comes round to them soon. Left there, each stays mapped (empty)
     * for as long as the workers are busy, and counts as work waiting for rule 2: it started auxiliary workers with
     * nothing to run. While items are short, the workers come round within microseconds, and releasing such a lane
     * would cost its context's next submit a new lane.
     */
    boolean emptyRoundsStranded(long now) {
        boolean any = false;
        for (Worker w : engine.pool.workers()) {
            if (w.parkState() == Worker.RETIRED) {
                continue;
            }
            if (!w.inLongItem(now, LONG_ITEM_NANOS)) {
                return false;
            }
            any = true;
        }
        return any;
    }

    /**
     * The same, from one look of the checker ({@link #inspected}'s counts): no worker is free and none runs (each is
     * stuck, or blocked off its CPU), so none comes round soon, however young its item.
     */
    static boolean emptyRoundsStranded(int running, int notBusy) {
        return running == 0 && notBusy == 0;
    }

    /** Rule 4: whether the {@code auxStarted}-th auxiliary start raises the core size from {@code coreTarget}. */
    boolean bumpsCore(long auxStarted, int coreTarget) {
        return auxStarted % settings.coreBumpThreshold == 0 && coreTarget < settings.maxThreads;
    }

    /**
     * Rule 5: whether an idle auxiliary worker may end, with {@code threads} slots taken and {@code retiring} workers
     * already allowed to end (their slots are given back only as their threads end).
     */
    static boolean mayRetire(int threads, int retiring, int coreTarget) {
        return threads - retiring > coreTarget;
    }

    // ---- spinning -----------------------------------------------------------------------------------------------

    /** Rule 6: whether a worker with nothing to do may search, with {@code searching} workers searching already. */
    boolean maySearch(Worker self, int searching) {
        return !sparse(self) && searching < maxSearchers && spinningPays(self, searching);
    }

    /**
     * Whether a worker with nothing to do should spin (search, or linger on its emptied lane) rather than park: only
     * while the workers in long items (see {@link Worker#inLongItem}) and the searchers already spinning leave a core
     * to spare for the threads outside the pool, the producers above all. Measured on 2 cores (one context with a
     * backlog of 200 us tasks, tiny tasks for 255 others; docs/hand-off-experiments.md): a second worker that spun
     * between the tiny tasks shared a CPU with the producer, the scheduler moved it next to the worker in the long
     * tasks, and the tiny tasks waited milliseconds at p99; parked between them, it is woken onto the free CPU, and
     * they waited tens of microseconds. Tiny tasks over many contexts make no long item (a lane visit ends when the
     * lane empties), so there spinning stays where it pays: a stream of activations costs no wake-up. One hot context
     * does make one (its worker keeps the lane batch after batch), and the other workers then park, which leaves the
     * producer its core.
     */
    boolean spinningPays(Worker self, int spinners) {
        int spare = CORES - 1 - spinners;
        if (spare <= 0) {
            return false;
        }
        long now = engine.coarseNowOpaque();
        for (Worker w : engine.pool.workers()) {
            if (w != self && w.inLongItem(now, LONG_ITEM_NANOS) && --spare == 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Rule 6: the next search budget of a worker whose search with {@code budget} found work, or did not. A failed
     * search halves it, and one that would fall below {@link #MIN_SEARCH_NANOS} ends searching: the worker is then
     * {@link #sparse} until {@link #budgetAfterWake} gives it the shortest budget back.
     */
    static long nextSearchBudget(long budget, boolean found) {
        if (found) {
            return Math.min(MAX_SEARCH_NANOS, Math.max(MIN_SEARCH_NANOS, budget << 1));
        }
        long half = budget >> 1;
        return half < MIN_SEARCH_NANOS ? 0 : half;
    }

    /**
     * Rule 6: the search budget of a worker that a submitter woke {@code parkedNanos} after it parked. A worker that
     * stopped searching starts again with the shortest budget when the wake-up came so soon that a search would have
     * caught the work without it.
     */
    static long budgetAfterWake(long budget, long parkedNanos) {
        return budget == 0 && parkedNanos < QUICK_WAKE_NANOS ? MIN_SEARCH_NANOS : budget;
    }

    /**
     * Rule 6: whether work reaches {@code w} so sparsely that spinning for it does not pay: its searches have failed
     * down to no budget. Such a worker neither searches nor lingers on an emptied lane, and parks without a timeout,
     * releasing its idle lanes first instead of waking to release them when their grace ends (unless
     * {@link #releasesAllAtPark} says they are likely to be used again soon). Measured on 2 cores
     * (docs/hand-off-experiments.md, thirteenth set): a worker that stayed awake for the microseconds of a linger and a
     * search after each task, or parked with a timeout, took about 18 us to wake for the next task at 10,000 tasks a
     * second, against 5 us for one that parked at once without a timeout: the virtual CPU it left went to sleep in a
     * way that costs more to leave, and arming and cancelling the timer costs on top. A released lane costs its
     * context's next submit a new lane, which at this rate is nothing beside a wake-up.
     */
    static boolean sparse(Worker w) {
        return w.searchBudget == 0;
    }

    /**
     * Rule 6: whether a worker about to park releases every idle lane it holds, young ones too, and parks without a
     * timeout: while work is {@link #sparse}, unless a dense run of early releases was seen in the last second
     * ({@link Engine#noteRelease}). Releasing them all is what lets a sparse worker's park go untimed, which wakes
     * faster (see {@link #sparse}); but where contexts come back within the grace while the workers catch up with
     * their producers and park between bursts (two producers updating 10,000 coalescing contexts), it made about two
     * updates in five re-create their lane. A context that comes back that soon finds its lane released and reports
     * it; once such reports come denser than one per 100 us, the workers keep their young lanes through their parks,
     * which are then timed to release them when the grace ends. At low load the reports stay sparse, and so do the
     * untimed parks.
     */
    boolean releasesAllAtPark(Worker w) {
        return sparse(w) && releasesAllAtPark(w, System.nanoTime()); // no clock read for a worker not sparse
    }

    /** {@link #releasesAllAtPark(Worker)} at {@code now} (System.nanoTime; the rule's tests pass their own time). */
    boolean releasesAllAtPark(Worker w, long now) {
        return sparse(w) && !engine.releasedEarlyLately(now);
    }

    /** Rule 6: whether {@code w} should linger on the lane it has just emptied (see SequentialLane#runBatch). */
    boolean lingerPays(Worker w) {
        return !sparse(w) && spinningPays(w, 0);
    }
}
