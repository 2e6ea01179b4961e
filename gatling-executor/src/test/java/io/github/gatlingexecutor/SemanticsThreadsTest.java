package io.github.gatlingexecutor;

import static io.github.gatlingexecutor.TestSupport.await;
import static io.github.gatlingexecutor.TestSupport.blockQuietly;
import static io.github.gatlingexecutor.TestSupport.gatling;
import static io.github.gatlingexecutor.TestSupport.liveThreads;
import static io.github.gatlingexecutor.TestSupport.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.gatlingexecutor.TestSupport.Seq;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** SPEC semantics 12: thread names, the checker, and no thread outliving termination. */
class SemanticsThreadsTest {

    @RegisterExtension
    final ExecutorValidation cleanup = new ExecutorValidation();


    @Test
    void threadsAreNamedAfterTheExecutorAndNoneOutlivesTermination() throws Exception {
        GatlingExecutor e = cleanup.track(gatling("names").coreThreads(2).maxThreads(6)
                .checkPeriod(Duration.ofMillis(30)).blockedThreshold(Duration.ofMillis(30)).build());
        String name = e.name();
        Set<Thread> workers = ConcurrentHashMap.newKeySet();
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(5);
        for (int i = 0; i < 5; i++) { // more blocked tasks than core threads: auxiliary threads start
            e.execute(new Seq("n" + i, () -> {
                workers.add(Thread.currentThread());
                started.countDown();
                blockQuietly(gate);
            }));
        }
        await(started, "five tasks on five threads");
        e.schedule(() -> { }, 10, TimeUnit.MILLISECONDS);
        Pattern core = Pattern.compile(Pattern.quote(name) + "-core-\\d+");
        Pattern aux = Pattern.compile(Pattern.quote(name) + "-aux-\\d+");
        int cores = 0;
        int auxes = 0;
        for (Thread t : workers) {
            if (core.matcher(t.getName()).matches()) {
                cores++;
            } else if (aux.matcher(t.getName()).matches()) {
                auxes++;
            } else {
                throw new AssertionError("worker thread with an unexpected name: " + t.getName());
            }
            assertFalse(t.isDaemon(), "default workers are non-daemon: " + t.getName());
        }
        assertTrue(cores >= 1 && auxes >= 1, "expected core and auxiliary workers: " + workers);
        waitUntil("the checker thread", () -> !liveThreads(name + "-checker").isEmpty());
        List<Thread> checkers = liveThreads(name + "-checker");
        assertEquals(1, checkers.size());
        assertEquals(name + "-checker", checkers.get(0).getName());
        assertTrue(checkers.get(0).isDaemon(), "the checker must be a daemon thread");
        for (Thread t : liveThreads(name + "-")) {
            String n = t.getName();
            assertTrue(core.matcher(n).matches() || aux.matcher(n).matches() || n.equals(name + "-checker"),
                    "unexpected thread " + n);
        }
        gate.countDown();
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        TestSupport.assertNoThreadOutlives(name + "-");
        for (Thread t : workers) {
            assertFalse(t.isAlive(), t.getName() + " outlived termination");
        }
    }

    @Test
    void noThreadOutlivesTerminationAfterShutdownNowOrClose() throws Exception {
        for (int variant = 0; variant < 2; variant++) {
            GatlingExecutor e = cleanup.track(gatling("names").coreThreads(2).maxThreads(4)
                    .checkPeriod(Duration.ofMillis(30)).blockedThreshold(Duration.ofMillis(30)).build());
            CountDownLatch started = new CountDownLatch(3);
            CountDownLatch gate = cleanup.gate();
            for (int i = 0; i < 3; i++) {
                e.execute(new Seq("v" + i, () -> {
                    started.countDown();
                    blockQuietly(gate);
                }));
            }
            await(started, "blocked tasks");
            e.scheduleAtFixedRate(() -> { }, 0, 5, TimeUnit.MILLISECONDS);
            if (variant == 0) {
                e.shutdownNow();
                assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
            } else {
                gate.countDown();
                e.close();
                assertTrue(e.isTerminated());
            }
            TestSupport.assertNoThreadOutlives(e.name() + "-");
        }
    }

