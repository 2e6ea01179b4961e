package io.github.gatlingexecutor;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * {@link Shard}: a thief taking the shard from its owner mid-claim. The shard holds three entries and is owned; the
 * owner claims and runs until it loses the shard or finds it empty; the thief reads the word, steals with it if the
 * shard is owned, and claims the rest. Result: (entries the owner ran, entries the thief ran, the index the thief
 * stole at, or -1): a thief that stole at index k runs every entry from k on, and the owner none of them.
 *
 * <p>Catches a steal that does not move the epoch (the thief keeps the owner's word): the copy with that bug,
 * {@code broken.BrokenShardStealStress}, shows the owner claiming on after the steal ("3, 0, 1" and the like).
 */
@JCStressTest
@Description("Shard: a thief taking the shard from its owner mid-claim")
@Outcome(id = "3, 0, -1", expect = ACCEPTABLE, desc = "no steal (the word moved, or the shard was given up)")
@Outcome(id = "0, 3, 0", expect = ACCEPTABLE, desc = "stolen before the owner's first claim")
@Outcome(id = "1, 2, 1", expect = ACCEPTABLE, desc = "stolen after one claim")
@Outcome(id = "2, 1, 2", expect = ACCEPTABLE, desc = "stolen after two claims")
@Outcome(id = "3, 0, 3", expect = ACCEPTABLE, desc = "stolen after the last claim, before the owner gave up")
@Outcome(expect = FORBIDDEN, desc = "the owner claimed after the steal, or an entry ran twice or never")
@State
public class ShardStealStress {
    final Shard shard = new Shard(0);
    final Shard.Cursor owner = new Shard.Cursor();
    int ownerRan;
    int thiefRan;
    int stoleAt = -1;

    public ShardStealStress() {
        for (int i = 0; i < 3; i++) {
            shard.offer("ctx", () -> { }, 0);
        }
        shard.acquire(owner);
    }

    @Actor
    public void owner() {
        ownerRan = LaneFixtures.workShard(shard, owner);
    }

    @Actor
    public void thief() {
        Shard.Cursor cur = new Shard.Cursor();
        long w = shard.wordVolatile();
        if (shard.steal(cur, w)) {
            stoleAt = (int) Shard.indexBits(w);
            thiefRan = LaneFixtures.workShard(shard, cur);
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r1 = ownerRan;
        r.r2 = thiefRan;
        r.r3 = stoleAt;
    }
}
