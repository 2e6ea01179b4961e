package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.BooleanSupplier;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Deliberately broken copy of {@code SequentialLaneGrowStress}, on a small copy of the lane's growth protocol (a
 * producer index claimed by CAS, chunks that double, the next chunk made before the claim of its first slot and
 * installed by that claimer) whose grower claims with (seq + 1, ACTIVE) instead of GROWING, and then installs the new
 * chunk as the producers' and links it. A submitter whose claim comes between those steps reads the grower's state
 * and the old producer chunk: the slot it claims lies past that chunk's end, so it grows too, a chunk starting one
 * slot later, and links it from the same old chunk. One link survives: the consumer then finds the grower's chunk and
 * a slot in it nobody writes (the later task is in the orphan), or a chunk that starts past the slot it wants (the
 * grower's task is). Same actors and outcomes; the forbidden "5, ..." (a task lost) shows up. Run with
 * {@code -t broken}.
 *
 * <p>The real consumer would wait for such a slot forever (a claimed slot not yet written is a submitter between two
 * instructions), or read the later chunk at a negative index. This copy's owner waits only while an offer is in
 * flight (test scaffolding: {@code offered}); once every offer has returned, a slot still missing never appears, so
 * it counts that task as lost and goes on: the loss is an outcome rather than a hung test or an exception.
 */
@JCStressTest
@Outcome(id = "6, 123, 0", expect = ACCEPTABLE, desc = "a1, a2 (grew the lane), then b; the owner ran all")
@Outcome(id = "6, 132, 0", expect = ACCEPTABLE, desc = "a1, b (grew the lane), a2; the owner ran all")
@Outcome(id = "6, 132, 2", expect = ACCEPTABLE, desc = "a1, b (grew the lane); the owner went idle, a2 activated")
@Outcome(id = "6, 312, 0", expect = ACCEPTABLE, desc = "b, a1 (grew the lane), a2; the owner ran all")
@Outcome(id = "6, 312, 1", expect = ACCEPTABLE, desc = "b; the owner went idle; a1 activated and grew the lane")
@Outcome(id = "6, 312, 2", expect = ACCEPTABLE, desc = "b, a1 (grew the lane); the owner went idle, a2 activated")
@Outcome(id = "[0-5], .*", expect = FORBIDDEN, desc = "LOST: a task accepted that nobody ran")
@Outcome(expect = FORBIDDEN, desc = "run twice, out of order, two activations, or anything else")
@State
public class BrokenSequentialLaneGrowStress {

    /** The growth protocol of {@code SequentialLane} without GROWING (and without DEAD, CLOSED or limits). */
    static final class GrowLane {
        static final int ACCEPTED = 0, ACTIVATED = 1;
        static final int ACTIVE = 0, IDLE = 1;
        private static final int MODE_BITS = 1;
        private static final long MODE_MASK = (1 << MODE_BITS) - 1;
        static final int FIRST_CHUNK = 4, MAX_CHUNK = 64;
        static final Object TAKEN = new Object();

        static final class Chunk {
            final long base;
            final Object[] tasks;
            volatile Chunk next;

            Chunk(long base, int size) {
                this.base = base;
                this.tasks = new Object[size];
            }

            long end() {
                return base + tasks.length;
            }
        }

        private static final VarHandle STATE;
        private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(GrowLane.class, "state", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private static long seq(long state) {
            return state >>> MODE_BITS;
        }

        private static int mode(long state) {
            return (int) (state & MODE_MASK);
        }

        private static long state(long seq, int mode) {
            return seq << MODE_BITS | mode;
        }

        private volatile long state = state(0, IDLE);
        private Chunk producerChunk; // meant to change only with the state; without GROWING it lags it
        private Chunk chunk;         // owner's: the chunk holding taken + 1 (or ending at it)
        private long taken;          // owner's: the last seq taken

        GrowLane() {
            Chunk first = new Chunk(1, FIRST_CHUNK);
            chunk = first;
            producerChunk = first;
        }

        int offer(Runnable task) {
            Chunk grown = null;
            for (;;) {
                long s = state;
                int mode = mode(s);
                Chunk c = producerChunk;
                long next = seq(s) + 1;
                if (next < c.end()) {
                    if (STATE.compareAndSet(this, s, state(next, ACTIVE))) {
                        SLOT.setRelease(c.tasks, (int) (next - c.base), task);
                        return mode == IDLE ? ACTIVATED : ACCEPTED;
                    }
                    continue;
                }
                // Past c's end: the first slot of a new chunk, or so it seems with a c that lags the state.
                if (grown == null || grown.base != next) {
                    grown = new Chunk(next, Math.min(MAX_CHUNK, c.tasks.length * 2));
                }
                grown.tasks[0] = task;
                if (STATE.compareAndSet(this, s, state(next, ACTIVE))) { // BUG: the next claimer may read c now
                    producerChunk = grown;
                    c.next = grown;
                    return mode == IDLE ? ACTIVATED : ACCEPTED;
                }
                grown.tasks[0] = null;
            }
        }

        /** Runs the lane until it is empty and makes it idle, skipping the slots found lost (see the class comment). */
        void runBatch(BooleanSupplier offered) {
            Chunk c = chunk;
            long h = taken;
            for (;;) {
                // Read first: if every offer had returned, every slot and link they wrote is visible to what follows.
                boolean settled = offered.getAsBoolean();
                long i = h + 1;
                Object slot = null;
                if (i < c.end()) {
                    slot = SLOT.getAcquire(c.tasks, (int) (i - c.base));
                } else {
                    Chunk n = c.next;
                    if (n != null && n.base == i) {
                        c = n;
                        continue;
                    }
                    // Not linked yet, or linked to a chunk that starts past i: slot i is in no chunk we can reach.
                }
                if (slot == null) {
                    long s = state;
                    if (seq(s) == h) {
                        chunk = c;
                        taken = h;
                        if (STATE.compareAndSet(this, s, state(h, IDLE))) {
                            return;
                        }
                        continue;
                    }
                    if (!settled) {
                        Thread.onSpinWait(); // claimed, maybe not written or linked yet: its submitter is on its way
                        continue;
                    }
                    h = i; // every offer had returned: slot i's task is where this consumer never looks (lost)
                    continue;
                }
                c.tasks[(int) (i - c.base)] = TAKEN;
                ((Runnable) slot).run();
                h = i;
            }
        }
    }

    final GrowLane lane = new GrowLane();
    volatile boolean offered; // both of A's offers have returned (b's has when its actor plays the owner)
    int ran;
    int order;

    public BrokenSequentialLaneGrowStress() {
        for (int i = 1; i < GrowLane.FIRST_CHUNK; i++) {
            lane.offer(() -> ran++);
        }
    }

    private void track(int digit) {
        ran++;
        order = order * 10 + digit;
    }

    @Actor
    public void producer(III_Result r) {
        int a1 = lane.offer(() -> track(1));
        int a2 = lane.offer(() -> track(2));
        offered = true;
        r.r3 = a1 == GrowLane.ACCEPTED && a2 == GrowLane.ACCEPTED ? 0
                : a1 == GrowLane.ACTIVATED && a2 == GrowLane.ACCEPTED ? 1
                : a1 == GrowLane.ACCEPTED && a2 == GrowLane.ACTIVATED ? 2
                : 9;
    }

    @Actor
    public void producerThenOwner() {
        lane.offer(() -> track(3));
        lane.runBatch(() -> offered);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r3 == 1 || r.r3 == 2) {
            lane.runBatch(() -> true);
        }
        r.r1 = ran;
        r.r2 = order;
    }
}
