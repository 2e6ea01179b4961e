package io.github.gatlingexecutor.benchmarks.jmh;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.SequentialRunnable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Tiny sequential tasks given to {@code execute} as {@link SequentialRunnable}s, against the same tasks given to lane
 * handles, with one task class or several. Each invocation submits {@value #BATCH} tasks over {@code contexts} keys and
 * waits (parked) until the last has run; reported per task.
 *
 * <p>What it is for: on JDK 17 to 22 a class remembers in one field the last interface a type check against it found
 * (JDK-8180450, fixed in JDK 23). Once a check site has seen several classes, its compiled check reads that field and
 * writes it on a miss, so a submitter that asks "is it a {@code SequentialRunnable}?" and a worker that casts to
 * {@code Runnable} could move the field's line between their cores at every task. With one class per site the checks
 * compare the class itself and never touch the field. On the 2-vCPU host of docs/hand-off-experiments.md (forty-fifth
 * set) the several-class {@code execute} path read the same with and without a worker that asks the submitter's
 * question; a host with more cores, or sockets, may differ, and this benchmark is the way to see.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.openjdk.jmh.Main ExecuteByType</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 6, time = 1)
@Fork(value = 2, jvmArgsAppend = "-Xmx1g")
public class ExecuteByType {
    static final int BATCH = 65_536;

    /** {@code execute}: {@code executor.execute(task)}; {@code lane}: {@code executor.sequential(key).execute(task)}. */
    @Param({"execute", "lane"})
    public String path;

    /** How many task classes the submits rotate through. */
    @Param({"1", "4"})
    public int classes;

    @Param({"1024"})
    public int contexts;

    private GatlingExecutor executor;
    private Executor[] lanes;
    private Integer[] keys;
    private final BatchCompletion completion = new BatchCompletion();

    @Setup(Level.Trial)
    public void setUp() {
        executor = GatlingExecutor.builder().name("execute-by-type")
                .coreThreads(Runtime.getRuntime().availableProcessors()).build();
        keys = new Integer[contexts];
        lanes = new Executor[contexts];
        for (int i = 0; i < contexts; i++) {
            keys[i] = i;
            lanes[i] = executor.sequential(keys[i]);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        executor.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long submitBatch() {
        long goal = completion.begin(BATCH);
        int mask = contexts - 1; // contexts is a power of two
        boolean viaLanes = path.equals("lane");
        for (int i = 0; i < BATCH; i++) {
            int key = i & mask;
            Task task = newTask(classes == 1 ? 0 : i % classes, keys[key]);
            if (viaLanes) {
                lanes[key].execute(task);
            } else {
                executor.execute(task);
            }
        }
        return completion.await(goal);
    }

    private Task newTask(int kind, Integer context) {
        switch (kind) {
            case 0: return new Task0(completion, context);
            case 1: return new Task1(completion, context);
            case 2: return new Task2(completion, context);
            default: return new Task3(completion, context);
        }
    }

    /** The task classes differ only in name: what the type checks see. */
    abstract static class Task implements SequentialRunnable {
        private final BatchCompletion completion;
        private final Object context;

        Task(BatchCompletion completion, Object context) {
            this.completion = completion;
            this.context = context;
        }

        @Override
        public final Object context() {
            return context;
        }

        @Override
        public final void run() {
            completion.finished();
        }
    }

    static final class Task0 extends Task {
        Task0(BatchCompletion completion, Object context) {
            super(completion, context);
        }
    }

    static final class Task1 extends Task {
        Task1(BatchCompletion completion, Object context) {
            super(completion, context);
        }
    }

    static final class Task2 extends Task {
        Task2(BatchCompletion completion, Object context) {
            super(completion, context);
        }
    }

    static final class Task3 extends Task {
        Task3(BatchCompletion completion, Object context) {
            super(completion, context);
        }
    }
}
