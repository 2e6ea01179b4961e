package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What a thread sees of the tasks' effects through each edge a {@code java.util.concurrent} user relies on (the
 * package's "Memory Consistency Properties", SPEC point 2): a submit before its task, a task before the next of its
 * context, a task before {@code Future.get()}, and every task before a thread that has seen the executor terminate,
 * its figures included.
 */
class MemoryEffectsTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();

    /**
     * A thread that has seen the executor terminate sees its figures final: a submit counts its task once it knows
     * it was accepted, after the offer that let a worker see it, and the task could run (or be returned by
     * {@code shutdownNow}) and the executor terminate in between. The submit's own count then came after termination
     * (hidden in {@code submitted()}, which is never read below what ran, was returned or coalesced), and so did a
     * replacement's count in {@code coalesced()}, which rose after termination. No caller's code runs there, so the
     * debugger holds the submitter there while the executor shuts down and its one worker, let go, runs what is
     * queued: a sequential task behind a running one, a plain task, and a coalescing task that replaced a pending one
     * (held just after its CAS, before it counts the task it replaced).
     */
    @ParameterizedTest
    @CsvSource({"sequential, shutdown", "sequential, shutdownNow", "plain, shutdown", "plain, shutdownNow",
                "coalescing, shutdown", "coalescing, shutdownNow"})
    void aSubmitIsCountedBeforeTheExecutorTerminates(String kind, String stop) throws Exception {
        List<String> hits = new ArrayList<>();
        DebuggedChild.Meeting counting = new DebuggedChild.Meeting();
        String out = DebuggedChild.run(CountedAtTerminationChild.class, kind + " " + stop, List.of(
                DebuggedChild.Spot.entry("count", SubmitCounter.class, "commit"),
                DebuggedChild.Spot.line("count", CoalescingLane.class, "SUBMITTED.getAndAdd(this, 1L);"),
                DebuggedChild.Spot.entry("held", CountedAtTerminationChild.class, "held"),
                DebuggedChild.Spot.entry("read", CountedAtTerminationChild.class, "read")),
                (spot, thread, held) -> {
                    switch (spot) {
                        case "count":
                            if (!CountedAtTerminationChild.SUBMITTER.equals(thread.name()) || counting.reached()) {
                                return true;
                            }
                            hits.add(spot);
                            return counting.windowReached(thread, held);
                        case "held":
                            return counting.mainReady(thread);
                        default:
                            hits.add(spot);
                            DebuggedChild.resumeAll(held);
                            return true;
                    }
                });
        assertEquals(List.of("count", "read"), hits, out);
        boolean now = stop.equals("shutdownNow");
        boolean coalescing = kind.equals("coalescing");
        // The first task ran; with shutdownNow the held submitter's task was returned, else it ran.
        String figures = "submitted " + (coalescing ? 3 : 2) + ", executed " + (now ? 1 : 2) + ", coalesced "
                + (coalescing ? 1 : 0) + ", returned " + (now ? 1 : 0);
        assertTrue(out.contains(CountedAtTerminationChild.AFTER + "terminated true, " + figures), out);
        // Before the fix: "terminated true" here, and for the replacement "coalesced 0", then 1.
        assertTrue(out.contains(CountedAtTerminationChild.HELD + "terminated false"), out);
    }

    /** The child JVM of {@link #aSubmitIsCountedBeforeTheExecutorTerminates}: its kind and its stop as arguments. */
    static final class CountedAtTerminationChild {
        static final String SUBMITTER = "submitter";
        static final String HELD = "child: while the count is held: ";
        static final String AFTER = "child: at the end: ";

        public static void main(String[] args) throws Exception {
            String kind = args[0];
            boolean now = args[1].equals("shutdownNow");
            GatlingExecutor e = GatlingExecutor.builder().name("counted-at-termination").coreThreads(1).maxThreads(1)
                    .build();
            CountDownLatch gate = new CountDownLatch(1);
            Runnable queued;
            if (kind.equals("coalescing")) {
                TestSupport.hold(e.coalescing("k"), gate);
                e.execute(new TestSupport.Coal("k", () -> { })); // pending behind the running task
                queued = new TestSupport.Coal("k", () -> { });   // replaces it
            } else {
                TestSupport.hold(e.sequential("k"), gate);
                // Behind the running task: the lane is active, so the task is queued before the submit counts it.
                queued = kind.equals("plain") ? () -> { } : new TestSupport.Seq("k", () -> { });
            }
            Thread submitter = new Thread(() -> e.execute(queued), SUBMITTER);
            submitter.setDaemon(true);
            submitter.start();
            held(); // until the submitter is held at its count
            if (now) {
                System.out.println("child: returned " + e.shutdownNow().size());
            } else {
                e.shutdown();
            }
            gate.countDown(); // the worker runs what is queued (unless returned), then finds nothing left
            boolean terminated = e.awaitTermination(1, TimeUnit.SECONDS);
            System.out.println(HELD + "terminated " + terminated + ", " + figures(e.statistics()));
            read();
            submitter.join(10_000);
            terminated = e.awaitTermination(10, TimeUnit.SECONDS);
            System.out.println(AFTER + "terminated " + terminated + ", " + figures(e.statistics()));
            System.exit(0);
        }

        private static String figures(ExecutorStatistics s) {
            return "submitted " + s.submitted() + ", executed " + s.executed() + ", coalesced " + s.coalesced()
                    + ", returned " + s.returned();
        }

        static void held() {
        }

        static void read() {
        }

        private CountedAtTerminationChild() {
        }
    }

    /**
     * Plain per-task state, written by the submitter before each submit and read by the task, then written by the task
     * and read by the caller once {@code close()} has returned: no field here is volatile or final past its array, so
     * only the executor's edges order these reads after those writes. Every way in is used (a lane handle, each kind
     * through {@code execute}, {@code submit}, {@code schedule} due at once and later, {@code invokeAll}), and one task
     * in seven throws, so the figures read after termination must count exactly what ran and failed. On x86 a missing
     * edge rarely shows as a stale read; a termination or a {@code get()} that came before a task ended shows at once.
     */
    @Test
    void everyTaskSeesItsSubmittersWritesAndTheCallerSeesEveryTaskAfterClose() throws Exception {
        GatlingExecutor e = cleanup.track(TestSupport.gatling("effects").coreThreads(2).maxThreads(4).build());
        int rounds = 4_000;
        int[] given = new int[rounds]; // written by the submitter before the submit
        int[] seen = new int[rounds];  // written by the task: what it read of given, plus one
        int failing = 0;
        List<Future<?>> futures = new ArrayList<>();
        Executor handle = e.sequential("handle");
        for (int i = 0; i < rounds; i++) {
            int n = i;
            given[n] = n + 1;
            boolean fails = n % 7 == 3;
            failing += fails ? 1 : 0;
            Runnable body = () -> {
                seen[n] = given[n] + 1;
                if (fails) {
                    throw new IllegalStateException("task " + n + " fails on purpose");
                }
            };
            switch (n % 7) {
                case 0:
                    handle.execute(body);
                    break;
                case 1:
                    e.execute(new TestSupport.Seq("s" + n % 5, body));
                    break;
                case 2:
                    e.execute(new TestSupport.Coal("c" + n, body)); // a context of its own: never replaced
                    break;
                case 3:
                    futures.add(e.submit(body)); // the one that fails, through its future
                    break;
                case 4:
                    futures.add(e.schedule(body, n % 2, TimeUnit.MILLISECONDS));
                    break;
                case 5:
                    futures.addAll(e.invokeAll(List.of(Executors.callable(body))));
                    break;
                default:
                    e.execute(body);
                    break;
            }
        }
        e.close();
        int missing = 0;
        for (int i = 0; i < rounds; i++) {
            if (seen[i] != i + 2) {
                missing++;
            }
        }
        assertEquals(0, missing, "tasks whose submitter's write or own write was not seen");
        for (Future<?> f : futures) {
            assertTrue(f.isDone(), "a future not done after close(): " + f);
        }
        ExecutorStatistics s = e.statistics();
        assertEquals(rounds, s.executed(), s::toString);
        assertEquals(failing, s.failed(), s::toString);
        assertEquals(rounds, s.submitted(), s::toString);
    }

    /**
     * One context's tasks pass a plain object graph from each to the next while the context moves: with pauses longer
     * than the idle grace between some submits, the lane is released and made anew, so the next task runs in another
     * lane object on whichever worker is free; coalescing and periodic tasks do the same through their own paths. The
     * submitter never waits for a task, so nothing but the executor orders one task after the other.
     */
    @Test
    void aContextsTasksSeeEachOthersWritesAcrossReleasesWorkersAndRuns() throws Exception {
        GatlingExecutor e = cleanup.track(TestSupport.gatling("chain").coreThreads(2).maxThreads(4).build());
        final class Chain {
            int[] values = new int[0];
            int length;
            int broken;

            void step(int expected) {
                int[] v = values;
                if (length != expected || v.length != expected || (expected > 0 && v[expected - 1] != expected)) {
                    broken++;
                }
                int[] next = java.util.Arrays.copyOf(v, v.length + 1);
                next[v.length] = v.length + 1;
                values = next;
                length = next.length;
            }
        }
        int contexts = 4;
        int perContext = 400;
        Chain[] chains = new Chain[contexts];
        for (int c = 0; c < contexts; c++) {
            chains[c] = new Chain();
        }
        Chain periodic = new Chain();
        int[] periodicRuns = {0}; // plain: only the task's own runs touch it
        CountDownLatch periodicDone = new CountDownLatch(1);
        // Unordered: only the periodic task's own reschedule orders one run after the other.
        ScheduledFuture<?> ticking = e.scheduleWithFixedDelay(() -> {
            periodic.step(periodicRuns[0]);
            if (++periodicRuns[0] == 100) {
                periodicDone.countDown();
            }
        }, 0, 50, TimeUnit.MICROSECONDS);
        Chain coalescing = new Chain();
        int[] coalescedRuns = {0};
        for (int i = 0; i < perContext; i++) {
            for (int c = 0; c < contexts; c++) {
                Chain chain = chains[c];
                int expected = i;
                e.execute(new TestSupport.Seq("chain-" + c, () -> chain.step(expected)));
            }
            e.execute(new TestSupport.Coal("latest", () -> coalescing.step(coalescedRuns[0]++)));
            if (i % 40 == 39) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(8)); // past the idle grace: lanes are released
            }
        }
        TestSupport.await(periodicDone, "100 periodic runs");
        ticking.cancel(false);
        e.close();
        for (int c = 0; c < contexts; c++) {
            assertEquals(0, chains[c].broken, "context " + c + ": a task missed its predecessor's writes");
            assertEquals(perContext, chains[c].length, "context " + c);
        }
        assertEquals(0, coalescing.broken, "a coalescing run missed the previous run's writes");
        assertEquals(coalescedRuns[0], coalescing.length);
        assertEquals(0, periodic.broken, "a periodic run missed the previous run's writes");
        assertTrue(periodicRuns[0] >= 100, "periodic runs: " + periodicRuns[0]);
        assertEquals(periodicRuns[0], periodic.length);
    }
}
