package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * {@link SequentialLane#touchAhead}, the worker's look at the tasks ahead of the one it takes: which slots it reads.
 * It must stop at the first slot not yet written, at the end of the batch and at the end of the chunk (a read past
 * the chunk would throw inside a batch, a read past the batch touches tasks another worker may run), and touch no more
 * than {@link SequentialLane#TOUCH_AHEAD}. Deterministic: one chunk, filled by hand, no thread.
 */
class TouchAheadTest {
    private static final int SIZE = 4 * SequentialLane.TOUCH_AHEAD;
    private static final Runnable TASK = () -> { };

    private final Worker worker = LincheckLaneTest.worker(LincheckLaneTest.engine(), new Thread(() -> { }));

    /** A chunk of seqs 1 to SIZE whose first {@code written} slots hold a task. */
    private static SequentialLane.Chunk chunk(int written) {
        SequentialLane.Chunk c = new SequentialLane.Chunk(1, SIZE);
        for (int i = 0; i < written; i++) {
            c.tasks[i] = i % 2 == 0 ? TASK : new PlainTask(TASK, 0);
        }
        return c;
    }

    @Test
    void touchesAtMostTheGroupAhead() {
        SequentialLane.Chunk c = chunk(SIZE);
        assertEquals(SequentialLane.TOUCH_AHEAD, SequentialLane.touchAhead(worker, c, 1, Long.MAX_VALUE));
        assertEquals(5 + SequentialLane.TOUCH_AHEAD - 1, SequentialLane.touchAhead(worker, c, 5, Long.MAX_VALUE));
    }

    @Test
    void stopsAtTheFirstSlotNotWritten() {
        SequentialLane.Chunk c = chunk(6);
        assertEquals(6, SequentialLane.touchAhead(worker, c, 3, Long.MAX_VALUE));
        assertEquals(6, SequentialLane.touchAhead(worker, c, 7, Long.MAX_VALUE), "nothing written: from - 1");
    }

    @Test
    void stopsAtTheEndOfTheBatch() {
        SequentialLane.Chunk c = chunk(SIZE);
        assertEquals(5, SequentialLane.touchAhead(worker, c, 3, 6), "until is the first seq past the batch");
        assertEquals(2, SequentialLane.touchAhead(worker, c, 3, 3), "nothing left in the batch");
    }

    @Test
    void stopsAtTheEndOfTheChunk() {
        SequentialLane.Chunk c = chunk(SIZE);
        assertEquals(SIZE, SequentialLane.touchAhead(worker, c, SIZE - 2, Long.MAX_VALUE));
    }

    @Test
    void countsThePlainTasksItLoaded() {
        int before = worker.touchSink;
        SequentialLane.touchAhead(worker, chunk(SIZE), 1, Long.MAX_VALUE);
        assertEquals(SequentialLane.TOUCH_AHEAD / 2, worker.touchSink - before, "every other slot holds a PlainTask");
    }
}
