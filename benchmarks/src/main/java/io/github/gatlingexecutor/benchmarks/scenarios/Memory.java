package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.peers.OrderedExecutorAdapter;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.report.Table;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Memory per context: (a) heap per idle context an application holds on to (each used once, now idle), measured
 * as the heap delta after full collections; (b) the heap left behind after a million distinct contexts have each
 * been used once and gone away.
 */
public final class Memory {
    private Memory() {
    }

    private static boolean threadPerContext(Peer p) {
        return p.name().contains("per context");
    }

    public static Table idleContexts(Sizes sizes, Runner runner) throws InterruptedException {
        Table t = new Table("7a. Memory: heap per idle context",
                "Each peer gets N contexts, runs one task in each, and the harness keeps the peer's per-key object"
                        + " (GatlingExecutor: the lane handle). Heap delta after full GCs / N. Native thread stacks"
                        + " are not heap and not included: a platform thread also reserves its stack (1 MB"
                        + " default, tens of KB touched).",
                List.of("peer", "contexts (N)", "bytes/context", "threads alive", "live contexts after"));
        t.chartUnit = "bytes per idle context";
        for (Peer peer : Peer.filtered(Peer.orderedPeers(sizes.cores(), false))) {
            int n = threadPerContext(peer) ? sizes.memoryThreadContexts() : sizes.memoryContexts();
            System.out.printf("  [%5.0fs] memory: %s, %d idle contexts%n", runner.elapsedSeconds(), peer.name(), n);
            OrderedExecutorAdapter adapter = peer.create(n);
            try {
                AtomicLong done = new AtomicLong();
                // Start the pool's own threads first, so the delta is per-context state only.
                adapter.execute(0, done::incrementAndGet);
                waitFor(done, 1);
                long before = Cpu.usedHeapAfterGc();
                for (int k = 1; k <= n; k++) {
                    adapter.execute(k % n == 0 ? n - 1 : k, done::incrementAndGet);
                }
                if (!waitFor(done, n + 1)) {
                    t.row(List.of(peer.name(), String.valueOf(n), "FAILED (tasks did not finish)", "", ""));
                    continue;
                }
                Thread.sleep(50); // lanes are released within a few milliseconds of going idle
                long after = Cpu.usedHeapAfterGc();
                double perContext = (after - before) / (double) n;
                String live = adapter instanceof io.github.gatlingexecutor.benchmarks.peers.GatlingAdapter g
                        ? String.valueOf(g.statistics().liveContexts()) : "n/a";
                t.row(List.of(peer.name(), String.valueOf(n), Table.num(perContext),
                        String.valueOf(adapter.peakThreads()), live));
                t.chart("heap per idle context", peer.name(), Math.max(0, perContext));
            } finally {
                adapter.close();
            }
        }
        return t;
    }

    private static boolean waitFor(AtomicLong counter, long target) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (counter.get() < target) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }

    /** At most this many contexts in flight, so contexts really come and go rather than pile up. */
    private static final int IN_FLIGHT = 10_000;
    /** Netty keeps ~5 KB per lane: a million would not fit a default heap. */
    private static final int MAP_PEER_LIMIT = 200_000;

    public static Table churn(Sizes sizes, Runner runner) throws InterruptedException {
        int n = sizes.churnContexts();
        Table t = new Table("7b. Memory: " + n + " distinct contexts come and go",
                "Each context gets one task (at most " + IN_FLIGHT + " in flight). Retained = heap after full GCs"
                        + " minus heap before. Guava and Netty lanes must be kept per key by the application (here a"
                        + " map that never evicts: their APIs do not say when a lane is idle, so it cannot be evicted"
                        + " safely); BookKeeper and SOFAJRaft hash keys onto fixed threads and keep nothing per key.",
                List.of("peer", "time ms", "contexts/s", "retained MB", "bytes/context", "live contexts after"));
        t.chartUnit = "MB retained";

        // GatlingExecutor, straight through its API: a new context object every time, no handle kept.
        System.out.printf("  [%5.0fs] memory: GatlingExecutor, %d contexts come and go%n", runner.elapsedSeconds(), n);
        try (GatlingExecutor executor = GatlingExecutor.builder().name("churn").coreThreads(sizes.cores()).build()) {
            AtomicLong done = new AtomicLong();
            executor.sequential("warm-up").execute(done::incrementAndGet);
            waitFor(done, 1);
            long before = Cpu.usedHeapAfterGc();
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                while (i - done.get() > IN_FLIGHT) {
                    Thread.yield();
                }
                Executor lane = executor.sequential(new Object());
                lane.execute(done::incrementAndGet);
            }
            boolean finished = waitFor(done, n + 1);
            long nanos = System.nanoTime() - t0;
            long live = -1;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() < deadline && (live = executor.statistics().liveContexts()) != 0) {
                Thread.sleep(1);
            }
            long after = Cpu.usedHeapAfterGc();
            churnRow(t, "GatlingExecutor", n, finished ? nanos : -1, after - before, String.valueOf(live));
        }

        for (Peer peer : Peer.filtered(Peer.orderedPeers(sizes.cores(), false))) {
            if (peer.name().equals(Peer.GATLING) || threadPerContext(peer)) {
                continue;
            }
            System.out.printf("  [%5.0fs] memory: %s, contexts come and go%n", runner.elapsedSeconds(),
                    peer.name());
            // Peers that keep a lane per key in a map retain it for good: cap their run so the heap survives.
            int count = peer.name().startsWith("Netty") || peer.name().startsWith("Guava")
                    ? Math.min(n, MAP_PEER_LIMIT) : n;
            OrderedExecutorAdapter adapter = peer.create(1); // capacity 1: every key goes to the per-key map
            try {
                AtomicLong done = new AtomicLong();
                adapter.execute(0, done::incrementAndGet);
                waitFor(done, 1);
                long before = Cpu.usedHeapAfterGc();
                long t0 = System.nanoTime();
                for (int i = 1; i <= count; i++) {
                    while (i - done.get() > IN_FLIGHT) {
                        Thread.yield();
                    }
                    adapter.execute(i, done::incrementAndGet);
                }
                boolean finished = waitFor(done, count + 1);
                long nanos = System.nanoTime() - t0;
                long after = Cpu.usedHeapAfterGc();
                churnRow(t, peer.name() + (count < n ? " (" + count + " contexts)" : ""), count,
                        finished ? nanos : -1, after - before, "n/a");
            } finally {
                adapter.close();
            }
        }
        t.notes.add("executor per context and virtual thread per context are left out: a million executors"
                + " (threads) is not a workload they can run.");
        return t;
    }

    private static void churnRow(Table t, String peer, int n, long nanos, long retained, String live) {
        double mb = retained / 1e6;
        t.row(List.of(peer, nanos < 0 ? "FAILED" : Table.num(nanos / 1e6),
                nanos <= 0 ? "-" : Table.num(n / (nanos / 1e9)), Table.num(mb), Table.num(retained / (double) n),
                live));
        t.chart("heap retained", peer, Math.max(0, mb));
    }
}
