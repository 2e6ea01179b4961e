package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * Deliberately broken copy of {@code ShardStealStress}: the thief takes the owner's word as it is, without moving the
 * epoch. The owner's next claim then still succeeds when it comes first, and it runs on in a shard that was stolen
 * (two owners at once): the forbidden "3, 0, 1" and the like show up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "3, 0, -1", expect = ACCEPTABLE, desc = "no steal (the word moved, or the shard was given up)")
@Outcome(id = "0, 3, 0", expect = ACCEPTABLE, desc = "stolen before the owner's first claim")
@Outcome(id = "1, 2, 1", expect = ACCEPTABLE, desc = "stolen after one claim")
@Outcome(id = "2, 1, 2", expect = ACCEPTABLE, desc = "stolen after two claims")
@Outcome(id = "3, 0, 3", expect = ACCEPTABLE, desc = "stolen after the last claim, before the owner gave up")
@Outcome(expect = FORBIDDEN, desc = "the owner claimed after the steal, or an entry ran twice or never")
@State
public class BrokenShardStealStress {
    final BrokenShard shard = new BrokenShard(false, false, true);
    final BrokenShard.Cursor owner = new BrokenShard.Cursor();
    int ownerRan;
    int thiefRan;
    int stoleAt = -1;

    public BrokenShardStealStress() {
        for (int i = 0; i < 3; i++) {
            shard.offer(() -> { });
        }
        shard.acquire(owner);
    }

    @Actor
    public void owner() {
        ownerRan = work(owner);
    }

    @Actor
    public void thief() {
        BrokenShard.Cursor cur = new BrokenShard.Cursor();
        long w = (long) BrokenShard.WORD.getVolatile(shard);
        if (shard.steal(cur, w)) {
            stoleAt = (int) (w >>> 16);
            thiefRan = work(cur);
        }
    }

    private int work(BrokenShard.Cursor cur) {
        int ran = 0;
        for (;;) {
            int r = shard.claim(cur);
            if (r == BrokenShard.CLAIMED) {
                cur.task.run();
                ran++;
            } else if (r == BrokenShard.LOST || !shard.release(cur)) {
                return ran;
            }
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r1 = ownerRan;
        r.r2 = thiefRan;
        r.r3 = stoleAt;
    }
}