    /**
     * "None outlives termination" to the letter: once {@code close}, {@code awaitTermination} or {@code isTerminated}
     * reports termination, every thread the factory made has ended, not merely left the executor's bookkeeping. A
     * worker or the checker used to be still in its exit for some microseconds after, in about one cycle of thirty.
     */
    @Test
    void everyThreadHasEndedWhenTerminationIsReported() throws Exception {
        for (int cycle = 0; cycle < 150; cycle++) {
            List<Thread> made = new CopyOnWriteArrayList<>();
            ThreadFactory factory = r -> {
                Thread t = new Thread(r);
                made.add(t);
                return t;
            };
            GatlingExecutor e = cleanup.track(gatling("ended").coreThreads(2).threadFactory(factory).build());
            CountDownLatch ran = new CountDownLatch(3);
            e.execute(ran::countDown);
            e.sequential("c").execute(ran::countDown);
            e.schedule(ran::countDown, 1, TimeUnit.MILLISECONDS); // a delayed task, for the checker to dispatch
            await(ran, "the tasks of cycle " + cycle);
            String how;
            if (cycle % 3 == 0) {
                how = "close()";
                e.close();
            } else if (cycle % 3 == 1) {
                how = "awaitTermination";
                e.shutdown();
                assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
            } else {
                how = "isTerminated()";
                e.shutdown();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TestSupport.TIMEOUT_SECONDS);
                while (!e.isTerminated()) { // no sleep between the reads: the window is microseconds wide
                    assertTrue(System.nanoTime() - deadline < 0, "cycle " + cycle + ": never terminated");
                    Thread.onSpinWait();
                }
            }
            for (Thread t : made) {
                assertFalse(t.isAlive(), "cycle " + cycle + ": " + t.getName() + " (" + t.getState()
                        + ") was alive after " + how + " reported termination");
            }
        }
    }

    /**
     * {@code isTerminated()} reads false while a thread of the executor still runs, even once the executor has
     * terminated as far as its own work goes: here the factory's threads go on running code of the factory's after
     * the worker's and the checker's loops return, held there by a gate. SPEC 12: no thread outlives termination. The
     * cycles of {@link #everyThreadHasEndedWhenTerminationIsReported} meet such a thread only in its last
     * microseconds, now and then; this holds the window open.
     */
    @Test
    void isTerminatedReadsFalseWhileAThreadOfTheExecutorStillRuns() throws Exception {
        CountDownLatch linger = cleanup.gate();
        List<Thread> made = new CopyOnWriteArrayList<>();
        Set<Thread> lingering = ConcurrentHashMap.newKeySet();
        ThreadFactory factory = r -> {
            Thread t = new Thread(() -> {
                r.run();
                lingering.add(Thread.currentThread());
                blockQuietly(linger);
            });
            made.add(t);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("linger").coreThreads(1).threadFactory(factory).build());
        CountDownLatch ran = new CountDownLatch(2);
        e.execute(ran::countDown);
        e.schedule(ran::countDown, 1, TimeUnit.MILLISECONDS); // the checker's thread too
        await(ran, "the tasks");
        e.shutdown();
        waitUntil("every thread to leave the executor's code, and the executor to terminate",
                () -> e.engine().isTerminated() && lingering.size() == made.size());
        assertFalse(e.isTerminated(), "isTerminated() while " + made.size() + " threads of the executor still run");
        assertFalse(e.awaitTermination(20, TimeUnit.MILLISECONDS), "awaitTermination while threads still run");
        linger.countDown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        assertTrue(e.isTerminated());
        for (Thread t : made) {
            assertFalse(t.isAlive(), t.getName() + " alive after termination was reported");
        }
    }

    @Test
    void aGivenThreadFactoryMakesEveryThreadTheCheckerIncluded() throws Exception {
        Set<Thread> made = ConcurrentHashMap.newKeySet();
        Set<Thread> checkers = ConcurrentHashMap.newKeySet();
        AtomicInteger n = new AtomicInteger();
        ThreadFactory factory = r -> {
            Thread t = new Thread(r, "custom-thread-" + n.incrementAndGet());
            (TestSupport.isChecker(r) ? checkers : made).add(t);
            return t;
        };
        GatlingExecutor e = cleanup.track(gatling("names").coreThreads(2).threadFactory(factory)
                .checkPeriod(Duration.ofMillis(30)).blockedThreshold(Duration.ofMillis(30)).build());
        Set<Thread> ranOn = ConcurrentHashMap.newKeySet();
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(3);
        for (int i = 0; i < 3; i++) {
            e.execute(new Seq("f" + i, () -> {
                ranOn.add(Thread.currentThread());
                started.countDown();
                blockQuietly(gate);
            }));
        }
        await(started, "tasks on factory threads");
        assertTrue(made.containsAll(ranOn), "a task ran on a thread the factory did not make: " + ranOn);
        e.schedule(() -> { }, 1, TimeUnit.MILLISECONDS);
        assertEquals(1, checkers.size(), "the factory made the checker, once");
        assertTrue(liveThreads(e.name() + "-checker").isEmpty(), "a thread of the executor's own beside the factory's");
        gate.countDown();
        e.shutdown();
        assertTrue(e.awaitTermination(TestSupport.TIMEOUT_SECONDS, TimeUnit.SECONDS));
        made.addAll(checkers);
        for (Thread t : made) {
            assertFalse(t.isAlive(), t.getName() + " outlived termination");
        }
        TestSupport.assertNoThreadOutlives(e.name() + "-");
    }

    private static final InheritableThreadLocal<Object> CARRIED = new InheritableThreadLocal<>();

    /**
     * The executor's own threads start lazily, on whichever thread finds one missing: a core worker and the checker on
     * a submitter, an auxiliary worker on the checker. Each took from that thread what {@code new Thread} copies: its
     * inheritable thread-local values (kept for the executor's life, and seen by every task of every context that ran
     * there), its context class loader and, for the checker, its priority. They now have the class loader of the
     * thread that built the executor, normal priority and no inherited thread-local values, whoever starts them; as
     * {@code Executors.defaultThreadFactory()} gives normal priority whoever asks. A given factory decides for itself.
     */
    @Test
    void theExecutorsOwnThreadsTakeNothingFromTheThreadThatStartsThem() throws Exception {
        ClassLoader builderLoader = new URLClassLoader(new URL[0], getClass().getClassLoader());
        ClassLoader submitterLoader = new URLClassLoader(new URL[0], getClass().getClassLoader());
        Thread self = Thread.currentThread();
        ClassLoader own = self.getContextClassLoader();
        GatlingExecutor e;
        self.setContextClassLoader(builderLoader);
        try {
            e = cleanup.track(gatling("inherit").coreThreads(1).maxThreads(2)
                    .checkPeriod(Duration.ofMillis(20)).blockedThreshold(Duration.ofMillis(20)).build());
        } finally {
            self.setContextClassLoader(own);
        }
        CountDownLatch gate = cleanup.gate();
        CountDownLatch started = new CountDownLatch(2);
        List<String> seen = new CopyOnWriteArrayList<>();
        Runnable probe = () -> {
            Thread t = Thread.currentThread();
            seen.add(t.getName() + ": carried " + CARRIED.get() + ", loader "
                    + (t.getContextClassLoader() == builderLoader ? "builder's" : t.getContextClassLoader())
                    + ", priority " + t.getPriority());
            started.countDown();
            blockQuietly(gate);
        };
        // The first task starts the core worker and the checker on the submitter; the second waits behind it until
        // the checker finds the worker blocked and starts an auxiliary one on its own thread.
        WeakReference<Object> carried = submitFromAThreadOfItsOwn(submitterLoader,
                () -> e.execute(new Seq("first", probe)), () -> e.execute(new Seq("second", probe)));
        await(started, "both tasks, on the core worker and on an auxiliary one");
        List<Thread> checkers = liveThreads(e.name() + "-checker");
        assertEquals(1, checkers.size());
        Thread checker = checkers.get(0);
        seen.add(checker.getName() + ": loader "
                + (checker.getContextClassLoader() == builderLoader ? "builder's" : checker.getContextClassLoader())
                + ", priority " + checker.getPriority());
        for (String s : seen) {
            assertTrue(s.endsWith("loader builder's, priority " + Thread.NORM_PRIORITY)
                    && !s.contains("carried value"), "an executor thread took after its starter: " + seen);
        }
        // Every one of the executor's threads is alive here: none may keep the starter's value reachable.
        waitUntil("the submitter's thread-local value collected while the executor's threads live", () -> {
            System.gc();
            return carried.get() == null;
        }, seen::toString, 5_000);
        gate.countDown();
    }

    /** Runs the submits on a new thread of minimum priority that holds a thread-local value; returns a weak ref to it. */
    private static WeakReference<Object> submitFromAThreadOfItsOwn(ClassLoader loader, Runnable... submits)
            throws InterruptedException {
        Object value = new Object() {
            @Override
            public String toString() {
                return "carried value";
            }
        };
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread submitter = new Thread(() -> {
            CARRIED.set(value);
            try {
                for (Runnable submit : submits) {
                    submit.run();
                }
            } catch (Throwable t) {
                failure.set(t);
            } finally {
                CARRIED.remove();
            }
        }, "inherit-submitter");
        submitter.setPriority(Thread.MIN_PRIORITY);
        submitter.setContextClassLoader(loader);
        submitter.start();
        submitter.join();
        if (failure.get() != null) {
            throw new AssertionError("a submit failed", failure.get());
        }
        return new WeakReference<>(value);
    }

    @Test
    void noThreadStartsBeforeWorkArrives() {
        GatlingExecutor e = cleanup.track(gatling("names").coreThreads(4).build());
        assertEquals(0, e.statistics().threads());
        assertTrue(liveThreads(e.name() + "-core-").isEmpty(), "core threads started before any work");
    }
}
