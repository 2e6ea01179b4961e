package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.awaitQuiescent;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.get;
import static io.github.gatlingexecutor.TestSupport.lane;
import static io.github.gatlingexecutor.TestSupport.submitCallable;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Both;
import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.CoalCallable;
import io.github.gatlingexecutor.TestSupport.Seq;
import io.github.gatlingexecutor.TestSupport.SeqCallable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SPEC semantics 1 (three kinds, dispatch by interface, futures keep kind and context) and the equality part of 4.
 */
class SemanticsKindsTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    private GatlingExecutor executor(int coreThreads) {
        return cleanup.track(gatling("kinds").coreThreads(coreThreads).build());
    }

    /** Occupies {@code lane} with a task that waits for the returned gate. */
    private CountDownLatch occupy(Executor lane, List<String> order) {
        return occupy(lane, order, "blocker");
    }

    private CountDownLatch occupy(Executor lane, List<String> order, String label) {
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(1);
        lane.execute(() -> {
            started.countDown();
            blockQuietly(gate);
            order.add(label);
        });
        await(started, "blocker start");
        return gate;
    }

    @Test
    void sequentialRunnableGivenToExecuteJoinsTheSequentialLaneOfItsContext() {
        GatlingExecutor e = executor(2);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        OrderChecker checker = new OrderChecker(1);
        Executor lane = e.sequential("a");
        CountDownLatch gate = occupy(lane, order);
        List<String> expected = new ArrayList<>();
        expected.add("blocker");
        CountDownLatch done = new CountDownLatch(20);
        for (int i = 1; i <= 20; i++) {
            String label = (i % 2 == 0 ? "lane-" : "execute-") + i;
            expected.add(label);
            Runnable body = () -> {
                checker.enter(0);
                order.add(label);
                checker.exit(0);
                done.countDown();
            };
            if (i % 2 == 0) {
                lane.execute(body);
            } else {
                e.execute(new Seq("a", body));
            }
        }
        ContextStatistics cs = lane(e, "a", false);
        assertNotNull(cs, "no live sequential lane for \"a\": " + e.contextStatistics());
        assertEquals(21, cs.submitted(), "both paths must feed the one lane: " + cs);
        assertEquals(1, cs.executed(), "only the blocker may have started: " + cs);
        assertNull(lane(e, "a", true), "a coalescing lane appeared: " + e.contextStatistics());
        gate.countDown();
        await(done, "lane tasks");
        checker.assertClean("tasks of one context through two paths");
        assertEquals(expected, order);
    }

    @Test
    void coalescingRunnableGivenToExecuteJoinsTheCoalescingLaneOfItsContext() {
        GatlingExecutor e = executor(2);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        Executor lane = e.coalescing("c");
        CountDownLatch gate = occupy(lane, order);
        CountDownLatch last = new CountDownLatch(1);
        e.execute(new Coal("c", () -> order.add("first")));
        lane.execute(() -> order.add("second"));
        e.execute(new Coal("c", () -> {
            order.add("third");
            last.countDown();
        }));
        ContextStatistics cs = lane(e, "c", true);
        assertNotNull(cs, "no live coalescing lane for \"c\": " + e.contextStatistics());
        assertEquals(4, cs.submitted(), "both paths must feed the one lane: " + cs);
        assertNull(lane(e, "c", false), "a sequential lane appeared: " + e.contextStatistics());
        gate.countDown();
        await(last, "the last coalescing task");
        ExecutorStatistics s = awaitQuiescent(e);
        assertEquals(List.of("blocker", "third"), order);
        assertEquals(2, s.coalesced(), s.toString());
        assertEquals(2, s.executed(), s.toString());
    }

    @Test
    void taskThatIsBothSequentialAndCoalescingCountsAsSequential() throws Exception {
        GatlingExecutor e = executor(2);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch gate = occupy(e.sequential("b"), order);
        CountDownLatch done = new CountDownLatch(3);
        for (int i = 1; i <= 3; i++) {
            String label = "both-" + i;
            e.execute(new Both("b", () -> {
                order.add(label);
                done.countDown();
            }));
        }
        Future<?> f = e.submit(new Both("b", () -> order.add("both-submitted")));
        assertTrue(f instanceof SequentialRunnable, "future of a task that is both must be sequential: " + f);
        assertEquals("b", ((SequentialRunnable) f).context());
        ContextStatistics cs = lane(e, "b", false);
        assertNotNull(cs, "no sequential lane for \"b\": " + e.contextStatistics());
        assertEquals(5, cs.submitted(), cs.toString());
        assertNull(lane(e, "b", true), "a task that is both went to the coalescing lane");
        gate.countDown();
        await(done, "tasks that are both");
        get(f);
        assertEquals(List.of("blocker", "both-1", "both-2", "both-3", "both-submitted"), order);
        assertEquals(0, awaitQuiescent(e).coalesced(), "a task that is both was coalesced");
    }

    @Test
    void plainTasksRunUnorderedAndInParallel() {
        GatlingExecutor e = executor(2);
        CyclicBarrier barrier = new CyclicBarrier(2);
        CountDownLatch met = new CountDownLatch(2);
        for (int i = 0; i < 2; i++) {
            e.execute(() -> {
                try {
                    barrier.await(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS);
                    met.countDown();
                } catch (Exception ex) {
                    // the count stays up and the test fails
                }
            });
        }
        await(met, "two plain tasks to run at the same time");
        CountDownLatch many = new CountDownLatch(1000);
        for (int i = 0; i < 1000; i++) {
            e.execute(many::countDown);
        }
        await(many, "1000 plain tasks");
    }

    @Test
    void futuresKeepTheKindAndContextOfTheirTask() throws Exception {
        GatlingExecutor e = executor(2);
        Runnable nothing = () -> { };
        List<Future<?>> sequential = List.of(
                e.submit(new Seq("k", nothing)),
                e.submit(new Seq("k", nothing), "value"),
                submitCallable(e, new SeqCallable<>("k", () -> "call")));
        for (Future<?> f : sequential) {
            assertTrue(f instanceof SequentialRunnable, "not a SequentialRunnable: " + f.getClass());
            assertFalse(f instanceof CoalescingRunnable, "also a CoalescingRunnable: " + f.getClass());
            assertEquals("k", ((SequentialRunnable) f).context());
        }
        List<Future<?>> coalescing = List.of(
                e.submit(new Coal("q", nothing)),
                e.submit(new Coal("q", nothing), "value"),
                submitCallable(e, new CoalCallable<>("q", () -> "call")));
        for (Future<?> f : coalescing) {
            assertTrue(f instanceof CoalescingRunnable, "not a CoalescingRunnable: " + f.getClass());
            assertFalse(f instanceof SequentialRunnable, "also a SequentialRunnable: " + f.getClass());
            assertEquals("q", ((CoalescingRunnable) f).context());
        }
        Future<?> plain = e.submit(nothing);
        assertFalse(plain instanceof SequentialRunnable || plain instanceof CoalescingRunnable,
                "a plain task's future claims a context: " + plain.getClass());
        assertEquals("call", get(sequential.get(2)));
        assertEquals("value", get(sequential.get(1)));
        get(plain);
        for (Future<?> f : coalescing.subList(0, 2)) {
            try {
                get(f); // ran before the next one replaced it
            } catch (java.util.concurrent.CancellationException replaced) {
                // coalesced away: fine
            }
        }
        assertEquals("call", get(coalescing.get(2)), "the last coalescing task must run");
    }

    @Test
    void submittedSequentialTasksRunInTheirLane() throws Exception {
        GatlingExecutor e = executor(2);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        Executor lane = e.sequential("s");
        CountDownLatch gate = occupy(lane, order);
        Future<?> f1 = e.submit(new Seq("s", () -> order.add("submit")));
        Future<String> f2 = e.submit(new Seq("s", () -> order.add("submit-with-result")), "r");
        Future<String> f3 = submitCallable(e, new SeqCallable<>("s", () -> {
            order.add("callable");
            return "c";
        }));
        CountDownLatch done = new CountDownLatch(1);
        lane.execute(() -> {
            order.add("lane");
            done.countDown();
        });
        assertFalse(f1.isDone() || f2.isDone() || f3.isDone(), "a submitted task overtook its lane's blocker");
        gate.countDown();
        await(done, "lane task");
        assertNull(get(f1));
        assertEquals("r", get(f2));
        assertEquals("c", get(f3));
        assertEquals(List.of("blocker", "submit", "submit-with-result", "callable", "lane"), order);
    }

    @Test
    void invokeAllKeepsTheOrderOfSequentialCallables() throws Exception {
        GatlingExecutor e = executor(4);
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        OrderChecker checker = new OrderChecker(1);
        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            int value = i;
            tasks.add(new SeqCallable<>("ia", () -> {
                checker.enter(0);
                TestSupport.spin(200);
                order.add(value);
                checker.exit(0);
                return value;
            }));
        }
        List<Future<Integer>> futures = e.invokeAll(tasks);
        for (int i = 0; i < futures.size(); i++) {
            assertEquals(i, futures.get(i).get(0, TimeUnit.MILLISECONDS));
        }
        checker.assertClean("sequential callables of one context under invokeAll");
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            expected.add(i);
        }
        assertEquals(expected, order);
    }

    @Test
    void contextsAreComparedWithEquals() {
        GatlingExecutor e = executor(2);
        record Key(String a, int b) {
        }
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch gate = occupy(e.sequential(new Key("k", 1)), order, "key-blocker");
        CountDownLatch done = new CountDownLatch(3);
        e.execute(new Seq(new Key("k", 1), () -> {
            order.add("equal-key");
            done.countDown();
        }));
        e.sequential(new Key("k", 1)).execute(() -> {
            order.add("equal-key-lane");
            done.countDown();
        });
        String s1 = new String("text-context");
        String s2 = new String("text-context");
        CountDownLatch gate2 = occupy(e.sequential(s1), order, "string-blocker");
        e.execute(new Seq(s2, () -> {
            order.add("equal-string");
            done.countDown();
        }));
        assertEquals(3, lane(e, new Key("k", 1), false).submitted());
        assertEquals(2, lane(e, "text-context", false).submitted());
        assertEquals(2, e.statistics().liveContexts(), e.contextStatistics().toString());
        assertTrue(order.isEmpty(), "a task with an equal context overtook the blocker: " + order);
        gate.countDown();
        gate2.countDown();
        await(done, "tasks with equal contexts");
        assertEquals(5, order.size(), order.toString());
        List<String> keyOrder = new ArrayList<>(order);
        keyOrder.retainAll(List.of("key-blocker", "equal-key", "equal-key-lane"));
        assertEquals(List.of("key-blocker", "equal-key", "equal-key-lane"), keyOrder);
        List<String> stringOrder = new ArrayList<>(order);
        stringOrder.retainAll(List.of("string-blocker", "equal-string"));
        assertEquals(List.of("string-blocker", "equal-string"), stringOrder);
    }

    @Test
    void contextIsReadOnceOnTheSubmittingThread() {
        GatlingExecutor e = executor(2);
        AtomicInteger reads = new AtomicInteger();
        AtomicBoolean readElsewhere = new AtomicBoolean();
        Thread submitter = Thread.currentThread();
        CountDownLatch done = new CountDownLatch(2);
        SequentialRunnable seq = new SequentialRunnable() {
            @Override
            public Object context() {
                reads.incrementAndGet();
                if (Thread.currentThread() != submitter) {
                    readElsewhere.set(true);
                }
                return "once";
            }

            @Override
            public void run() {
                done.countDown();
            }
        };
        CoalescingRunnable coal = new CoalescingRunnable() {
            @Override
            public Object context() {
                reads.incrementAndGet();
                if (Thread.currentThread() != submitter) {
                    readElsewhere.set(true);
                }
                return "once";
            }

            @Override
            public void run() {
                done.countDown();
            }
        };
        e.execute(seq);
        e.execute(coal);
        await(done, "tasks");
        awaitQuiescent(e);
        assertFalse(readElsewhere.get(), "context() was called on a worker thread");
        assertEquals(2, reads.get(), "context() must be read once per submission");
    }
}
