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
 * Deliberately broken copy of {@code ShardReleaseStress}: the owner's release clears {@code scheduled} and leaves,
 * without reading {@code tail} again. A submit that lands after the owner's empty look but before the clearing finds
 * the flag still set and does not schedule: the forbidden "1, 0, 0" shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "2, 0, 0", expect = ACCEPTABLE, desc = "the entry landed before the owner looked")
@Outcome(id = "2, 0, 1", expect = ACCEPTABLE, desc = "the entry landed between the clearing and the second look")
@Outcome(id = "2, 1, 0", expect = ACCEPTABLE, desc = "the owner gave up first; the submit scheduled the shard")
@Outcome(id = "1, 0, 0", expect = FORBIDDEN, desc = "LOST: accepted into a shard nobody schedules")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class BrokenShardReleaseStress {
    final BrokenShard shard = new BrokenShard(true, false, false);
    final BrokenShard.Cursor owner = new BrokenShard.Cursor();
    int ran;
    int tookBack;

    public BrokenShardReleaseStress() {
        shard.offer(() -> ran++);
        shard.acquire(owner);
    }

    @Actor
    public void owner() {
        drain(owner);
    }

    private void drain(BrokenShard.Cursor cur) {
        for (;;) {
            int r = shard.claim(cur);
            if (r == BrokenShard.CLAIMED) {
                cur.task.run();
            } else if (r == BrokenShard.LOST || !shard.release(cur)) {
                return;
            } else if (cur == owner) {
                tookBack = 1;
            }
        }
    }

    @Actor
    public void producer(III_Result r) {
        r.r2 = shard.offer(() -> ran++);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        if (r.r2 == BrokenShard.SCHEDULE) {
            BrokenShard.Cursor next = new BrokenShard.Cursor();
            if (shard.acquire(next)) {
                drain(next);
            }
        }
        r.r1 = ran;
        r.r3 = tookBack;
    }
}
