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
 * Deliberately broken copy of {@code ShardStealInTaskStress}: the thief takes the owner's word whenever it is owned,
 * without the owner's mark that it is in a task. It can then rob the owner between a claim and the end of that
 * entry's bookkeeping, and both count in the record at once: the forbidden "2, 1" shows up. Run with {@code -t broken}.
 */
@JCStressTest
@Outcome(id = "3, 0", expect = ACCEPTABLE, desc = "no steal")
@Outcome(id = "3, 1", expect = ACCEPTABLE, desc = "stolen; every claim counted once")
@Outcome(expect = FORBIDDEN, desc = "the owner's and the thief's bookkeeping overlapped")
@State
public class BrokenShardStealInTaskStress {
    final BrokenShard shard = new BrokenShard(false, false, false);
    final BrokenShard.Cursor owner = new BrokenShard.Cursor();
    int records;
    int stole;

    public BrokenShardStealInTaskStress() {
        for (int i = 0; i < 3; i++) {
            shard.offer(() -> { });
        }
        shard.acquire(owner);
    }

    @Actor
    public void owner() {
        work(owner);
    }

    @Actor
    public void thief() {
        BrokenShard.Cursor cur = new BrokenShard.Cursor();
        if (shard.steal(cur, (long) BrokenShard.WORD.getVolatile(shard))) { // BUG: no look at the owner's mark
            stole = 1;
            work(cur);
        }
    }

    private void work(BrokenShard.Cursor cur) {
        for (;;) {
            int r = shard.claim(cur);
            if (r == BrokenShard.CLAIMED) {
                int seen = records;
                records = seen + 1;
                shard.enterTask(cur);
                cur.task.run();
            } else if (r == BrokenShard.LOST || !shard.release(cur)) {
                return;
            }
        }
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = records;
        r.r2 = stole;
    }
}
