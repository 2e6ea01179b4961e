package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.RecordedEvents.PREFIX;
import static io.github.gatlingexecutor.RecordedEvents.awaitEvent;
import static io.github.gatlingexecutor.RecordedEvents.awaitEvents;
import static io.github.gatlingexecutor.RecordedEvents.is;
import static io.github.gatlingexecutor.RecordedEvents.shippedSettings;
import static io.github.gatlingexecutor.RecordedEvents.startCollecting;
import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.jfr.StatisticsEvent;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Configuration;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every JFR event of the executor is produced and read back, with its fields, using the settings file shipped in the
 * jar ({@code gatling.jfc}). One scenario makes them all: a core worker runs context "x", then blocks in a plain task
 * (WorkerBlocked); the checker starts an auxiliary worker (ThreadStarted, and a CoreBump at threshold 1) that takes
 * "x" over (ContextTransferred) and runs a 30 ms task in it (SlowTask, threshold 10 ms); the periodic Statistics event
 * reports the executor; shutdown ends the workers (ThreadRetired). Batches of one task keep "x" live while it moves.
 */
class JfrEventsTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    /** A plain task that blocks: its class is what WorkerBlocked must name. */
    static final class BlockingTask implements Runnable {
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch release;

        BlockingTask(CountDownLatch release) {
            this.release = release;
        }

        @Override
        public void run() {
            started.countDown();
            TestSupport.blockQuietly(release);
        }
    }

    /** A task that computes for 30 ms: its class is what SlowTask must name. */
    static final class SlowTask implements Runnable {
        final CountDownLatch done;

        SlowTask(CountDownLatch done) {
            this.done = done;
        }

        @Override
        public void run() {
            TestSupport.spin(30_000);
            done.countDown();
        }
    }

    @Test
    @Timeout(60)
    void everyEventIsRecordedWithItsFields() throws Exception {
        Configuration settings = shippedSettings();
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(settings)) {
            stream.enable(PREFIX + "Statistics").withPeriod(Duration.ofMillis(100));
            stream.setMaxAge(Duration.ofMinutes(1));
            startCollecting(stream, events);

            // The checker is held until the core worker runs the blocking task. Whenever work waits while every
            // worker is busy, a look of the checker starts an auxiliary worker: one that came while x's first task
            // had queued the blocking task and not yet returned (a core worker descheduled there for a check period)
            // started that worker early, which then took the blocking task, and x never moved. Holding the checker
            // takes a thread factory; this one names the threads as the executor does when it makes them itself.
            String name = TestSupport.uniqueName("jfr");
            CountDownLatch checkerGate = cleanup.gate();
            ThreadFactory factory = namingFactoryWithHeldChecker(name, checkerGate);
            // Batches of one task: a lane with more work goes behind whatever else waits, so "x" stays live and
            // moves from the core worker to the auxiliary one.
            GatlingExecutor e = cleanup.track(GatlingExecutor.builder().name(name).threadFactory(factory)
                    .coreThreads(1).maxThreads(4).batchSize(1).minTurn(Duration.ZERO)
                    .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(30))
                    .coreBumpThreshold(1).auxiliaryKeepAlive(Duration.ofMillis(50)).build());
            CountDownLatch release = cleanup.gate();
            BlockingTask blocking = new BlockingTask(release);
            CountDownLatch slowDone = new CountDownLatch(1);
            e.sequential("x").execute(() -> {
                e.execute(blocking);                               // waits in the ready queue
                e.sequential("x").execute(new SlowTask(slowDone)); // waits in lane x, behind this task
            }); // x then rotates behind the blocking task, which then holds the core worker
            await(blocking.started, "the blocking task, on the core worker");
            checkerGate.countDown();
            await(slowDone, "the slow task, on an auxiliary worker");

            RecordedEvent blocked = awaitEvent(events, "WorkerBlocked", name, x -> isClass(x, BlockingTask.class));
            assertEquals("", blocked.getString("context"), "a plain task has no context");
            assertEquals(BlockingTask.class.getName(), blocked.getClass("taskClass").getName());
            assertTrue(blocked.getDuration("runningFor").toMillis() >= 30, blocked.toString());
            assertTrue(blocked.getThread("worker").getJavaName().startsWith(name + "-core-"), blocked.toString());

            RecordedEvent slow = awaitEvent(events, "SlowTask", name, x -> isClass(x, SlowTask.class));
            assertEquals("x", slow.getString("context"));
            assertEquals(SlowTask.class.getName(), slow.getClass("taskClass").getName());
            assertTrue(slow.getDuration().toMillis() >= 10, slow.toString());

            RecordedEvent moved = awaitEvent(events, "ContextTransferred", name, x -> true);
            assertEquals("x", moved.getString("context"));
            assertFalse(moved.getBoolean("coalescing"));
            assertEquals(1, moved.getInt("previousWorker"));
            assertTrue(moved.getInt("worker") > 1, moved.toString());

            awaitEvent(events, "ThreadStarted", name, x -> !x.getBoolean("auxiliary")
                    && x.getString("reason").equals("below the core size"));
            RecordedEvent aux = awaitEvent(events, "ThreadStarted", name, x -> x.getBoolean("auxiliary"));
            assertTrue(aux.getThread("worker").getJavaName().startsWith(name + "-aux-"), aux.toString());
            RecordedEvent bump = awaitEvent(events, "CoreBump", name, x -> true);
            assertEquals(2, bump.getInt("coreThreads"));
            assertEquals(1, bump.getLong("auxiliaryThreadsStarted"));

            // Two tasks have finished (x's first and the slow one); the blocking task runs until release.
            RecordedEvent stats = awaitEvent(events, "Statistics", name, x -> x.getLong("executed") >= 2);
            assertTrue(stats.getLong("submitted") >= 3, stats.toString());
            assertTrue(stats.getInt("active") >= 1, stats.toString());
            assertTrue(stats.getInt("threads") >= 1, stats.toString());

            release.countDown();
            assertStatisticsEventMatchesEveryField(e, events, name);
            e.shutdown();
            assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
            RecordedEvent retired = awaitEvent(events, "ThreadRetired", name,
                    x -> x.getString("reason").equals("executor shut down"));
            assertTrue(retired.getThread("worker").getJavaName().startsWith(name + "-"), retired.toString());
        }
    }

    /**
     * Gives the executor a replaced coalescing task and two failed ones, so that more of its counts differ, then, once
     * its figures hold still across a Statistics event (two snapshots taken on either side of it read the same), checks
     * each of the event's fields against them: a field filled from the wrong count fails here.
     */
    private static void assertStatisticsEventMatchesEveryField(GatlingExecutor e, List<RecordedEvent> events,
                                                               String name) throws Exception {
        CountDownLatch holdLane = new CountDownLatch(1);
        CountDownLatch laneHeld = new CountDownLatch(1);
        e.coalescing("c").execute(() -> {
            laneHeld.countDown();
            TestSupport.blockQuietly(holdLane);
        });
        await(laneHeld, "the coalescing lane's first task");
        e.coalescing("c").execute(() -> { });  // replaced by the next: coalesced
        e.coalescing("c").execute(() -> { });
        holdLane.countDown();
        for (int i = 0; i < 2; i++) { // two: a count apart from coalesced()'s
            java.util.concurrent.Future<?> failing = e.submit(() -> {
                throw new IllegalStateException("a failed task, for the count");
            });
            assertThrows(java.util.concurrent.ExecutionException.class, () -> failing.get(10, TimeUnit.SECONDS));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (;;) {
            ExecutorStatistics before = e.statistics();
            java.time.Instant after = java.time.Instant.now();
            RecordedEvent event = awaitEvent(events, "Statistics", name, x -> x.getStartTime().isAfter(after));
            ExecutorStatistics later = e.statistics();
            if (before.toString().equals(later.toString()) && before.queued() == 0 && before.active() == 0) {
                ExecutorStatistics s = before;
                assertEquals(1, s.coalesced(), s.toString());
                assertTrue(s.transfers() >= 1, "x moved to another worker: " + s);
                assertTrue(s.auxiliaryThreadsStarted() >= 1 && s.coreBumps() >= 1 && s.blockedDetections() >= 1,
                        s.toString());
                assertEquals(2, s.failed(), s.toString());
                assertEquals(s.submitted(), event.getLong("submitted"), event.toString());
                assertEquals(s.executed(), event.getLong("executed"), event.toString());
                assertEquals(s.coalesced(), event.getLong("coalesced"), event.toString());
                assertEquals(s.failed(), event.getLong("failed"), event.toString());
                assertEquals(s.returned(), event.getLong("returned"), event.toString());
                assertEquals(s.queued(), event.getLong("queued"), event.toString());
                assertEquals(s.liveContexts(), event.getLong("liveContexts"), event.toString());
                assertEquals(s.threads(), event.getInt("threads"), event.toString());
                assertEquals(s.peakThreads(), event.getInt("peakThreads"), event.toString());
                assertEquals(s.coreThreads(), event.getInt("coreThreads"), event.toString());
                assertEquals(s.auxiliaryThreadsStarted(), event.getLong("auxiliaryThreadsStarted"), event.toString());
                assertEquals(s.coreBumps(), event.getLong("coreBumps"), event.toString());
                assertEquals(s.transfers(), event.getLong("transfers"), event.toString());
                assertEquals(s.blockedDetections(), event.getLong("blockedDetections"), event.toString());
                assertEquals(s.threadStartFailures(), event.getLong("threadStartFailures"), event.toString());
                assertEquals(s.active(), event.getInt("active"), event.toString());
                assertEquals(s.maxThreads(), event.getInt("maxThreads"), event.toString());
                assertEquals(s.rejected(), event.getLong("rejected"), event.toString());
                assertEquals(s.waitingSubmitters(), event.getInt("waitingSubmitters"), event.toString());
                assertEquals(s.acceptedOverLimit(), event.getLong("acceptedOverLimit"), event.toString());
                assertEquals(s.oldestQueuedAge(), event.getDuration("oldestQueuedAge"), event.toString());
                assertEquals(s.delayed(), event.getLong("delayed"), event.toString());
                return;
            }
            assertTrue(System.nanoTime() - deadline < 0, "the executor's figures never held still: " + later);
        }
    }

    /**
     * The Statistics event has a field for every figure of {@link ExecutorStatistics} (SPEC: "with every
     * ExecutorStatistics field"), and each is filled from the figure of its name. Checked on a snapshot whose figures
     * all differ: in the scenario above several read alike (threads, peak and core size; the capacity figures, all
     * zero), so a field filled from another figure of the same value passed there.
     */
    @Test
    void theStatisticsEventCarriesEachFigureInTheFieldOfItsName() throws Exception {
        ExecutorStatistics s = new ExecutorStatistics(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                19, 20, 21, 22);
        StatisticsEvent event = new StatisticsEvent();
        JfrRecorder.fill(event, "figures", s);
        assertEquals("figures", event.executor);
        Set<String> figures = new TreeSet<>();
        Set<Long> values = new HashSet<>();
        for (Method m : ExecutorStatistics.class.getDeclaredMethods()) {
            if (!Modifier.isPublic(m.getModifiers()) || m.getParameterCount() != 0
                    || m.getName().equals("toString")) {
                continue;
            }
            Object figure = m.invoke(s);
            long expected = figure instanceof Duration ? ((Duration) figure).toNanos() : ((Number) figure).longValue();
            assertTrue(values.add(expected), "two figures read " + expected + ": " + s);
            figures.add(m.getName());
            Field field = StatisticsEvent.class.getField(m.getName());
            assertEquals(expected, ((Number) field.get(event)).longValue(), m.getName() + " in " + s);
        }
        Set<String> fields = new TreeSet<>();
        for (Field f : StatisticsEvent.class.getDeclaredFields()) {
            if (Modifier.isPublic(f.getModifiers()) && !f.getName().equals("executor")) {
                fields.add(f.getName());
            }
        }
        assertEquals(figures, fields, "the event's fields and the snapshot's figures");
        assertEquals(22, figures.size(), figures.toString());
    }

    /**
     * TaskRejected under the executor-wide limit, for each way a submit is refused: a wait for room that times out
     * (a lane task), an {@code offer} (a plain task: no context), and a submitter interrupted while it must wait.
     */
    @Test
    @Timeout(60)
    void executorLimitRefusalsOfEveryKindAreRecorded() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-executor-full").coreThreads(1).maxThreads(1).maxQueued(1)
                    .overflow(Overflow.block(Duration.ofMillis(50))).build());
            String name = e.name();
            CountDownLatch gate = cleanup.occupy(e);
            e.execute(() -> { }); // the executor's one place
            assertThrows(RejectedExecutionException.class, () -> e.sequential("q1").execute(() -> { }));
            assertFalse(e.offer(() -> { }));
            Thread.currentThread().interrupt();
            try {
                assertThrows(RejectedExecutionException.class, () -> e.sequential("q2").execute(() -> { }));
            } finally {
                Thread.interrupted();
            }
            java.util.Map<String, RecordedEvent> byContext = new java.util.HashMap<>();
            for (RecordedEvent x : awaitEvents(events, "TaskRejected", name, 3)) {
                byContext.put(x.getString("context"), x);
            }
            assertEquals(java.util.Set.of("q1", "", "q2"), byContext.keySet(), events.toString());
            for (RecordedEvent x : byContext.values()) {
                String limit = x.getString("limit");
                assertTrue(limit.contains("maxQueued (1)") && !limit.contains("maxQueuedPerContext"), x.toString());
            }
            assertTrue(byContext.get("q1").getString("limit").contains("maxWait"), byContext.get("q1").toString());
            assertEquals(3, e.statistics().rejected());
            gate.countDown();
        }
    }

    /**
     * An {@code offer} refused because a submitter already waits for room: its TaskRejected event named no limit (it
     * said that earlier submitters still waited, with both limits listed, one "unbounded"). It now names the limit the
     * submitter ahead waits for, with its value and the context, under each limit, and with both set (the submitter
     * ahead waits for its lane's limit while the executor has room) the lane's.
     */
    @Test
    @Timeout(60)
    void anOfferRefusedBehindAWaitingSubmitterNamesTheLimitItWaitsFor() throws Exception {
        for (String limits : new String[] {"lane", "executor", "both"}) {
            boolean executorLimit = limits.equals("executor");
            List<RecordedEvent> events = new CopyOnWriteArrayList<>();
            try (RecordingStream stream = new RecordingStream(shippedSettings())) {
                startCollecting(stream, events);
                GatlingExecutor.Builder b = gatling("jfr-offer-behind").coreThreads(1).maxThreads(1)
                        .overflow(Overflow.block(Duration.ofMinutes(1)));
                GatlingExecutor e = cleanup.track((executorLimit ? b.maxQueued(1)
                        : limits.equals("both") ? b.maxQueuedPerContext(1).maxQueued(10) : b.maxQueuedPerContext(1))
                        .build());
                String name = e.name();
                CountDownLatch gate = cleanup.occupy(e.sequential("k"));
                e.sequential("k").execute(() -> { }); // the one place
                Thread waiter = new Thread(() -> e.sequential("k").execute(() -> { }), "waiter");
                waiter.start();
                TestSupport.waitUntil("the submitter to wait", () -> e.statistics().waitingSubmitters() == 1);
                assertFalse(e.offer(new TestSupport.Seq("k", () -> { })));
                RecordedEvent x = awaitEvent(events, "TaskRejected", name, y -> true);
                String limit = x.getString("limit");
                assertEquals("k", x.getString("context"));
                assertTrue(limit.startsWith(executorLimit ? "maxQueued (1) reached" : "maxQueuedPerContext (1) reached"),
                        limits + ": " + x);
                assertTrue(limit.contains("context k") && !limit.contains("maxQueued (10)"), limits + ": " + x);
                gate.countDown();
                waiter.join(TimeUnit.SECONDS.toMillis(30));
                assertFalse(waiter.isAlive(), "the waiter was admitted");
                assertEquals(1, e.statistics().rejected());
            }
        }
    }

    /** An auxiliary worker's start and its retirement after its keep-alive, each with its reason. */
    @Test
    @Timeout(60)
    void anAuxiliaryWorkersStartAndRetirementAreRecorded() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-aux").coreThreads(1).maxThreads(2)
                    .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(30))
                    .auxiliaryKeepAlive(Duration.ofMillis(50)).build());
            String name = e.name();
            CountDownLatch gate = cleanup.occupy(e.sequential("stuck"));
            CountDownLatch other = new CountDownLatch(1);
            e.sequential("other").execute(other::countDown); // waits behind the stuck worker: an auxiliary runs it
            await(other, "the other context's task, on an auxiliary worker");
            RecordedEvent started = awaitEvent(events, "ThreadStarted", name, x -> x.getBoolean("auxiliary"));
            assertTrue(started.getString("reason").contains("stuck or blocked"), started.toString());
            RecordedEvent retired = awaitEvent(events, "ThreadRetired", name, x -> x.getBoolean("auxiliary"));
            assertTrue(retired.getString("reason").contains("auxiliaryKeepAlive"), retired.toString());
            assertEquals(started.getThread("worker").getJavaName(), retired.getThread("worker").getJavaName());
            gate.countDown();
        }
    }

    /**
     * SlowTask's threshold when a recording enables the event without one (not the shipped settings, which set
     * their own): SPEC's default of 10 ms, from the event class.
     */
    @Test
    @Timeout(60)
    void slowTaskDefaultsToTenMilliseconds() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream()) {
            stream.enable(PREFIX + "SlowTask");
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-slow-default").coreThreads(1).build());
            String name = e.name();
            CountDownLatch done = new CountDownLatch(101);
            for (int i = 0; i < 100; i++) {
                e.sequential("short").execute(done::countDown); // empty: far below 10 ms, but for a rare stall
            }
            e.sequential("long").execute(() -> {
                TestSupport.sleep(30);
                done.countDown();
            });
            await(done, "the tasks");
            RecordedEvent slow = awaitEvent(events, "SlowTask", name, x -> "long".equals(x.getString("context")));
            assertTrue(slow.getDuration().toMillis() >= 10, slow.toString());
            // One worker ran them all, the empty ones first, and a thread's events arrive in the order it committed
            // them: with no threshold every empty task would be here by now.
            long shortOnes = events.stream()
                    .filter(x -> is(x, "SlowTask", name) && "short".equals(x.getString("context"))).count();
            assertTrue(shortOnes < 50, shortOnes + " of 100 empty tasks recorded as slow");
        }
    }

    /**
     * A context whose {@code toString} throws an error the engine lets through ({@link Messages#describe} rethrows
     * virtual machine errors other than a stack overflow) meets the ContextTransferred event, which names the context,
     * as its lane moves to another worker. The worker recorded the event before it noted the lane as its own, so its
     * way out of a failure around the tasks did not hand the lane back: the lane stayed active in no queue, its next
     * task never ran and the executor never terminated (an outside audit). Handed back, it failed the same way at the
     * next worker, and still never ran: the event is now given up and the failure reported. Same moves as the test
     * above.
     */
    @Test
    @Timeout(60)
    void aContextWhoseToStringFailsInTheTransferEventKeepsItsLaneRunning() throws Exception {
        try (RecordingStream stream = new RecordingStream()) {
            stream.enable(PREFIX + "ContextTransferred");
            stream.startAsync();
            String name = TestSupport.uniqueName("jfr-tostring");
            CountDownLatch checkerGate = cleanup.gate();
            List<Throwable> reported = new CopyOnWriteArrayList<>();
            GatlingExecutor e = cleanup.track(GatlingExecutor.builder().name(name)
                    .threadFactory(namingFactoryWithHeldChecker(name, checkerGate))
                    .uncaughtExceptionHandler((t, x) -> reported.add(x))
                    .coreThreads(1).maxThreads(4).batchSize(1).minTurn(Duration.ZERO)
                    .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(30)).build());
            Object x = new Object() {
                @Override
                public String toString() {
                    throw new InternalError("toString of a context");
                }
            };
            CountDownLatch release = cleanup.gate();
            BlockingTask blocking = new BlockingTask(release);
            CountDownLatch secondRan = new CountDownLatch(1);
            e.sequential(x).execute(() -> {
                e.execute(blocking);
                e.sequential(x).execute(secondRan::countDown);
            });
            await(blocking.started, "the blocking task, on the core worker");
            checkerGate.countDown();
            await(secondRan, "x's second task, on an auxiliary worker");
            assertFalse(reported.isEmpty(), "the event's failure was not reported");
            assertTrue(reported.stream().allMatch(t -> t instanceof InternalError), reported.toString());
            release.countDown();
            e.shutdown();
            assertTrue(e.awaitTermination(10, TimeUnit.SECONDS), e.statistics().toString());
        }
    }

    /**
     * The same context met by the SlowTask event, which names the context too, at the end of each of its tasks (in
     * the worker's {@code runTask}, after the task has counted as executed): the error leaves the task's lane
     * through the worker's way out of a failure around the tasks, which must hand the lane back. Kept by no queue and
     * no worker, the lane's next task never ran and the executor never terminated. Each task here ends in that
     * failure, so each hand-back is seen: the second and third tasks run, in order, and each failure is reported.
     */
    @Test
    @Timeout(60)
    void aContextWhoseToStringFailsInTheSlowTaskEventKeepsItsLaneRunning() throws Exception {
        try (RecordingStream stream = new RecordingStream()) {
            stream.enable(PREFIX + "SlowTask").withThreshold(Duration.ZERO); // every task is slow
            stream.startAsync();
            List<Throwable> reported = new CopyOnWriteArrayList<>();
            // One worker: no other could pick the lane up by chance; built after the recording started, so the
            // worker sees the event enabled from its first task.
            GatlingExecutor e = cleanup.track(gatling("jfr-slow-tostring").coreThreads(1).maxThreads(1)
                    .uncaughtExceptionHandler((t, x) -> reported.add(x)).build());
            Object x = new Object() {
                @Override
                public String toString() {
                    throw new InternalError("toString of a context");
                }
            };
            List<Integer> ran = new CopyOnWriteArrayList<>();
            CountDownLatch third = new CountDownLatch(1);
            e.sequential(x).execute(() -> ran.add(1));
            e.sequential(x).execute(() -> ran.add(2));
            e.sequential(x).execute(() -> {
                ran.add(3);
                third.countDown();
            });
            await(third, "x's third task, after two tasks whose SlowTask event failed");
            assertEquals(List.of(1, 2, 3), ran);
            e.shutdown();
            assertTrue(e.awaitTermination(10, TimeUnit.SECONDS), e.statistics().toString());
            assertEquals(3, reported.size(), reported.toString());
            assertTrue(reported.stream().allMatch(t -> t instanceof InternalError), reported.toString());
        }
    }

    /**
     * JFR holds its periodic hooks strongly. The hook that reports executors is removed when the last live executor
     * terminates; one built while a recording ran and then dropped, never used nor closed, is collected without
     * terminating, and the hook stayed, keeping this library's classes and their loader registered (an outside audit).
     * The hook now removes itself when it finds no executor. A JVM of its own: other tests' executors live in this one.
     */
    @Test
    @Timeout(60)
    void theStatisticsHookGoesWhenEveryExecutorWasDroppedWithoutClosing() throws Exception {
        String out = TestSupport.childJvmOutput(List.of(), DroppedExecutorChild.class);
        assertTrue(out.contains(DroppedExecutorChild.DONE), "the hook stayed:\n" + out);
    }

    /** Builds an executor while a recording runs, drops it, and waits for the hook to go. */
    static final class DroppedExecutorChild {
        static final String DONE = "child: the hook is gone";

        public static void main(String[] args) throws Exception {
            try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
                recording.enable(PREFIX + "Statistics").withPeriod(Duration.ofMillis(20));
                recording.start();
                buildAndDrop();
                if (!JfrRecorder.periodicRegistered()) {
                    System.out.println("child: no hook was registered at build");
                    System.exit(2);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (JfrRecorder.periodicRegistered() && System.nanoTime() - deadline < 0) {
                    System.gc();
                    Thread.sleep(20);
                }
                System.out.println(JfrRecorder.periodicRegistered() ? "child: the hook is still registered" : DONE);
            }
        }

        private static void buildAndDrop() {
            new GatlingExecutor("dropped", 1);
        }

        private DroppedExecutorChild() {
        }
    }

    /**
     * The hook goes when the last live executor terminates, by the time {@code close()} returns, though the caller
     * still holds the executor: a terminated executor is no longer reported. Had termination left it among the live
     * ones, the hook stayed, reporting the dead executor's last figures once a period and keeping this library's classes
     * and their loader registered with JFR for as long as anything referenced the executor. A JVM of its own, for the
     * reason above.
     */
    @Test
    @Timeout(60)
    void theStatisticsHookGoesWhenTheLastExecutorTerminates() throws Exception {
        String out = TestSupport.childJvmOutput(List.of(), ClosedExecutorChild.class);
        assertTrue(out.contains(ClosedExecutorChild.DONE), "the hook stayed:\n" + out);
    }

    /** Builds an executor while a recording runs, uses it, closes it, and looks at the hook while still holding it. */
    static final class ClosedExecutorChild {
        static final String DONE = "child: the hook went with the executor";

        public static void main(String[] args) throws Exception {
            try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
                recording.enable(PREFIX + "Statistics").withPeriod(Duration.ofMillis(20));
                recording.start();
                GatlingExecutor e = new GatlingExecutor("closed", 1);
                e.submit(() -> { }).get(10, TimeUnit.SECONDS);
                if (!JfrRecorder.periodicRegistered()) {
                    System.out.println("child: no hook was registered at build");
                    System.exit(2);
                }
                e.close();
                System.out.println(JfrRecorder.periodicRegistered() ? "child: the hook is still registered" : DONE);
                java.lang.ref.Reference.reachabilityFence(e);
            }
        }

        private ClosedExecutorChild() {
        }
    }

    /** Runs one slow task in {@code context} of {@code e}, then waits for its SlowTask event among {@code events}. */
    private static void assertSlowTaskRecorded(GatlingExecutor e, String context, List<RecordedEvent> events)
            throws Exception {
        CountDownLatch slowDone = new CountDownLatch(1);
        e.sequential(context).execute(new SlowTask(slowDone));
        await(slowDone, "the slow task of " + context);
        RecordedEvent slow = awaitEvent(events, "SlowTask", e.name(), x -> isClass(x, SlowTask.class));
        assertEquals(context, slow.getString("context"));
    }

    /** A Callable that computes for 30 ms: its class is what SlowTask must name when it is submitted. */
    static final class SlowCallable implements java.util.concurrent.Callable<String> {
        @Override
        public String call() {
            TestSupport.spin(30_000);
            return "done";
        }
    }

    /**
     * A task given to {@code submit} runs inside the future that wraps it, and the events name the caller's class, not
     * the future's: a Runnable and a Callable, each slow. The other tests time only tasks given to {@code execute} or
     * a lane, so an event that named the executor's own future class passed them all.
     */
    @Test
    @Timeout(60)
    void aSubmittedTaskIsNamedByItsOwnClassNotByItsFuture() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-submitted").coreThreads(1).build());
            CountDownLatch done = new CountDownLatch(1);
            e.submit(new SlowTask(done)).get(20, TimeUnit.SECONDS);
            assertEquals("done", e.submit(new SlowCallable()).get(20, TimeUnit.SECONDS));
            RecordedEvent runnable = awaitEvent(events, "SlowTask", e.name(), x -> isClass(x, SlowTask.class));
            assertEquals("", runnable.getString("context"), "a plain task has no context");
            awaitEvent(events, "SlowTask", e.name(), x -> isClass(x, SlowCallable.class));
        }
    }

    /**
     * JFR first comes into use after an executor was built: the first task of its first worker, started after the
     * recording, is timed. The worker read whether tasks are timed only when woken from a park, and its checker's first
     * look came after that task began. In a child JVM, where nothing has used JFR before.
     */
    @Test
    @Timeout(60)
    void aRecordingStartedAfterAnExecutorWasBuiltTimesItsFirstWorkersFirstTask() throws Exception {
        String out = TestSupport.childJvmOutput(List.of(), LateRecordingChild.class);
        assertTrue(out.contains(LateRecordingChild.DONE), out);
    }

    /**
     * Every event type is in JFR's metadata once a recording runs and an executor is built, whether or not it has fired:
     * JFR registers an event class when it is initialized, so the rare ones (a core bump, a refusal, a transfer) were
     * missing until their first occurrence, and a configuration could not be made from them. In a child JVM, where no
     * executor has fired any of them.
     */
    @Test
    @Timeout(60)
    void everyEventTypeIsRegisteredOnceARecordingRunsAndAnExecutorIsBuilt() throws Exception {
        String out = TestSupport.childJvmOutput(List.of(), TypesChild.class);
        for (String type : List.of("WorkerBlocked", "ThreadStarted", "ThreadRetired", "CoreBump", "ContextTransferred",
                "TaskRejected", "SlowTask", "Statistics")) {
            assertTrue(out.contains(TypesChild.TYPE + PREFIX + type + " in [GatlingExecutor]"), type + ":\n" + out);
        }
    }

    /**
     * A worker that starts while a recording takes SlowTask times its first task, whatever the flag said before it
     * started: here cleared after the build, as when a running recording enables the event after the executor's last
     * look, and with the checker held back, so that only the worker's own start can read the recording again.
     */
    @Test
    @Timeout(60)
    void aWorkerThatStartsDuringARecordingTimesItsFirstTask() throws Exception {
        CountDownLatch checkerGate = cleanup.gate();
        ThreadFactory factory = r -> TestSupport.isChecker(r) ? TestSupport.heldChecker(r, checkerGate) : new Thread(r);
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-fresh-worker").coreThreads(1).threadFactory(factory).build());
            JfrRecorder.slowTaskEnabled = false;
            assertSlowTaskRecorded(e, "fresh", events);
        }
    }

    /**
     * A listener of the application's that builds an executor when JFR tells it of JFR's initialization (told under a
     * lock of JFR's) while another thread builds the first executor: both are built. A version of the core that added a
     * listener of its own with JFR from the build, under its recorder's class lock, made the two threads wait for each
     * other's lock for good (see JfrRecorder#slowTaskEnabled). In a child JVM, so that no executor lives when it starts
     * and a deadlock, if any, ends with it.
     */
    @Test
    @Timeout(60)
    void anApplicationsListenerMayBuildAnExecutorWhileAnotherThreadBuildsTheFirst() throws Exception {
        String out = TestSupport.childJvmOutput(List.of(), ListenerBuildsChild.class);
        assertTrue(out.contains(ListenerBuildsChild.DONE), out);
    }

    static final class ListenerBuildsChild {
        static final String DONE = "child: both executors built";

        public static void main(String[] args) throws Exception {
            try (jdk.jfr.Recording warmUp = new jdk.jfr.Recording()) {
                warmUp.start(); // JFR is initialized: adding a listener tells it so at once, under JFR's lock
            }
            CountDownLatch inCallback = new CountDownLatch(1);
            Thread[] second = new Thread[1];
            jdk.jfr.FlightRecorderListener application = new jdk.jfr.FlightRecorderListener() {
                @Override
                public void recorderInitialized(jdk.jfr.FlightRecorder recorder) {
                    inCallback.countDown();
                    // Until the other thread waits for a lock (JFR's, which this thread holds), or is done.
                    TestSupport.waitUntil("the other build to wait for a lock or end", () -> second[0] != null
                            && (second[0].getState() == Thread.State.BLOCKED
                                || second[0].getState() == Thread.State.TERMINATED));
                    new GatlingExecutor("built-in-listener", 1).close();
                }
            };
            Thread first = new Thread(() -> jdk.jfr.FlightRecorder.addListener(application), "adds-a-listener");
            second[0] = new Thread(() -> {
                await(inCallback);
                new GatlingExecutor("built-beside", 1).close();
            }, "builds-the-first");
            first.start();
            second[0].start();
            first.join(10_000);
            second[0].join(10_000);
            long[] deadlocked = java.lang.management.ManagementFactory.getThreadMXBean().findDeadlockedThreads();
            System.out.println(!first.isAlive() && !second[0].isAlive() ? DONE
                    : "child: still waiting, deadlocked threads: " + (deadlocked == null ? 0 : deadlocked.length));
            System.exit(0); // a deadlocked thread would keep the JVM alive
        }

        private static void await(CountDownLatch latch) {
            try {
                latch.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }

        private ListenerBuildsChild() {
        }
    }

    /**
     * A listener of the application's that builds an executor, runs a task on it and closes it when JFR tells it of
     * JFR's initialization (under JFR's lock), with no other executor alive: the close returns. A version of the core
     * whose termination removed a listener of its own from JFR, which needs that lock, made the close wait for good.
     * Both ways of being told: JFR's initialization itself, and adding the listener afterwards. In child JVMs, so that
     * no executor lives when it starts and a deadlock, if any, ends with it.
     */
    @Test
    @Timeout(90)
    void anApplicationsListenerMayCloseAnExecutorWhenToldOfJfrsInitialization() throws Exception {
        for (String how : List.of("initialization", "added-later")) {
            String out = TestSupport.childJvmOutput(List.of(), ListenerClosesChild.class, how);
            assertTrue(out.contains(ListenerClosesChild.DONE), how + ": " + out);
        }
    }

    static final class ListenerClosesChild {
        static final String DONE = "child: the executor built in the listener closed";

        public static void main(String[] args) throws Exception {
            boolean addedLater = args[0].equals("added-later");
            if (addedLater) {
                try (jdk.jfr.Recording warmUp = new jdk.jfr.Recording()) {
                    warmUp.start();
                }
            }
            CountDownLatch closed = new CountDownLatch(1);
            jdk.jfr.FlightRecorderListener application = new jdk.jfr.FlightRecorderListener() {
                @Override
                public void recorderInitialized(jdk.jfr.FlightRecorder recorder) {
                    GatlingExecutor e = new GatlingExecutor("closed-in-listener", 1);
                    try {
                        e.submit(() -> { }).get();
                    } catch (Exception failed) {
                        throw new IllegalStateException(failed);
                    }
                    e.close();
                    closed.countDown();
                }
            };
            Thread t = new Thread(() -> {
                jdk.jfr.FlightRecorder.addListener(application);
                if (!addedLater) {
                    try (jdk.jfr.Recording first = new jdk.jfr.Recording()) {
                        first.start(); // JFR initializes, and tells the listener under its lock
                    }
                }
            }, "jfr-user");
            t.start();
            boolean done = closed.await(10, TimeUnit.SECONDS);
            System.out.println(done ? DONE : "child: the close in the listener did not return");
            System.exit(0);
        }

        private ListenerClosesChild() {
        }
    }

    /** The child JVM of {@link #everyEventTypeIsRegisteredOnceARecordingRunsAndAnExecutorIsBuilt}. */
    static final class TypesChild {
        static final String TYPE = "child: registered ";

        public static void main(String[] args) {
            try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
                recording.start();
                try (GatlingExecutor e = new GatlingExecutor("types", 1)) {
                    for (jdk.jfr.EventType type : jdk.jfr.FlightRecorder.getFlightRecorder().getEventTypes()) {
                        if (type.getName().startsWith(PREFIX)) {
                            System.out.println(TYPE + type.getName() + " in " + type.getCategoryNames());
                        }
                    }
                }
            }
        }

        private TypesChild() {
        }
    }

    static final class LateRecordingChild {
        static final String DONE = "child: the first task was timed";

        public static void main(String[] args) throws Exception {
            if (jdk.jfr.FlightRecorder.isInitialized()) {
                throw new AssertionError("JFR was in use before the executor was built");
            }
            GatlingExecutor fresh = new GatlingExecutor("late-fresh", 1);
            List<RecordedEvent> events = new CopyOnWriteArrayList<>();
            try (RecordingStream stream = new RecordingStream()) {
                stream.enable(PREFIX + "SlowTask").withThreshold(Duration.ofMillis(10));
                stream.onEvent(events::add);
                stream.startAsync();
                CountDownLatch slowDone = new CountDownLatch(1);
                fresh.sequential("first").execute(new SlowTask(slowDone));
                if (!slowDone.await(20, TimeUnit.SECONDS)) {
                    throw new AssertionError("the slow task did not run");
                }
                System.out.println(seen(events, "SlowTask", fresh.name()) ? DONE : "child: the first task went untimed");
            }
            fresh.close();
        }

        /** Whether an event of {@code type} for executor {@code name} arrives within 10 s. */
        private static boolean seen(List<RecordedEvent> events, String type, String name) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            do {
                for (RecordedEvent e : events) {
                    if (e.getEventType().getName().equals(PREFIX + type) && name.equals(e.getString("executor"))) {
                        return true;
                    }
                }
                Thread.sleep(10);
            } while (System.nanoTime() - deadline < 0);
            return false;
        }

        private LateRecordingChild() {
        }
    }

    /**
     * A recording that runs when an executor is built applies from its first task. The executor used to learn of it at
     * its checker's first look, which comes when its first worker starts: a slow first task began untimed, and an
     * executor that had started no thread got no Statistics event (when no other executor's checker had looked).
     */
    @Test
    @Timeout(60)
    void aRecordingRunningWhenAnExecutorIsBuiltTimesItsFirstTask() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            JfrRecorder.slowTaskEnabled = false; // as in a JVM where no executor's checker has looked at the recording
            GatlingExecutor e = cleanup.track(gatling("jfr-first").coreThreads(1).build());
            assertTrue(JfrRecorder.slowTaskEnabled, "built during a recording that takes SlowTask, before any thread");
            assertSlowTaskRecorded(e, "first", events);
        }
    }

    /**
     * A recording started while an executor idles times the task its workers wake for. Its workers learned of the
     * recording only from its checker's next round, and the checker of an idle executor dozes for a check period:
     * the slow task that woke them went untimed. Here the checker is held back for good (no round at all), and the
     * flag is cleared, as in a JVM where no recording had run.
     */
    @Test
    @Timeout(60)
    void aRecordingStartedWhileTheExecutorIdlesTimesTheTaskItsWorkerWakesFor() throws Exception {
        CountDownLatch checkerGate = cleanup.gate();
        String workerName = TestSupport.uniqueName("jfr-idle-worker");
        ThreadFactory factory = r -> TestSupport.isChecker(r)
                ? TestSupport.heldChecker(r, checkerGate) : new Thread(r, workerName);
        GatlingExecutor e = cleanup.track(gatling("jfr-idle").coreThreads(1).threadFactory(factory).build());
        CountDownLatch first = new CountDownLatch(1);
        e.execute(first::countDown);
        await(first, "the first task");
        Thread worker = TestSupport.liveThreads(workerName).get(0);
        TestSupport.waitUntil("the worker to park", () -> worker.getState() == Thread.State.WAITING);
        JfrRecorder.slowTaskEnabled = false;
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            assertSlowTaskRecorded(e, "woken", events);
        }
    }

    /** TaskRejected for a rejected execute and a refused offer, and the capacity fields of Statistics. */
    @Test
    @Timeout(60)
    void rejectionsAreRecorded() throws Exception {
        Configuration settings = shippedSettings();
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(settings)) {
            stream.enable(PREFIX + "Statistics").withPeriod(Duration.ofMillis(100));
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-full").maxQueuedPerContext(1).build());
            String name = e.name();
            CountDownLatch gate = cleanup.occupy(e.sequential("k"));
            e.sequential("k").execute(() -> { });
            assertThrows(RejectedExecutionException.class, () -> e.sequential("k").execute(() -> { }));
            assertFalse(e.offer(new TestSupport.Seq("k", () -> { })));

            List<RecordedEvent> rejected = awaitEvents(events, "TaskRejected", name, 2);
            assertEquals(2, rejected.size(), events.toString());
            for (RecordedEvent x : rejected) {
                assertEquals("k", x.getString("context"));
                assertTrue(x.getString("limit").contains("maxQueuedPerContext (1)"), x.toString());
                assertEquals("GatlingExecutor", x.getEventType().getCategoryNames().get(0));
            }
            RecordedEvent stats = awaitEvent(events, "Statistics", name,
                    x -> x.getLong("rejected") == 2 && x.getLong("oldestQueuedAge") > 0);
            assertEquals(1, stats.getLong("queued"));
            assertEquals(0, stats.getInt("waitingSubmitters"));
            gate.countDown();
        }
    }

    /**
     * WorkerBlocked's {@code runningFor} is how long the task has run: it was timed from the inspection that first saw
     * the task, a check period (200 ms here) shorter at most, so two tasks started at different points of the period
     * read 20 to 190 ms short. Started {@code d} apart (70 ms and a little more), the two fell short by {@code s} and
     * by {@code s - d} modulo the period, and one of them by at least {@code min(d, 200 - d)}, 70 ms: the 50 ms allowed
     * below catches that whatever the phase, and leaves room for the time between the checker's reading of its clock
     * and the event's commit, which reached 48 ms on a loaded machine for the first event of a JVM (JFR's cold path;
     * a warm-up event goes first for that) and a few ms after it.
     *
     * <p>Longer than the task ran, the report is by design (an upper bound, see {@code WorkerBlockedEvent#runningFor}):
     * it is timed from the worker's stamp when it took the lane, a coarse-clock reading a few ms behind while workers
     * are awake, and a worker preempted between that take and the task's first line adds the time it waited for a CPU
     * (8 ms over, once in 35 runs of the class at a load average of 6 on 2 cores, against 5 allowed then). The same 50
     * ms is allowed that way: timed from the inspection before the task instead, one of the two tasks, started 70 ms
     * apart within a 200 ms period, would read at least 70 ms over, whatever the phase.
     */
    @Test
    @Timeout(60)
    void aBlockedTaskIsReportedWithTheTimeItHasRun() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            stream.setMaxAge(Duration.ofMinutes(1));
            startCollecting(stream, events);
            String name = TestSupport.uniqueName("jfr-running");
            GatlingExecutor e = cleanup.track(GatlingExecutor.builder().name(name).coreThreads(2).maxThreads(2)
                    .checkPeriod(Duration.ofMillis(200)).blockedThreshold(Duration.ofMillis(200)).build());
            CountDownLatch warmUp = new CountDownLatch(1);
            e.sequential("warm-up").execute(() -> TestSupport.blockQuietly(warmUp));
            awaitEvent(events, "WorkerBlocked", name, x -> "warm-up".equals(x.getString("context")));
            warmUp.countDown();
            CountDownLatch release = cleanup.gate();
            java.util.Map<String, java.time.Instant> started = new java.util.concurrent.ConcurrentHashMap<>();
            for (String context : List.of("b0", "b1")) {
                CountDownLatch running = new CountDownLatch(1);
                e.sequential(context).execute(() -> {
                    started.put(context, java.time.Instant.now());
                    running.countDown();
                    TestSupport.blockQuietly(release);
                });
                await(running, context + " to start");
                TestSupport.sleep(70); // the second starts at another point of the check period
            }
            for (String context : List.of("b0", "b1")) {
                RecordedEvent blocked = awaitEvent(events, "WorkerBlocked", name,
                        x -> context.equals(x.getString("context")));
                Duration ran = Duration.between(started.get(context), blocked.getStartTime());
                Duration reported = blocked.getDuration("runningFor");
                long shortBy = ran.minus(reported).toMillis();
                assertTrue(shortBy <= 50 && shortBy >= -50,
                        context + " had run " + ran.toMillis() + " ms, reported " + reported.toMillis() + " ms");
            }
            release.countDown();
        }
    }

    /**
     * Names the threads as the executor does when it makes them itself, and holds the checker until {@code gate} opens.
     */
    private static ThreadFactory namingFactoryWithHeldChecker(String name, CountDownLatch gate) {
        AtomicInteger coreNames = new AtomicInteger();
        AtomicInteger auxNames = new AtomicInteger();
        return r -> {
            Thread t;
            if (TestSupport.isChecker(r)) {
                t = TestSupport.heldChecker(r, gate);
                t.setName(name + "-checker");
            } else if (((Worker) ((StartGate) r).body()).core) {
                t = new Thread(r, name + "-core-" + coreNames.incrementAndGet());
            } else {
                t = new Thread(r, name + "-aux-" + auxNames.incrementAndGet());
            }
            t.setDaemon(true);
            return t;
        };
    }

    private static boolean isClass(RecordedEvent e, Class<?> type) {
        return e.getClass("taskClass") != null && e.getClass("taskClass").getName().equals(type.getName());
    }

}
