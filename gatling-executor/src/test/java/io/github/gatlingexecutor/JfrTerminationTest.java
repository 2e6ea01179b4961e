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
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The JFR events of an executor as it shuts down, terminates and is dropped: its last Statistics event, the
 * retirement of its workers at {@code shutdownNow}, the refusals of a shut-down executor (none is a TaskRejected), and
 * whether a recording keeps a closed executor reachable.
 */
class JfrTerminationTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    /**
     * The periodic Statistics event reports live executors only, so an executor that terminates between two periods
     * left its last figures out of the recording: a short-lived one (a batch's executor, say) was never reported at
     * all, and a longer-lived one's last event missed whatever it ran in its last period. A period of an hour keeps
     * the periodic hook out of it: only the event at termination can carry the figures asserted.
     */
    @Test
    @Timeout(60)
    void aTerminatingExecutorRecordsItsFinalFigures() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream()) {
            stream.enable(PREFIX + "Statistics").withPeriod(Duration.ofHours(1));
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-final").coreThreads(2)
                    .uncaughtExceptionHandler((t, x) -> { }).build());
            String name = e.name();
            for (int i = 0; i < 20; i++) {
                e.sequential("k" + (i % 3)).execute(() -> { });
            }
            e.execute(() -> {
                throw new IllegalStateException("counted in failed()");
            });
            e.close();
            ExecutorStatistics s = e.statistics();
            assertEquals(21, s.executed(), s.toString());
            RecordedEvent last = awaitEvent(events, "Statistics", name, x -> x.getLong("executed") == 21);
            assertEquals(21, last.getLong("submitted"), last.toString());
            assertEquals(1, last.getLong("failed"), last.toString());
            assertEquals(0, last.getLong("queued"), last.toString());
            assertEquals(0, last.getInt("threads"), last.toString());
            assertEquals(0, last.getInt("active"), last.toString());
            assertEquals(0, last.getLong("liveContexts"), last.toString());
            assertEquals(s.peakThreads(), last.getInt("peakThreads"), last.toString());
        }
    }

    /**
     * The periodic hook copies the live executors, then reports each: a copy taken before an executor's termination
     * and reported after it committed a Statistics event behind the final one, and the recording then ended on the
     * hook's figures. Here the hook's report of one executor is taken while it lives and run twice, before and after
     * its close; the second run must record nothing. A plain recording, stopped and read whole, so that an event
     * missing is not one still in flight. A period of an hour keeps JFR's own runs of the hook out of it.
     */
    @Test
    @Timeout(60)
    void noPeriodicStatisticsEventFollowsTheFinalOne() throws Exception {
        Path file = Files.createTempFile("jfr-final-last", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable(PREFIX + "Statistics").withPeriod(Duration.ofHours(1));
            recording.start();
            GatlingExecutor e = cleanup.track(gatling("jfr-final-last").coreThreads(1).build());
            String name = e.name();
            Runnable report = JfrRecorder.periodicReportOf(e.engine());
            CountDownLatch ran = new CountDownLatch(1);
            e.sequential("k").execute(ran::countDown);
            await(ran, "the task");
            report.run(); // live: recorded
            e.sequential("k").execute(() -> { });
            e.close();
            report.run(); // after the final event: must record nothing
            recording.stop();
            recording.dump(file);
            List<RecordedEvent> mine = new ArrayList<>();
            for (RecordedEvent x : RecordingFile.readAllEvents(file)) {
                if (is(x, "Statistics", name)) {
                    mine.add(x);
                }
            }
            mine.sort(Comparator.comparing(RecordedEvent::getStartTime));
            assertEquals(2, mine.size(), mine.toString());
            assertEquals(2, mine.get(1).getLong("executed"), mine.toString());
            assertEquals(0, mine.get(1).getInt("threads"), mine.toString());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /**
     * At {@code shutdownNow} every worker ends, each with one ThreadRetired event whose reason is the shutdown: two core
     * workers interrupted in a task and an auxiliary one started beside them. The scenario of JfrEventsTest ends with
     * {@code shutdown()} only. A JVM of its own: JDK 17's JFR pools strings of 17 to 127 characters once per JVM, and
     * in a recording that followed the other JFR tests' in this one, every reason read null.
     */
    @Test
    @Timeout(60)
    void everyWorkerRetiresForTheShutdownAtShutdownNow() throws Exception {
        String out = TestSupport.childJvmOutput(List.of(), RetiredAtShutdownNowChild.class);
        assertTrue(out.contains(RetiredAtShutdownNowChild.STARTED + "3, auxiliary 1"), out);
        assertTrue(out.contains(RetiredAtShutdownNowChild.RETIRED + "3, the same threads true, reasons "
                + "[executor shut down, executor shut down, executor shut down]"), out);
    }

    /** The child JVM of {@link #everyWorkerRetiresForTheShutdownAtShutdownNow}. */
    static final class RetiredAtShutdownNowChild {
        static final String STARTED = "child: started ";
        static final String RETIRED = "child: retired ";

        public static void main(String[] args) throws Exception {
            List<RecordedEvent> events = new CopyOnWriteArrayList<>();
            try (RecordingStream stream = new RecordingStream(shippedSettings())) {
                startCollecting(stream, events);
                GatlingExecutor e = GatlingExecutor.builder().name("retired-now").coreThreads(2).maxThreads(3)
                        .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(20))
                        .coreBumpThreshold(1_000).auxiliaryKeepAlive(Duration.ofMinutes(5)).build();
                CountDownLatch running = new CountDownLatch(2);
                CountDownLatch never = new CountDownLatch(1);
                for (int i = 0; i < 2; i++) {
                    e.sequential("held" + i).execute(() -> {
                        running.countDown();
                        TestSupport.blockQuietly(never); // ends at the interrupt
                    });
                }
                await(running, "both core workers held");
                CountDownLatch third = new CountDownLatch(1);
                e.sequential("other").execute(third::countDown); // every core worker is stuck: an auxiliary one runs it
                await(third, "the task of an auxiliary worker");
                List<Runnable> returned = e.shutdownNow();
                if (!returned.isEmpty() || !e.awaitTermination(20, TimeUnit.SECONDS)) {
                    System.out.println("child: returned " + returned + ", terminated " + e.isTerminated());
                    System.exit(2);
                }
                List<RecordedEvent> started = awaitEvents(events, "ThreadStarted", e.name(), 3);
                List<RecordedEvent> retired = awaitEvents(events, "ThreadRetired", e.name(), 3);
                Set<String> startedThreads = new HashSet<>();
                int auxiliary = 0;
                for (RecordedEvent x : started) {
                    startedThreads.add(x.getThread("worker").getJavaName());
                    auxiliary += x.getBoolean("auxiliary") ? 1 : 0;
                }
                Set<String> retiredThreads = new HashSet<>();
                List<String> reasons = new ArrayList<>();
                for (RecordedEvent x : retired) {
                    retiredThreads.add(x.getThread("worker").getJavaName());
                    reasons.add(x.getString("reason"));
                }
                System.out.println(STARTED + started.size() + ", auxiliary " + auxiliary);
                System.out.println(RETIRED + retired.size() + ", the same threads "
                        + startedThreads.equals(retiredThreads) + ", reasons " + reasons);
            }
            System.exit(0);
        }

        private RetiredAtShutdownNowChild() {
        }
    }

    /**
     * TaskRejected is the event of a refusal for capacity (README, "Observability: JFR"), as {@code rejected()} is its
     * count: a submitter parked for room that the shutdown refuses, an {@code offer} and an {@code execute} after it
     * are refusals for shutdown, and none may be recorded. A refusal for capacity made afterwards on another executor
     * closes the check: once its event is in, so would theirs be.
     */
    @Test
    @Timeout(60)
    void refusalsForShutdownRecordNoTaskRejected() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            startCollecting(stream, events);
            GatlingExecutor e = cleanup.track(gatling("jfr-shut").coreThreads(1).maxThreads(1).maxQueued(1)
                    .overflow(Overflow.block(Duration.ofMinutes(5))).build());
            String name = e.name();
            CountDownLatch gate = cleanup.occupy(e);
            e.execute(() -> { }); // the executor's one place
            AtomicInteger refusedForShutdown = new AtomicInteger();
            List<Thread> waiters = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                String context = "w" + i;
                Thread t = new Thread(() -> {
                    try {
                        e.sequential(context).execute(() -> { });
                    } catch (RejectedExecutionException expected) {
                        refusedForShutdown.incrementAndGet();
                    }
                }, name + "-waiter-" + i);
                t.start();
                waiters.add(t);
            }
            TestSupport.waitUntil("three submitters parked", () -> e.statistics().waitingSubmitters() == 3);
            e.shutdown();
            for (Thread t : waiters) {
                t.join(TimeUnit.SECONDS.toMillis(20));
                assertFalse(t.isAlive(), t.getName());
            }
            assertEquals(3, refusedForShutdown.get());
            assertFalse(e.offer(() -> { }));
            assertThrows(RejectedExecutionException.class, () -> e.sequential("late").execute(() -> { }));
            gate.countDown();
            assertTrue(e.awaitTermination(20, TimeUnit.SECONDS));
            assertEquals(0, e.statistics().rejected(), e.statistics().toString());

            GatlingExecutor full = cleanup.track(gatling("jfr-capacity").coreThreads(1).maxThreads(1).maxQueued(1)
                    .build());
            CountDownLatch fullGate = cleanup.occupy(full);
            full.execute(() -> { });
            assertFalse(full.offer(() -> { }));
            awaitEvent(events, "TaskRejected", full.name(), x -> true);
            fullGate.countDown();
            List<RecordedEvent> ofShutDown = new ArrayList<>();
            for (RecordedEvent x : events) {
                if (is(x, "TaskRejected", name)) {
                    ofShutDown.add(x);
                }
            }
            assertTrue(ofShutDown.isEmpty(), ofShutDown.toString());
        }
    }

    /**
     * A worker's ThreadStarted comes before its ThreadRetired. The thread that started the worker recorded the event
     * after the start, so a worker that ended before that thread went on (descheduled there, it ran its task and
     * retired at a {@code shutdownNow}) was recorded as retired, then as started: a consumer that counts workers from
     * the events read one below zero, and the event named a thread that had ended. No caller's code runs in that window:
     * the debugger holds the first thread that enters the event's recording while {@code shutdownNow} ends the
     * executor.
     */
    @Test
    @Timeout(60)
    void aWorkerIsRecordedAsStartedBeforeItIsRecordedAsRetired() throws Exception {
        DebuggedChild.Meeting meeting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(StartedLateChild.class, List.of(
                DebuggedChild.Spot.entry("starting", Jfr.class, "threadStarted"),
                DebuggedChild.Spot.entry("held", StartedLateChild.class, "held"),
                DebuggedChild.Spot.entry("release", StartedLateChild.class, "release")),
                (spot, thread, held) -> {
                    switch (spot) {
                        case "held": // the child's main thread, waiting for the recording thread to be held
                            return meeting.mainReady(thread);
                        case "starting":
                            return meeting.reached() || meeting.windowReached(thread, held); // the first one stays
                        default:
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertTrue(out.contains(StartedLateChild.ORDER + "[ThreadStarted, ThreadRetired]"), out);
    }

    /** The child JVM of {@link #aWorkerIsRecordedAsStartedBeforeItIsRecordedAsRetired}. */
    static final class StartedLateChild {
        static final String ORDER = "child: the worker's events in time order: ";

        public static void main(String[] args) throws Exception {
            try (Recording recording = new Recording()) {
                recording.enable(PREFIX + "ThreadStarted");
                recording.enable(PREFIX + "ThreadRetired");
                recording.start();
                GatlingExecutor e = GatlingExecutor.builder().name("started-late").coreThreads(1).build();
                Thread starter = new Thread(() -> e.execute(() -> { }), "starter");
                starter.setDaemon(true);
                starter.start();
                held(); // until a thread is held as it records the worker's start
                e.shutdownNow();
                e.awaitTermination(1, TimeUnit.SECONDS);
                release();
                starter.join(10_000);
                if (!e.awaitTermination(10, TimeUnit.SECONDS)) {
                    System.out.println("child: not terminated");
                    System.exit(2);
                }
                recording.stop();
                Path file = Files.createTempFile("started-late", ".jfr");
                try {
                    recording.dump(file);
                    List<RecordedEvent> events = new ArrayList<>();
                    for (RecordedEvent x : RecordingFile.readAllEvents(file)) {
                        String type = x.getEventType().getName();
                        if ((type.equals(PREFIX + "ThreadStarted") || type.equals(PREFIX + "ThreadRetired"))
                                && e.name().equals(x.getString("executor"))) {
                            events.add(x);
                        }
                    }
                    events.sort(Comparator.comparing(RecordedEvent::getStartTime));
                    List<String> order = new ArrayList<>();
                    for (RecordedEvent x : events) {
                        order.add(x.getEventType().getName().substring(PREFIX.length()));
                    }
                    System.out.println(ORDER + order);
                } finally {
                    Files.deleteIfExists(file);
                }
            }
            System.exit(0);
        }

        static void held() {
        }

        static void release() {
        }

        private StartedLateChild() {
        }
    }

    /**
     * A recording reports live executors and holds them weakly: a closed executor that nothing else references is
     * collected while the recording runs on and another executor keeps the Statistics hook registered.
     */
    @Test
    @Timeout(60)
    void aRecordingKeepsNoClosedExecutorReachable() throws Exception {
        try (RecordingStream stream = new RecordingStream(shippedSettings())) {
            stream.enable(PREFIX + "Statistics").withPeriod(Duration.ofMillis(10));
            stream.startAsync();
            GatlingExecutor other = cleanup.track(gatling("jfr-other").coreThreads(1).build());
            other.submit(() -> { }).get(20, TimeUnit.SECONDS);
            assertTrue(JfrRecorder.periodicRegistered());
            WeakReference<GatlingExecutor> closed = useAndClose();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            WeakReference<Object> canary = new WeakReference<>(new Object());
            while ((closed.get() != null || canary.get() != null) && System.nanoTime() - deadline < 0) {
                System.gc();
                TestSupport.sleep(10);
            }
            assertNull(canary.get(), "no collection took a weakly held object");
            assertNull(closed.get(), "the closed executor is still reachable");
            assertTrue(JfrRecorder.periodicRegistered(), "the live executor's hook went");
        }
    }

    /** Apart, so that no frame of the test keeps the executor. */
    private static WeakReference<GatlingExecutor> useAndClose() throws Exception {
        GatlingExecutor e = gatling("jfr-dropped").coreThreads(2).maxQueued(100).build();
        for (int i = 0; i < 10; i++) {
            e.sequential("k" + i).execute(() -> { });
        }
        e.submit(() -> { }).get(20, TimeUnit.SECONDS);
        e.close();
        return new WeakReference<>(e);
    }

}
