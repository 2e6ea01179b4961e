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
 * {@link Shard}: a submit racing the owner that finds the shard empty and gives it up ({@link Shard#release}: word
 * FREE, {@code scheduled} cleared, {@code tail} read again). The shard starts owned with one entry; the owner claims
 * until empty and releases, and goes on if the release took the shard back. The submit either lands before the
 * owner's look (the owner runs it), or after the clearing (it schedules the shard), or in between (the owner's second
 * look sees it and takes the shard back). A submit that schedules the shard takes it at once, as the worker that
 * polls it would: {@link Shard#acquire} throws if the shard is still owned (two owners at once). Result: (entries
 * run, the offer's result: 0 queued, 1 schedule, whether the owner took the shard back).
 *
 * <p>A schedule after a take-back is a spurious one, not a second owner: the submit reads the flag only after its
 * store, and by then the owner may have run the entry and given the shard up again; its next owner finds it FREE and
 * empty.
 *
 * <p>Catches a release that clears the flag without reading {@code tail} again: the copy with that bug,
 * {@code broken.BrokenShardReleaseStress}, shows the forbidden "1, 0, 0".
 */
@JCStressTest
@Description("Shard: a submit racing the owner's release")
@Outcome(id = "2, 0, 0", expect = ACCEPTABLE, desc = "the entry landed before the owner looked")
@Outcome(id = "2, 0, 1", expect = ACCEPTABLE, desc = "the entry landed between the clearing and the second look")
@Outcome(id = "2, 1, 0", expect = ACCEPTABLE, desc = "the owner gave up first; the submit scheduled the shard")
@Outcome(id = "1, 0, 0", expect = FORBIDDEN, desc = "LOST: accepted into a shard nobody schedules")
@Outcome(id = "2, 1, 1", expect = ACCEPTABLE, desc = "the owner took the shard back, ran the entry and gave the shard "
        + "up again before the submit read the flag: the submit queues an empty FREE shard, which its next owner "
        + "finds empty")
@Outcome(expect = FORBIDDEN, desc = "anything else")
@State
public class ShardReleaseStress {
    final Shard shard = new Shard(0);
    final Shard.Cursor owner = new Shard.Cursor();
    int ownerRan;
    int nextOwnerRan;
    int tookBack;

    public ShardReleaseStress() {
        if (shard.offer("ctx", () -> { }, 0) != Shard.SCHEDULE || !shard.acquire(owner)) {
            throw new IllegalStateException("a new shard is scheduled by its first offer");
        }
    }

    @Actor
    public void owner() {
        ownerRan = LaneFixtures.workShard(shard, owner, () -> tookBack = 1);
    }

    /** Submits; a submit that schedules the shard plays its next owner at once, as a worker polling it would. */
    @Actor
    public void producer(III_Result r) {
        r.r2 = shard.offer("ctx", () -> { }, 0);
        if (r.r2 == Shard.SCHEDULE) {
            Shard.Cursor next = new Shard.Cursor();
            if (shard.acquire(next)) { // throws if the owner still owned it: two owners at once
                nextOwnerRan = LaneFixtures.workShard(shard, next);
            }
        }
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r1 = ownerRan + nextOwnerRan;
        r.r3 = tookBack;
    }
}
