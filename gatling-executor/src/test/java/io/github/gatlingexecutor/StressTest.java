package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.gatlingexecutor.StressWorkload.Config;
import io.github.gatlingexecutor.StressWorkload.End;
import io.github.gatlingexecutor.StressWorkload.Outcome;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many producers, many contexts, sequential + coalescing + plain tasks, random failures and short blocking, with
 * {@code shutdown()} / {@code shutdownNow()} at random points and exact accounting afterwards (see
 * {@link StressWorkload} for every check). The default tests are short fixed-seed rounds; the {@code stress}-tagged
 * one draws random rounds for {@code -Dstress.minutes} (default 10) minutes:
 * {@code mvn -Pstress -pl gatling-executor verify -Dstress.minutes=10}. A failing round prints its seed; replay it
 * with {@code -Dstress.seed=<seed>} and the default tests' {@link #replaySeed()}.
 */
class StressTest {

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void mixedLoadRunsEverythingInOrder() throws Exception {
        Config c = new Config();
        c.seed = 1;
        c.producers = 3;
        c.contexts = 16;
        c.tasksPerProducer = 150_000;
        c.end = End.NONE;
        report("mixed", new StressWorkload(c).run());
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shutdownAtRandomPointsLosesNothing() throws Exception {
        long sharedLasts = 0;
        for (long seed = 100; seed < 124; seed++) {
            Config c = new Config();
            c.seed = seed;
            c.tasksPerProducer = 8_000;
            c.contexts = 8 + (int) seed % 8;
            c.end = End.SHUTDOWN;
            c.endAt = ((seed - 99) % 7) / 7.0 + 0.05;
            Outcome o = new StressWorkload(c).run();
            report("shutdown", o);
            sharedLasts += o.sharedLastChecked;
        }
        assertTrue(sharedLasts > 0, "no round could name a shared coalescing context's last task: not checked");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shutdownNowAtRandomPointsReturnsExactlyTheUnstarted() throws Exception {
        long sharedLasts = 0;
        for (long seed = 200; seed < 230; seed++) {
            Config c = new Config();
            c.seed = seed;
            c.tasksPerProducer = 8_000;
            c.contexts = 4 + (int) seed % 12;
            c.pBlock = 0.01;       // more tasks running (and interrupted) when shutdownNow comes
            c.end = End.SHUTDOWN_NOW;
            c.endAt = ((seed - 199) % 9) / 9.0 + 0.03;
            Outcome o = new StressWorkload(c).run();
            report("shutdownNow", o);
            sharedLasts += o.sharedLastChecked;
        }
        assertTrue(sharedLasts > 0, "no round could name a shared coalescing context's last task: not checked");
    }

    /** Delayed and periodic tasks of all three kinds, cancellations racing their runs, then shutdown(). */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void scheduledTasksAcrossShutdown() throws Exception {
        for (long seed = 300; seed < 316; seed++) {
            scheduledRound("scheduled+shutdown", seed, seed % 2 == 0 ? End.SHUTDOWN : End.NONE);
        }
    }

    /** The same, ended by shutdownNow(): every delayed and periodic task waiting for a run is returned, none lost. */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void scheduledTasksAcrossShutdownNow() throws Exception {
        for (long seed = 400; seed < 416; seed++) {
            scheduledRound("scheduled+shutdownNow", seed, End.SHUTDOWN_NOW);
        }
    }

    private static void scheduledRound(String what, long seed, End end) throws InterruptedException {
        Config c = new Config();
        c.seed = seed;
        c.tasksPerProducer = 4_000;
        c.contexts = 4 + (int) seed % 8;
        c.scheduled = 150;
        c.pPeriodic = 0.4;
        c.end = end;
        c.endAt = (seed % 5) / 5.0 + 0.1;
        report(what, new StressWorkload(c).run());
    }

    /**
     * Bounded executors under load: each round limits every lane, and every other one the executor too; the policy
     * alternates between reject and block (with waits short enough to time out). Refused submissions must never
     * run and must equal {@code statistics().rejected()}; everything accepted is accounted for as in every round.
     */
    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void boundedExecutorsLoseNothing() throws Exception {
        for (long seed = 1; seed <= 12; seed++) {
            Config c = Config.random(seed * 7_919, 10_000);
            c.maxQueuedPerContext = 1 + (int) (seed * 5 % 40);
            c.maxQueued = seed % 2 == 0 ? 8 + (int) (seed * 13 % 200) : 0;
            c.maxWait = seed % 3 == 0 ? null : Duration.ofMillis(1 + seed * 15);
            report("bounded", new StressWorkload(c).run());
        }
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void randomConfigurations() throws Exception {
        for (long seed = 1_000; seed < 1_040; seed++) {
            report("random", new StressWorkload(Config.random(seed, 10_000)).run());
        }
    }

    /** Replays one round of the long test: {@code -Dstress.seed=<seed> [-Dstress.tasks=50000]}. */
    @Test
    void replaySeed() throws Exception {
        String seed = System.getProperty("stress.seed");
        assumeTrue(seed != null, "no -Dstress.seed given: nothing to replay");
        int tasks = Integer.getInteger("stress.tasks", 50_000);
        report("replay", new StressWorkload(Config.random(Long.parseLong(seed), tasks)).run());
    }

    /** Random rounds for {@code stress.minutes} minutes (default 10). */
    @Test
    @Tag("stress")
    void longRandomRounds() throws Exception {
        double minutes = Double.parseDouble(System.getProperty("stress.minutes", "10"));
        int tasks = Integer.getInteger("stress.tasks", 50_000);
        long deadline = System.nanoTime() + (long) (minutes * 60e9);
        long base = Long.getLong("stress.seedBase", System.nanoTime());
        long rounds = 0, accepted = 0, ran = 0, returned = 0, coalesced = 0, rejected = 0, thrown = 0, lasts = 0;
        long[] ends = new long[3];
        System.out.println("[stress] long run: " + minutes + " min, seed base " + base);
        while (System.nanoTime() < deadline) {
            long seed = base + rounds;
            Config c = Config.random(seed, tasks);
            Outcome o = new StressWorkload(c).run();   // throws with the seed on any violation
            rounds++;
            ends[c.end.ordinal()]++;
            accepted += o.accepted;
            ran += o.ran;
            returned += o.returned;
            coalesced += o.coalesced;
            rejected += o.rejected;
            thrown += o.thrown;
            lasts += o.sharedLastChecked;
            if (rounds % 50 == 0) {
                System.out.println("[stress] " + rounds + " rounds, " + accepted + " tasks accepted so far");
            }
        }
        System.out.println("[stress] done: rounds=" + rounds + " (none=" + ends[0] + ", shutdown=" + ends[1]
                + ", shutdownNow=" + ends[2] + ") accepted=" + accepted + " ran=" + ran + " returned=" + returned
                + " coalesced=" + coalesced + " rejected=" + rejected + " thrown=" + thrown
                + " sharedCoalescingLastsChecked=" + lasts);
        assertTrue(rounds > 0);
    }

    private static void report(String what, Outcome o) {
        System.out.println("[stress] " + what + ": " + o);
    }
}
