package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.ArrayList;
import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * {@link Shard}: {@code shutdownNow}'s stop racing the owner's claims. The shard holds two entries and is owned; the
 * owner claims and runs until it loses the shard or finds it empty; the stop CASes the word to STOPPED, closes the
 * tail and returns every entry from the word's index. Result: (entries run, entries returned): never one both run
 * and returned, never one lost.
 *
 * <p>Catches a stop that reads the word and takes it over with a plain store: the copy with that bug,
 * {@code broken.BrokenShardStopStress}, shows the forbidden "1, 2" and "2, 1".
 */
@JCStressTest
@Description("Shard: shutdownNow's stop racing the owner's claims")
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "stopped before the first claim")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "stopped between the claims")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "both claimed before the stop")
@Outcome(expect = FORBIDDEN, desc = "an entry run and returned, or lost")
@State
public class ShardStopStress {
    final Shard shard = new Shard(0);
    final Shard.Cursor owner = new Shard.Cursor();
    int ran;

    public ShardStopStress() {
        shard.offer("ctx", () -> ran++, 0);
        shard.offer("ctx", () -> ran++, 0);
        shard.acquire(owner);
    }

    @Actor
    public void owner() {
        LaneFixtures.workShard(shard, owner);
    }

    @Actor
    public void stopper(II_Result r) {
        List<Runnable> out = new ArrayList<>();
        r.r2 = shard.stop(out);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
