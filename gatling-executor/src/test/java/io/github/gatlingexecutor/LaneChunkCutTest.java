package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The chunks a lane's owner has passed are cut off, linked to themselves (see {@code SequentialLane#head}), so a
 * passed chunk promoted to the old generation holds no chain of younger chunks and tasks through young collections;
 * and the chunks not yet passed stay linked. One thread plays submitter and owner: the structure after each batch is
 * deterministic. The races with readers that start from a chunk being cut are model-checked in
 * {@link LincheckLaneTest#statisticsVersusOwnerCuttingAChunk} and {@code shutdownNowVersusOwnerTakeAcrossAChunk}.
 */
class LaneChunkCutTest {

    /** 4 + 8 + 16 + 32 + 64 + 64 slots: six chunks, the last one part full. */
    private static final int TASKS = 4 + 8 + 16 + 32 + 64 + 40;

    private final Engine engine = LincheckLaneTest.engine();
    private final Worker worker = LincheckLaneTest.worker(engine, new Thread(() -> { }));

    private static SequentialLane.Chunk consumerChunk(SequentialLane lane) {
        try {
            Field f = SequentialLane.class.getDeclaredField("chunk");
            f.setAccessible(true);
            return (SequentialLane.Chunk) f.get(lane);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /** The chain as linked before anything ran. */
    private static List<SequentialLane.Chunk> chain(SequentialLane.Chunk first) {
        List<SequentialLane.Chunk> chain = new ArrayList<>();
        for (SequentialLane.Chunk c = first; c != null; c = c.next) {
            chain.add(c);
        }
        return chain;
    }

    @Test
    void everyPassedChunkIsCutAndTheRestStayLinked() {
        engine.readyQueue.offerTask(new PlainTask(() -> { }, 0)); // other work waits: a full batch ends with MORE
        SequentialLane lane = new SequentialLane(engine, "ctx");
        List<Integer> ran = new ArrayList<>();
        for (int i = 0; i < TASKS; i++) {
            int n = i;
            lane.offer(() -> ran.add(n), 0);
        }
        List<SequentialLane.Chunk> chain = chain(consumerChunk(lane));
        assertEquals(6, chain.size());

        int batches = 0;
        while (LincheckLaneTest.stillOwned(lane.runBatch(worker, 20)) && ran.size() < TASKS) {
            batches++;
            SequentialLane.Chunk at = consumerChunk(lane);
            for (int k = 0; k < chain.size(); k++) {
                SequentialLane.Chunk c = chain.get(k);
                if (c.base < at.base) {
                    assertTrue(c.passed(), "chunk " + k + " is before the owner's, after batch " + batches);
                } else if (k + 1 < chain.size()) {
                    assertSame(chain.get(k + 1), c.next, "chunk " + k + " is not passed, after batch " + batches);
                }
            }
        }
        assertEquals(TASKS, ran.size());
        for (int i = 0; i < TASKS; i++) {
            assertEquals(i, ran.get(i));
        }
        SequentialLane.Chunk last = chain.get(chain.size() - 1);
        assertSame(last, consumerChunk(lane), "the owner ends in the last chunk");
        for (SequentialLane.Chunk c : chain.subList(0, chain.size() - 1)) {
            assertTrue(c.passed(), "every chunk before the last is cut once the lane has run everything");
        }
        assertEquals(0, lane.queuedCount());
        assertEquals(Lane.NO_WAITING, lane.oldestStamp());
    }
}
