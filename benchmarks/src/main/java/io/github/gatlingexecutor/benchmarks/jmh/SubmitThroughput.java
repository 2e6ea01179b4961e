package io.github.gatlingexecutor.benchmarks.jmh;

import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
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

import java.util.concurrent.TimeUnit;

/**
 * Submit-and-complete throughput of tiny ordered tasks: each invocation submits a batch of {@value #BATCH} tasks
 * over {@code contexts} keys and waits (parked, not spinning: the machine may have only two cores) until the last one
 * has run. Reported per task.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.openjdk.jmh.Main SubmitThroughput</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "-Xmx1g")
public class SubmitThroughput {
    static final int BATCH = 1024;

    @Param({"gatling", "guava", "bookkeeper", "netty", "jraft", "per-context", "tpe"})
    public String peer;

    @Param({"1", "1024"})
    public int contexts;

    private OrderedExecutorAdapter adapter;
    private final BatchCompletion completion = new BatchCompletion();
    private Runnable task;

    @Setup(Level.Trial)
    public void setUp() {
        adapter = Peer.byShortName(peer, Runtime.getRuntime().availableProcessors()).create(contexts);
        task = completion::finished;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        adapter.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long submitBatch() {
        long goal = completion.begin(BATCH);
        int mask = contexts - 1; // contexts is a power of two
        for (int i = 0; i < BATCH; i++) {
            adapter.execute(i & mask, task);
        }
        return completion.await(goal);
    }
}
