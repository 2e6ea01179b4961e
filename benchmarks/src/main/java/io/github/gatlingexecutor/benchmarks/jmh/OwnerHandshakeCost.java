package io.github.gatlingexecutor.benchmarks.jmh;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;

/**
 * What the owner of a shard pays per entry for the hand-shakes the shard engine could use (docs/next-engine.md, "What
 * wiring it needs"; the engine was removed, this measurement decided its claim), on a line no other thread writes, as
 * in the common case (thieves and stops are rare, producers never touch the owner's line). Each operation takes
 * {@value #ENTRIES} entries from a filled array, in order, and runs each (a tiny task that adds to a counter):
 * <ul>
 *   <li>{@code plain}: no hand-shake (the floor);</li>
 *   <li>{@code claimCas}: a CAS of the owner's word per entry (the shard engine's claim);</li>
 *   <li>{@code claimCasAndTaskCas}: that, plus "in the task of entry i" published with a release store before the
 *       task and taken back with a CAS after it (so a thief can tell an owner that is in its task for good);</li>
 *   <li>{@code takeHandshake}: today's take: a volatile store of {@code i | TAKING}, a volatile read of the word, a
 *       release store of {@code i} (one StoreLoad per entry, covering the claim and the records).</li>
 * </ul>
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.openjdk.jmh.Main OwnerHandshakeCost</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 3, jvmArgsAppend = "-Xmx1g")
public class OwnerHandshakeCost {
    static final int ENTRIES = 4096;

    private static final VarHandle WORD;
    private static final VarHandle IN_TASK;
    private static final VarHandle TAKE;
    private static final VarHandle STATE;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            WORD = l.findVarHandle(OwnerHandshakeCost.class, "word", long.class);
            IN_TASK = l.findVarHandle(OwnerHandshakeCost.class, "inTask", long.class);
            TAKE = l.findVarHandle(OwnerHandshakeCost.class, "take", long.class);
            STATE = l.findVarHandle(OwnerHandshakeCost.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Object[] slots = new Object[ENTRIES];
    private long word;
    private long inTask;
    private long take;
    private int state;
    long sum;

    private static final class Tiny implements Runnable {
        private final OwnerHandshakeCost owner;

        Tiny(OwnerHandshakeCost owner) {
            this.owner = owner;
        }

        @Override
        public void run() {
            owner.sum++;
        }
    }

    @Setup
    public void setUp() {
        for (int i = 0; i < ENTRIES; i++) {
            slots[i] = new Tiny(this);
        }
    }

    @Benchmark
    @OperationsPerInvocation(ENTRIES)
    public long plain() {
        for (int i = 0; i < ENTRIES; i++) {
            ((Runnable) SLOT.getAcquire(slots, i)).run();
        }
        return sum;
    }

    @Benchmark
    @OperationsPerInvocation(ENTRIES)
    public long claimCas() {
        long w = (long) WORD.getVolatile(this);
        for (int i = 0; i < ENTRIES; i++) {
            Runnable r = (Runnable) SLOT.getAcquire(slots, i);
            if (!WORD.compareAndSet(this, w, w + 1)) {
                throw new IllegalStateException();
            }
            w++;
            r.run();
        }
        return sum;
    }

    @Benchmark
    @OperationsPerInvocation(ENTRIES)
    public long claimCasAndTaskCas() {
        long w = (long) WORD.getVolatile(this);
        for (int i = 0; i < ENTRIES; i++) {
            Runnable r = (Runnable) SLOT.getAcquire(slots, i);
            if (!WORD.compareAndSet(this, w, w + 1)) {
                throw new IllegalStateException();
            }
            w++;
            IN_TASK.setRelease(this, w);
            r.run();
            if (!IN_TASK.compareAndSet(this, w, 0L)) {
                throw new IllegalStateException();
            }
        }
        return sum;
    }

    @Benchmark
    @OperationsPerInvocation(ENTRIES)
    public long takeHandshake() {
        long t = (long) TAKE.getVolatile(this) & ~1L;
        for (int i = 0; i < ENTRIES; i++) {
            Runnable r = (Runnable) SLOT.getAcquire(slots, i);
            TAKE.setVolatile(this, t | 1L);
            if ((int) STATE.getVolatile(this) != 0) {
                throw new IllegalStateException();
            }
            t += 2;
            TAKE.setRelease(this, t);
            r.run();
        }
        return sum;
    }
}
