package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The timer's indexed heap against a sorted set of the same tasks: random adds, polls, removals (of queued tasks and
 * of tasks no longer queued) and filters, with each task's index checked after every step.
 */
class TimerQueueTest {

    private static ScheduledTask<Object> task(long time) {
        Runnable body = () -> { };
        return new ScheduledTask<>(null, () -> null, body, TaskFuture.PLAIN, null, time, 0);
    }

    @Test
    void agreesWithASortedSetUnderRandomOperations() {
        for (long seed = 0; seed < 40; seed++) {
            Random random = new Random(seed);
            TimerQueue queue = new TimerQueue();
            TreeSet<ScheduledTask<?>> model = new TreeSet<>();
            List<ScheduledTask<?>> everAdded = new ArrayList<>();
            for (int step = 0; step < 3_000; step++) {
                int op = random.nextInt(10);
                if (op < 5) {
                    ScheduledTask<?> t = task(random.nextInt(200)); // ties: the scheduling order breaks them
                    queue.add(t);
                    model.add(t);
                    everAdded.add(t);
                } else if (op < 7) {
                    assertSame(model.pollFirst(), queue.poll(), "seed " + seed + " step " + step);
                } else if (op < 9 && !everAdded.isEmpty()) {
                    ScheduledTask<?> t = everAdded.get(random.nextInt(everAdded.size()));
                    assertEquals(model.remove(t), queue.remove(t), "seed " + seed + " step " + step);
                } else if (op == 9 && random.nextInt(20) == 0) {
                    long cut = random.nextInt(200);
                    queue.removeIf(t -> t.time < cut);
                    model.removeIf(t -> t.time < cut);
                }
                assertSame(model.isEmpty() ? null : model.first(), queue.peek(), "seed " + seed + " step " + step);
                // Every task ever added, at every step: the message is built only for a failure, as building it
                // eagerly for some ninety million checks made this test take over half a minute.
                for (ScheduledTask<?> t : everAdded) {
                    if (model.contains(t) != t.heapIndex >= 0) {
                        fail("the index of " + t + " is " + t.heapIndex + " (queued: " + model.contains(t) + "), seed "
                                + seed + " step " + step);
                    }
                }
            }
            List<ScheduledTask<?>> rest = queue.drain();
            assertEquals(model.size(), rest.size());
            assertTrue(rest.containsAll(model));
            assertTrue(queue.isEmpty());
            assertTrue(rest.stream().allMatch(t -> t.heapIndex == -1));
        }
    }

    @Test
    void aTaskIsQueuedAtMostOnce() {
        TimerQueue queue = new TimerQueue();
        ScheduledTask<?> t = task(1);
        queue.add(t);
        assertThrows(IllegalStateException.class, () -> queue.add(t));
        assertTrue(queue.remove(t));
        assertFalse(queue.remove(t));
        queue.add(t); // once out, it may come back (a periodic task's next run)
        assertSame(t, queue.poll());
    }

    @Test
    void aBurstDoesNotKeepItsArray() {
        TimerQueue queue = new TimerQueue();
        List<ScheduledTask<?>> burst = new ArrayList<>();
        for (int i = 0; i < 100_000; i++) {
            ScheduledTask<?> t = task(i);
            burst.add(t);
            queue.add(t);
        }
        for (ScheduledTask<?> t : burst) {
            assertTrue(queue.remove(t));
        }
        assertTrue(queue.isEmpty());
        queue.add(task(0)); // still works after shrinking
        assertEquals(0, queue.poll().time);
    }
}
