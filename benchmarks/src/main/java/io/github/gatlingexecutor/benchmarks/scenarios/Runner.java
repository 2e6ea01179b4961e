package io.github.gatlingexecutor.benchmarks.scenarios;

import io.github.gatlingexecutor.benchmarks.peers.Peer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Runs a scenario's peers interleaved: warm-up rounds first (not recorded), then measured rounds; in each round
 * every peer runs once, in an order shuffled anew each round (seeded by the scenario and the round, so a run can be
 * repeated), so no peer always runs right after the same one: a rotation of one fixed order, as this used to do,
 * gave each peer the same predecessor in every round (the executor per context's thousand exiting threads always
 * before BookKeeper, say).
 */
public final class Runner {
    private final long startNanos = System.nanoTime();
    private final double estimatedTotalSeconds;
    private double doneSeconds;

    public Runner(double estimatedTotalSeconds) {
        this.estimatedTotalSeconds = estimatedTotalSeconds;
    }

    public List<Summary> run(Scenario scenario) throws InterruptedException {
        List<Peer> peers = scenario.peers();
        Map<String, List<RunResult>> results = new LinkedHashMap<>();
        for (Peer p : peers) {
            results.put(p.name(), new ArrayList<>());
        }
        int rounds = scenario.warmups + scenario.repetitions;
        for (int round = 0; round < rounds; round++) {
            boolean warmup = round < scenario.warmups;
            progress(scenario, round, rounds, warmup);
            List<Peer> order = new ArrayList<>(peers);
            Collections.shuffle(order, new Random(scenario.id.hashCode() * 31L + round));
            for (Peer peer : order) {
                List<RunResult> list = results.get(peer.name());
                if (!list.isEmpty() && list.get(list.size() - 1).failure != null) {
                    continue; // a peer that failed once is reported FAILED; don't spend time on it again
                }
                // Start every run from a collected heap so one peer's garbage is not the next one's GC pause.
                System.gc();
                RunResult r;
                try {
                    r = scenario.runOnce(peer);
                } catch (RuntimeException | Error e) {
                    r = RunResult.failed(peer.name(), e.toString());
                }
                if (!warmup || r.failure != null) {
                    list.add(r);
                }
            }
            doneSeconds += peers.size() * (scenario.estimatedSecondsPerRun() + 0.15);
        }
        List<Summary> summaries = new ArrayList<>();
        for (Peer p : peers) {
            summaries.add(Summary.of(p.name(), p.ordered(), results.get(p.name())));
        }
        return summaries;
    }

    private void progress(Scenario scenario, int round, int rounds, boolean warmup) {
        double elapsed = (System.nanoTime() - startNanos) / 1e9;
        System.out.printf(Locale.ROOT, "  [%5.0fs / ~%.0fs] %s: %s round %d of %d%n", elapsed, estimatedTotalSeconds,
                scenario.id, warmup ? "warm-up" : "measured", warmup ? round + 1 : round - scenario.warmups + 1,
                warmup ? scenario.warmups : scenario.repetitions);
    }

    public double elapsedSeconds() {
        return (System.nanoTime() - startNanos) / 1e9;
    }
}
