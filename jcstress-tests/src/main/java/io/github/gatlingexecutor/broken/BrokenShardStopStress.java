package io.github.gatlingexecutor.broken;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Deliberately broken copy of {@code ShardStopStress}: the stop reads the word and stores it back STOPPED, instead of
 * one CAS. A claim between the read and the store still wins, and the stop returns from the index it read: an entry
 * run and returned ("1, 2" or "2, 1"). Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "stopped before the first claim")
@Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "stopped between the claims")
@Outcome(id = "2, 0", expect = ACCEPTABLE, desc = "both claimed before the stop")
@Outcome(expect = FORBIDDEN, desc = "an entry run and returned, or lost")
@State
public class BrokenShardStopStress {
    final BrokenShard shard = new BrokenShard(false, true, false);
    final BrokenShard.Cursor owner = new BrokenShard.Cursor();
    int ran;

    public BrokenShardStopStress() {
        shard.offer(() -> ran++);
        shard.offer(() -> ran++);
        shard.acquire(owner);
    }

    @Actor
    public void owner() {
        for (;;) {
            int r = shard.claim(owner);
            if (r == BrokenShard.CLAIMED) {
                owner.task.run();
            } else if (r == BrokenShard.LOST || !shard.release(owner)) {
                return;
            }
        }
    }

    @Actor
    public void stopper(II_Result r) {
        r.r2 = shard.stop();
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = ran;
    }
}
