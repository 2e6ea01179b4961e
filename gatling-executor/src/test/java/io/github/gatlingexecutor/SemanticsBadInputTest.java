package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Coal;
import io.github.gatlingexecutor.TestSupport.CoalCallable;
import io.github.gatlingexecutor.TestSupport.Seq;
import io.github.gatlingexecutor.TestSupport.SeqCallable;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** SPEC semantics 11: bad input fails at the call, naming what was wrong; nothing throws inside a worker. */
class SemanticsBadInputTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    private static void assertNpeNaming(String what, Executable call, String... anyOf) {
        NullPointerException npe = assertThrows(NullPointerException.class, call, what);
        String message = npe.getMessage();
        assertNotNull(message, what + ": NullPointerException without a message");
        boolean named = false;
        for (String word : anyOf) {
            named |= message.toLowerCase().contains(word.toLowerCase());
        }
        assertTrue(named, what + ": message \"" + message + "\" names none of " + List.of(anyOf));
    }

    @Test
    void nullTasksAndContextsAreRejectedAtTheCallNamingWhatWasNull() {
        List<Throwable> handled = new CopyOnWriteArrayList<>();
        GatlingExecutor e = cleanup.track(gatling("bad").coreThreads(2)
                .uncaughtExceptionHandler((t, x) -> handled.add(x)).build());
        Runnable r = () -> { };
        SequentialRunnable nullSeq = new Seq(null, r);
        CoalescingRunnable nullCoal = new Coal(null, r);
        Callable<String> nullSeqCallable = new SeqCallable<>(null, () -> "x");
        Callable<String> nullCoalCallable = new CoalCallable<>(null, () -> "x");
        String[] task = {"command", "task", "callable", "runnable"};
        String[] context = {"context"};

        assertNpeNaming("execute(null)", () -> e.execute(null), task);
        assertNpeNaming("submit(null)", () -> e.submit((Runnable) null), task);
        assertNpeNaming("submit(null, v)", () -> e.submit((Runnable) null, "v"), task);
        assertNpeNaming("submit((Callable) null)", () -> e.submit((Callable<String>) null), task);
        assertNpeNaming("schedule(null)", () -> e.schedule((Runnable) null, 1, TimeUnit.SECONDS), task);
        assertNpeNaming("schedule((Callable) null)", () -> e.schedule((Callable<String>) null, 1, TimeUnit.SECONDS),
                task);
        assertNpeNaming("scheduleAtFixedRate(null)", () -> e.scheduleAtFixedRate(null, 1, 1, TimeUnit.SECONDS),
                task);
        assertNpeNaming("scheduleWithFixedDelay(null)",
                () -> e.scheduleWithFixedDelay(null, 1, 1, TimeUnit.SECONDS), task);
        assertNpeNaming("sequential(null)", () -> e.sequential(null), context);
        assertNpeNaming("coalescing(null)", () -> e.coalescing(null), context);
        assertNpeNaming("sequential(c).execute(null)", () -> e.sequential("c").execute(null), task);
        assertNpeNaming("coalescing(c).execute(null)", () -> e.coalescing("c").execute(null), task);

        assertNpeNaming("execute(seq with null context)", () -> e.execute(nullSeq), context);
        assertNpeNaming("execute(coal with null context)", () -> e.execute(nullCoal), context);
        assertNpeNaming("submit(seq with null context)", () -> e.submit(nullSeq), context);
        assertNpeNaming("submit(coal with null context, v)", () -> e.submit(nullCoal, "v"), context);
        assertNpeNaming("submit(seq callable with null context)", () -> e.submit(nullSeqCallable), context);
        assertNpeNaming("submit(coal callable with null context)", () -> e.submit(nullCoalCallable), context);
        assertNpeNaming("schedule(seq with null context)", () -> e.schedule(nullSeq, 10, TimeUnit.MILLISECONDS),
                context);
        assertNpeNaming("schedule(coal callable with null context)",
                () -> e.schedule(nullCoalCallable, 10, TimeUnit.MILLISECONDS), context);
        assertNpeNaming("scheduleAtFixedRate(seq with null context)",
                () -> e.scheduleAtFixedRate(nullSeq, 10, 10, TimeUnit.MILLISECONDS), context);
        assertNpeNaming("scheduleWithFixedDelay(coal with null context)",
                () -> e.scheduleWithFixedDelay(nullCoal, 10, 10, TimeUnit.MILLISECONDS), context);
        List<Callable<String>> nullSeqList = List.of(nullSeqCallable);
        assertNpeNaming("invokeAll with a null-context task", () -> e.invokeAll(nullSeqList), context);
        List<Callable<String>> nullCoalList = List.of(nullCoalCallable);
        assertNpeNaming("invokeAny with a null-context task", () -> e.invokeAny(nullCoalList), context);
        List<Callable<String>> fine = List.of(() -> "x");
        String[] unit = {"unit"};
        assertNpeNaming("invokeAll(tasks, 1, null)", () -> e.invokeAll(fine, 1, null), unit);
        assertNpeNaming("invokeAny(tasks, 1, null)", () -> e.invokeAny(fine, 1, null), unit);
        assertNpeNaming("schedule(r, 1, null)", () -> e.schedule(r, 1, null), unit);
        assertNpeNaming("awaitTermination(1, null)", () -> e.awaitTermination(1, null), unit);

        // a lane decides the context: a task with a null context() is fine there
        CountDownLatch inLane = new CountDownLatch(2);
        e.sequential("lane").execute(new Seq(null, inLane::countDown));
        e.coalescing("other-lane").execute(new Coal(null, inLane::countDown));
        await(inLane, "tasks whose own context() is null, given to a lane");

        // a scheduled or periodic call above that was accepted would wait in the timer (delays of 10 ms to 1 s)
        assertTrue(e.engine().timer.noDelayedWork(), "a rejected schedule call left its task on the timer");
        ExecutorStatistics s = TestSupport.awaitQuiescent(e);
        assertEquals(2, s.submitted(), "a rejected call was counted as accepted: " + s);
        assertEquals(0, s.failed(), "a caller's mistake failed inside a worker: " + s);
        assertTrue(handled.isEmpty(), "a caller's mistake reached the handler: " + handled);
    }

    @Test
    void theContextIsCheckedBeforeAnythingIsAccepted() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("bad").coreThreads(1).build());
        assertThrows(NullPointerException.class, () -> e.execute(new Seq(null, () -> { })));
        List<Callable<String>> mixed = List.of(() -> "fine", new SeqCallable<>(null, () -> "bad"));
        assertThrows(NullPointerException.class, () -> e.invokeAll(mixed));
        ExecutorStatistics s = e.statistics();
        assertEquals(0, s.submitted(), "a call that threw for a null context accepted part of its tasks: " + s);
        assertEquals("ok", TestSupport.get(e.submit(() -> "ok")));
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    /** A context or task (an entity with a lazy field, say) whose {@code toString} throws. */
    private static final class Unprintable implements Runnable {
        @Override
        public void run() {
        }

        @Override
        public String toString() {
            throw new UnsupportedOperationException("not loaded");
        }
    }

    /**
     * The messages of a refusal name the context and the task: a {@code toString} that threw replaced the
     * {@code RejectedExecutionException} with its own exception, and the refusal went uncounted in {@code rejected()}.
     * The same held for a refusal after shutdown and for a task that waits for its own lane.
     */
    @Test
    void aToStringThatThrowsNeverReplacesTheExceptionOfTheCall() throws Exception {
        for (Overflow overflow : List.of(Overflow.reject(), Overflow.block(Duration.ofMillis(20)))) {
            GatlingExecutor e = cleanup.track(gatling("unprintable").coreThreads(1).maxQueuedPerContext(1)
                    .overflow(overflow).build());
            Object context = new Unprintable();
            Executor lane = e.sequential(context);
            CountDownLatch gate = cleanup.occupy(lane);
            lane.execute(() -> { }); // its one place
            long rejected = e.statistics().rejected();
            RejectedExecutionException refused = assertThrows(RejectedExecutionException.class,
                    () -> lane.execute(new Unprintable()), overflow.toString());
            assertTrue(refused.getMessage().contains("maxQueuedPerContext"), refused.getMessage());
            assertEquals(rejected + 1, e.statistics().rejected(), "the refusal was not counted (" + overflow + ")");
            gate.countDown();
            e.shutdown();
            assertThrows(RejectedExecutionException.class, () -> e.execute(new Unprintable()));
            assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        }

        GatlingExecutor e = cleanup.track(gatling("unprintable-wait").coreThreads(1).build());
        Object context = new Unprintable();
        Callable<Throwable> waiter = new SeqCallable<>(context, () -> {
            Future<?> behind = e.submit(new Seq(context, () -> { }));
            try {
                behind.get();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        Future<Throwable> waited = e.submit(waiter);
        Throwable selfWait = TestSupport.get(waited);
        assertTrue(selfWait instanceof IllegalStateException && selfWait.getMessage().contains("wait forever"),
                "a wait for its own lane: " + selfWait);
    }

    /**
     * A delayed lane task is hashed into its lane when it comes due: a context whose {@code hashCode} throws failed the
     * task then, on the checker, and counted it in {@code failed()} although it never ran or counted as submitted.
     * It now throws at the call; one that starts throwing only later still fails its future, uncounted.
     */
    @Test
    void aDelayedTaskWhoseContextCannotBeHashedFailsAtTheCall() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("unhashable").coreThreads(1).build());
        Object unhashable = new Object() {
            @Override
            public int hashCode() {
                throw new IllegalStateException("boom-hash");
            }
        };
        assertThrows(IllegalStateException.class,
                () -> e.schedule(new Seq(unhashable, () -> { }), 20, TimeUnit.MILLISECONDS));
        assertThrows(IllegalStateException.class,
                () -> e.scheduleAtFixedRate(new Seq(unhashable, () -> { }), 20, 20, TimeUnit.MILLISECONDS));
        AtomicInteger hashes = new AtomicInteger();
        Object unhashableLater = new Object() {
            @Override
            public int hashCode() {
                if (hashes.incrementAndGet() > 1) {
                    throw new IllegalStateException("boom-hash-later");
                }
                return 1;
            }
        };
        ScheduledFuture<?> later = e.schedule(new Seq(unhashableLater, () -> { }), 20, TimeUnit.MILLISECONDS);
        ExecutionException failed = assertThrows(ExecutionException.class,
                () -> later.get(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertEquals("boom-hash-later", failed.getCause().getMessage());
        ExecutorStatistics s = e.statistics();
        assertEquals(0, s.failed(), "a task that never ran counted as failed: " + s);
        assertEquals(0, s.submitted(), s.toString());
    }

    private static void assertIaeNaming(String setting, String value, Executable call) {
        IllegalArgumentException iae = assertThrows(IllegalArgumentException.class, call, setting + "=" + value);
        String message = String.valueOf(iae.getMessage());
        assertTrue(message.contains(setting), "message \"" + message + "\" does not name " + setting);
        assertTrue(message.contains(value), "message \"" + message + "\" does not name the value " + value);
    }

    @Test
    void invalidSettingsAreRejectedNamingTheSettingAndTheValue() {
        Supplier<GatlingExecutor.Builder> b = GatlingExecutor::builder;
        assertIaeNaming("coreThreads", "0", () -> b.get().coreThreads(0));
        assertIaeNaming("coreThreads", "-3", () -> b.get().coreThreads(-3));
        assertIaeNaming("maxThreads", "0", () -> b.get().maxThreads(0));
        assertIaeNaming("maxThreads", "-1", () -> b.get().maxThreads(-1));
        assertIaeNaming("coreBumpThreshold", "0", () -> b.get().coreBumpThreshold(0));
        assertIaeNaming("batchSize", "0", () -> b.get().batchSize(0));
        assertIaeNaming("batchSize", "-5", () -> b.get().batchSize(-5));
        assertIaeNaming("minTurn", "PT-0.001S", () -> b.get().minTurn(Duration.ofMillis(-1)));
        b.get().minTurn(Duration.ZERO); // zero is valid: a lane rotates after every batch
        for (String setting : List.of("auxiliaryKeepAlive", "checkPeriod", "blockedThreshold")) {
            for (Duration bad : List.of(Duration.ZERO, Duration.ofMillis(-1))) {
                assertIaeNaming(setting, bad.toString(), () -> {
                    GatlingExecutor.Builder builder = b.get();
                    switch (setting) {
                        case "auxiliaryKeepAlive":
                            builder.auxiliaryKeepAlive(bad);
                            break;
                        case "checkPeriod":
                            builder.checkPeriod(bad);
                            break;
                        default:
                            builder.blockedThreshold(bad);
                            break;
                    }
                });
            }
        }
        assertIaeNaming("name", "", () -> b.get().name(""));
        IllegalArgumentException cross = assertThrows(IllegalArgumentException.class,
                () -> b.get().coreThreads(4).maxThreads(2).build());
        assertTrue(cross.getMessage().contains("maxThreads") && cross.getMessage().contains("2")
                && cross.getMessage().contains("coreThreads") && cross.getMessage().contains("4"), cross.getMessage());
        assertIaeNaming("coreThreads", "0", () -> new GatlingExecutor("x", 0));

        assertThrows(NullPointerException.class, () -> b.get().name(null));
        assertThrows(NullPointerException.class, () -> b.get().auxiliaryKeepAlive(null));
        assertThrows(NullPointerException.class, () -> b.get().checkPeriod(null));
        assertThrows(NullPointerException.class, () -> b.get().blockedThreshold(null));
        assertThrows(NullPointerException.class, () -> b.get().minTurn(null));
        assertThrows(NullPointerException.class, () -> b.get().threadFactory(null));
        assertThrows(NullPointerException.class, () -> b.get().uncaughtExceptionHandler(null));
        assertThrows(NullPointerException.class, () -> new GatlingExecutor(null, 1));
    }

    @Test
    void defaultSettingsAreAsSpecified() {
        GatlingExecutor e = cleanup.track(GatlingExecutor.builder().build());
        assertEquals("gatling", e.name());
        assertEquals(Math.max(1, Runtime.getRuntime().availableProcessors()), e.statistics().coreThreads());
        assertEquals(Math.max(256, e.statistics().coreThreads()), e.statistics().maxThreads());
        Settings d = GatlingExecutor.builder().settings();
        assertEquals(Duration.ofSeconds(10).toNanos(), d.auxiliaryKeepAliveNanos, "auxiliaryKeepAlive");
        assertEquals(Duration.ofMillis(250).toNanos(), d.checkPeriodNanos, "checkPeriod");
        assertEquals(Duration.ofMillis(250).toNanos(), d.blockedThresholdNanos, "blockedThreshold");
        assertEquals(10, d.coreBumpThreshold, "coreBumpThreshold");
        assertEquals(0, d.maxQueued, "maxQueued: unbounded");
        assertEquals(0, d.maxQueuedPerContext, "maxQueuedPerContext: unbounded");
        assertNull(d.threadFactory, "threadFactory: the executor's own");
        assertNull(d.exceptionHandler, "uncaughtExceptionHandler: the worker thread's own");
        assertEquals(SequentialLane.LINGER_LOOK, d.lingerLook, "linger: production's, not the model checks'");
        GatlingExecutor big = cleanup.track(GatlingExecutor.builder().name(TestSupport.uniqueName("bad"))
                .coreThreads(300).build());
        assertEquals(300, big.statistics().coreThreads()); // maxThreads default max(256, core) accepts 300
        assertEquals(0, big.statistics().threads(), "threads started before any work arrived");
        // A cap set below the machine's size lowers the default core size (it used to throw on a machine with more
        // processors than the cap); one above it leaves the default alone.
        int cpus = Math.max(1, Runtime.getRuntime().availableProcessors());
        GatlingExecutor capped = cleanup.track(GatlingExecutor.builder().name(TestSupport.uniqueName("bad"))
                .maxThreads(1).build());
        assertEquals(1, capped.statistics().coreThreads());
        assertEquals(1, capped.statistics().maxThreads());
        GatlingExecutor roomy = cleanup.track(GatlingExecutor.builder().name(TestSupport.uniqueName("bad"))
                .maxThreads(cpus + 1).build());
        assertEquals(cpus, roomy.statistics().coreThreads());
        assertEquals(cpus + 1, roomy.statistics().maxThreads());
    }

    /**
     * A context of one hash with {@code holder}, whose {@code hashCode} or {@code equals} (as {@code broken} says)
     * throws while {@code where} accepts the calling thread: a caller's bug that shows only after its tasks were
     * accepted. Every context here hashes alike, so a removal of its lane calls its {@code equals} on the lanes mapped
     * before it.
     */
    private static final class FailingLater {
        final String broken;
        volatile Predicate<Thread> where = t -> false;

        FailingLater(String broken) {
            this.broken = broken;
        }

        private void check(String method) {
            if (method.equals(broken) && where.test(Thread.currentThread())) {
                throw new IllegalStateException(method + " of a broken context");
            }
        }

        @Override
        public int hashCode() {
            check("hashCode");
            return 7;
        }

        @Override
        public boolean equals(Object o) {
            check("equals");
            return o == this;
        }

        @Override
        public String toString() {
            return "broken-" + broken; // Object's would call the hashCode that throws
        }
    }

    /**
     * What README's settings table and "Known limits" promise for a context whose {@code hashCode} or {@code equals}
     * throws when the executor itself calls it, outside any task (nobody else can get the exception): when a worker
     * releases its lane, the handler gets it and the worker runs on, and a later submit to the context (which hashes
     * it at the call) runs; when {@code shutdownNow()} closes its lane, the handler gets it too, every task that never
     * started is returned all the same, and the executor terminates. (One that calls the executor instead is a known
     * limit with no such promise: the lane maps run it under their own locks.)
     */
    @ParameterizedTest(name = "its {0} throws")
    @ValueSource(strings = {"hashCode", "equals"})
    void aContextThatThrowsWhenTheExecutorUnmapsItsLaneIsReportedAndLosesNothing(String broken) throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        GatlingExecutor e = cleanup.track(gatling("unmap-fails").coreThreads(2).maxThreads(2)
                .uncaughtExceptionHandler((t, x) -> reported.add(x)).build());
        String workers = e.name() + "-";
        FailingLater holder = new FailingLater("none");
        FailingLater context = new FailingLater(broken);
        // The holder's lane is mapped first and stays (its task holds one worker), so the broken context's lane comes
        // after it in their bin, and its removal compares it with the holder's context.
        CountDownLatch heldByHolder = cleanup.occupy(blocker -> e.execute(new Seq(holder, blocker)));
        context.where = t -> t.getName().startsWith(workers); // breaks on the executor's threads only
        List<Integer> ran = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 3; i++) {
            int n = i;
            e.execute(new Seq(context, () -> ran.add(n)));
        }
        // Both, not the release alone: a submitter kept off the CPU between two submits lets the lane empty and be
        // released (and the failure reported) before its last task is submitted (once in 26 rounds of a repetition,
        // with ran [0, 1] at the check). A task lost there fails the wait.
        TestSupport.waitUntil("the broken context's three tasks to run and a release of its lane to fail",
                () -> !reported.isEmpty() && ran.size() == 3, () -> "ran " + ran + ", reported " + reported);
        assertEquals(List.of(0, 1, 2), ran);
        assertEquals(broken + " of a broken context", reported.get(0).getMessage());
        // The worker that met the failure runs on, and the context is served again.
        CountDownLatch other = new CountDownLatch(1);
        e.execute(new Seq("other", other::countDown));
        await(other, "another context's task, after the failed release");
        CountDownLatch again = new CountDownLatch(1);
        e.execute(new Seq(context, () -> {
            ran.add(3);
            again.countDown();
        }));
        await(again, "the broken context's next task");
        assertEquals(List.of(0, 1, 2, 3), ran);
        // shutdownNow() closes the lanes and unmaps them on the caller's thread, where the context now throws too.
        CountDownLatch heldByPlain = cleanup.occupy(e);
        List<Runnable> queued = List.of(new Seq(context, () -> ran.add(4)), new Seq(context, () -> ran.add(5)),
                new Seq(holder, () -> ran.add(6)), new Seq("other", () -> ran.add(7)));
        queued.forEach(e::execute);
        context.where = t -> true;
        int reportedBefore = reported.size();
        List<Runnable> returned = e.shutdownNow();
        assertEquals(queued.size(), returned.size(), returned.toString());
        assertTrue(returned.containsAll(queued), returned.toString());
        if (broken.equals("hashCode")) {
            // Each removal hashes the key first; an equals is only called past the head of the bin, which the walk
            // of shutdownNow removes in order.
            assertTrue(reported.size() > reportedBefore, "the drain's failure was not reported: " + reported);
        }
        heldByHolder.countDown();
        heldByPlain.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS), e.statistics().toString());
        assertEquals(List.of(0, 1, 2, 3), ran);
        for (Throwable x : reported) {
            assertEquals(broken + " of a broken context", x.getMessage(), "reported: " + reported);
        }
    }
}
