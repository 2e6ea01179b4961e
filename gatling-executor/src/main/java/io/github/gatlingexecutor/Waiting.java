package io.github.gatlingexecutor;

/**
 * The one waiting strategy of this executor, for a thread that expects another thread to act within microseconds:
 * spin, yield, then park (the phases of Agrona's {@code BackoffIdleStrategy}). This class is the first two phases;
 * the third belongs to the caller, because only the caller knows who will unpark it:
 * <ul>
 *   <li>a worker's search for work parks in {@link WorkerPool#awaitWork} once its time budget is spent; it
 *       makes its yields itself ({@link WorkerPool#yieldWhileSearching}), outside the count of searchers;</li>
 *   <li>a worker lingering on an emptied lane ({@link SequentialLane#runBatch}) gives the lane up instead of parking,
 *       and goes on to search;</li>
 *   <li>waits for a thread that is between two instructions of a lock-free step (a submitter that has claimed a
 *       lane's slot but not yet written its task, or is linking the lane's next chunk; a worker inside its take
 *       hand-shake) never park: that thread holds no lock and needs nothing from us, so it finishes as soon as it
 *       runs.</li>
 * </ul>
 *
 * <h2>Why a yield in the spin</h2>
 * The threads a waiter waits for are often runnable but not running: on a machine with as many cores as workers, a
 * producer thread is one more runnable thread than there are CPUs. A waiter that only spins then holds a CPU that the
 * thread it waits for needs, for a whole scheduler slice. With one wait in {@link #YIELD_EVERY} a yield, a runnable
 * thread gets the CPU within a few microseconds; with none runnable the yield is a system call that returns at once,
 * so the spin barely slows down. Measured on 2 cores with one producer and two workers (tiny tasks over 1,024
 * contexts, docs/hand-off-experiments.md): without yields, over half of the workers' CPU samples were in the spins
 * while the producer, which bounds the run, waited for a CPU; with them the run was 1.2 to 1.7 times faster (six
 * alternating pairs).
 */
final class Waiting {
    /** One wait in this many is a yield (a power of two); the first {@code YIELD_EVERY - 1} waits are pure spins. */
    static final int YIELD_EVERY = 16;

    private Waiting() {
    }

    /**
     * A round of {@link #YIELD_EVERY} waits (a yield included) that took longer than this was not on a CPU all along:
     * the scheduler gave the CPU to another thread for a slice. An undisturbed round takes a few microseconds.
     */
    static final long PREEMPTED_NANOS = 50_000;

    /** Returned by {@link #pauseUnlessPreempted} when the waiter should stop spinning. */
    static final int PREEMPTED = -1;

    /** Whether the wait that follows {@code waits} earlier ones is the yield of its round (the last of the round). */
    static boolean yieldDue(int waits) {
        return (waits & (YIELD_EVERY - 1)) == YIELD_EVERY - 1;
    }

    /** Waits once; {@code waits} counts the calls of this wait so far. Returns it plus one, for the next call. */
    static int pause(int waits) {
        if (yieldDue(waits)) {
            Thread.yield();
        } else {
            Thread.onSpinWait();
        }
        return waits + 1;
    }

    /**
     * {@link #pause}, for a waiter that can stop spinning (a search that can park, a linger that can give its lane
     * up): after each round of {@link #YIELD_EVERY} waits it reads the clock, and returns {@link #PREEMPTED} instead
     * when the round took longer than {@link #PREEMPTED_NANOS}. {@link Worker#spinMark} holds the clock at the start
     * of the round (the caller sets it when it starts waiting). A waiter that was preempted shares its CPU with a
     * thread that has work (a worker in a long task, a producer): spinning on would take that CPU from it in turns of a
     * scheduler slice, and what this waiter waits for would wait those milliseconds too. Parked instead, it is woken
     * onto a free CPU.
     */
    static int pauseUnlessPreempted(int waits, Worker worker) {
        return checkPreempted(pause(waits), worker);
    }

    /**
     * {@link #pauseUnlessPreempted} without the yield, for a caller that makes its yields itself (when
     * {@link #yieldDue}).
     */
    static int spinUnlessPreempted(int waits, Worker worker) {
        Thread.onSpinWait();
        return checkPreempted(waits + 1, worker);
    }

    private static int checkPreempted(int waits, Worker worker) {
        if ((waits & (YIELD_EVERY - 1)) == 0) {
            long now = System.nanoTime();
            if (now - worker.spinMark > PREEMPTED_NANOS) {
                return PREEMPTED;
            }
            worker.spinMark = now;
        }
        return waits;
    }
}
