package io.github.gatlingexecutor.kafka;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The commit's in-flight list behind a record that stays incomplete, without a broker or other threads. */
class PartitionStateTest {

    private static final int COMPACT_MIN = 16;
    private static final VarHandle IN_FLIGHT_HEAD;

    static {
        try {
            IN_FLIGHT_HEAD = MethodHandles.privateLookupIn(PartitionState.class, MethodHandles.lookup())
                    .findVarHandle(PartitionState.class, "inFlightHead", Work.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Test
    void memoryBehindARecordThatStaysIncompleteFollowsThePendingRecordsNotTheCompletedOnes() {
        PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), COMPACT_MIN);
        Work<String, String> stuck = track(ps, 0);
        int most = 0;
        for (int offset = 1; offset <= 10_000; offset++) {
            Work<String, String> w = track(ps, offset);
            if (offset % 100 != 0) {
                w.done = true; // every hundredth stays pending, the rest completes behind the stuck record
            }
            if (offset % 7 == 0) {
                assertEquals(0, ps.advance(), "the commit passed the incomplete record at offset 0");
                most = Math.max(most, linked(ps));
            }
        }
        // At most the 101 pending records kept by the last compaction, what completed since (the next one comes
        // after twice as many) and the head: about 300, where without compaction all 10,001 would stay.
        assertTrue(most <= 320, "up to " + most + " entries stayed linked");
        stuck.done = true;
        assertEquals(100, ps.advance(), "the commit after the stuck record completes: up to the first pending one");
    }

    @Test
    void theCommitDoesNotGoBackOnceItPassedAnAcknowledgedUnreadableRecord() {
        PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), COMPACT_MIN);
        for (int offset = 0; offset < 50; offset++) {
            track(ps, offset).done = true;
        }
        // Offset 50 cannot be deserialized; its failure handler returned, so the commit may pass it (as
        // KafkaProcessor#acknowledged moves nextOffset), and was sent as 51.
        ps.nextOffset = 51;
        assertEquals(51, ps.advance());
        // The next poll hands 51 to 60 to the router, which has not run yet: it is still done up to 50. The commit
        // must stay at 51 (a commitSync on revocation or close sent 50, and the next owner handled 50 again).
        ps.dispatched += 10;
        ps.sentUpTo = 61;
        ps.nextOffset = 61;
        assertEquals(51, ps.advance(), "the commit went back behind the acknowledged record");
        for (int offset = 51; offset <= 60; offset++) {
            track(ps, offset).done = offset != 55;
        }
        assertEquals(55, ps.advance(), "once routed, up to the first pending record");
    }

    private static Work<String, String> track(PartitionState ps, long offset) {
        Work<String, String> w = new Work<>(ps, null);
        w.offset = offset;
        w.seq = offset;
        ps.track(w);
        ps.dispatched = offset + 1;
        ps.sentUpTo = offset + 1;
        ps.nextOffset = offset + 1;
        ps.routed(offset + 1, offset + 1);
        return w;
    }

    /** Entries linked in the in-flight list, its stub or last-done head included. */
    private static int linked(PartitionState ps) {
        int n = 0;
        for (Work<?, ?> w = (Work<?, ?>) IN_FLIGHT_HEAD.get(ps); w != null; w = w.nextInFlightAcquire()) {
            n++;
        }
        return n;
    }
}
