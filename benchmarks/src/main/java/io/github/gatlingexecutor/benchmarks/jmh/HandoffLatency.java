package io.github.gatlingexecutor.benchmarks.jmh;

import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Round trip through an idle executor: submit one task to a context, park until it has run. Dominated by waking a
 * parked worker, the cost CASSANDRA-16499 found single-threaded writers paying.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.openjdk.jmh.Main HandoffLatency</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "-Xmx1g")
public class HandoffLatency {

    @Param({"gatling", "guava", "bookkeeper", "netty", "jraft", "per-context", "tpe"})
    public String peer;

    private OrderedExecutorAdapter adapter;
    private volatile Thread waiter;
    private volatile long ran;
    private long calls;
    private Runnable task;

    @Setup(Level.Trial)
    public void setUp() {
        adapter = Peer.byShortName(peer, Runtime.getRuntime().availableProcessors()).create(1);
        task = () -> {
            ran++; // one context: tasks never overlap, and the submitter reads it only after it changed
            LockSupport.unpark(waiter);
        };
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        adapter.close();
    }

    @Benchmark
    public long roundTrip() {
        waiter = Thread.currentThread();
        long goal = ++calls;
        adapter.execute(0, task);
        while (ran < goal) {
            LockSupport.park(this);
        }
        return goal;
    }
}
