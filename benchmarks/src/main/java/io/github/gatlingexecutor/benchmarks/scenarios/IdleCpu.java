package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.report.Table;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * CPU an executor burns while it has nothing to do: after a burst of work and a pause, measure over a quiet
 * interval (a) the CPU time of the peer's own threads (ThreadMXBean, exact, unaffected by the JVM's background
 * work) and (b) the whole process's CPU time minus the JVM's idle CPU measured with no executor.
 */
public final class IdleCpu {
    private IdleCpu() {
    }

    public static Table measure(Sizes sizes, Runner runner) throws InterruptedException {
        long intervalMillis = (long) (sizes.idleSeconds() * 1000);
        Table t = new Table("Idle CPU", "CPU over " + intervalMillis + " ms with the executor idle, after 20,000"
                + " tiny tasks over 1,024 contexts and a 300 ms pause.",
                List.of("peer", "own threads: CPU ms per s", "% of one core", "process minus JVM baseline: ms per s"));
        t.chartUnit = "CPU ms per idle second, own threads";
        System.out.printf("  [%5.0fs] idle CPU: JVM baseline%n", runner.elapsedSeconds());
        Cpu.usedHeapAfterGc(); // settle the heap first, so the baseline is not a GC
        Thread.sleep(300);
        double baseline = processMillisPerSecond(intervalMillis);
        for (Peer peer : Peer.filtered(Peer.orderedPeers(sizes.cores(), true))) {
            System.out.printf("  [%5.0fs] idle CPU: %s%n", runner.elapsedSeconds(), peer.name());
            OrderedExecutorAdapter adapter = peer.create(1024);
            try {
                AtomicLong done = new AtomicLong();
                for (int i = 0; i < 20_000; i++) {
                    adapter.execute(i & 1023, done::incrementAndGet);
                }
                while (done.get() < 20_000) {
                    Thread.sleep(1);
                }
                Thread.sleep(300);
                long own0 = adapter.threadCpuNanos();
                long cpu0 = Cpu.processNanos();
                long t0 = System.nanoTime();
                Thread.sleep(intervalMillis);
                long wall = System.nanoTime() - t0;
                double process = (Cpu.processNanos() - cpu0) / 1e6 / (wall / 1e9);
                double own = own0 < 0 ? Double.NaN : (adapter.threadCpuNanos() - own0) / 1e6 / (wall / 1e9);
                t.row(List.of(peer.name(), Table.num(own), Table.num(own / 10),
                        Table.num(Math.max(0, process - baseline))));
                t.chart("idle CPU", peer.name(), own);
            } finally {
                adapter.close();
            }
        }
        t.notes.add("JVM baseline (no executor): " + Table.num(baseline) + " ms per second. Process CPU time moves in"
                + " scheduler ticks (often 10 ms), so the last column is coarse; the own-threads column is exact.");
        return t;
    }

    private static double processMillisPerSecond(long intervalMillis) throws InterruptedException {
        long cpu0 = Cpu.processNanos();
        long t0 = System.nanoTime();
        Thread.sleep(intervalMillis);
        long cpu = Cpu.processNanos() - cpu0;
        long wall = System.nanoTime() - t0;
        return cpu / 1e6 / (wall / 1e9);
    }
}
