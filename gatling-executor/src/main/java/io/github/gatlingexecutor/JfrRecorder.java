package io.github.gatlingexecutor;

import io.github.gatlingexecutor.jfr.ContextTransferredEvent;
import io.github.gatlingexecutor.jfr.CoreBumpEvent;
import io.github.gatlingexecutor.jfr.SlowTaskEvent;
import io.github.gatlingexecutor.jfr.StatisticsEvent;
import io.github.gatlingexecutor.jfr.TaskRejectedEvent;
import io.github.gatlingexecutor.jfr.ThreadRetiredEvent;
import io.github.gatlingexecutor.jfr.ThreadStartedEvent;
import io.github.gatlingexecutor.jfr.WorkerBlockedEvent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;
import jdk.jfr.Recording;

/**
 * The JFR side of {@link Jfr}; loaded only when {@code jdk.jfr} is readable. Every event is created, asked
 * {@code isEnabled()} and only then filled in: with no recording (or the event disabled) nothing is built, and the
 * JIT removes the allocation. Strings for contexts are made only for events that will be committed.
 */
final class JfrRecorder {
    /** Executors not yet terminated, for the periodic statistics event; weak, so a forgotten executor is not kept. */
    private static final Map<Engine, Boolean> LIVE = Collections.synchronizedMap(new WeakHashMap<>());
    /**
     * Registered by the first poll that finds JFR in use ({@link #inUse}) and some executor live (an executor's build,
     * a checker's round, a recording's start): the hook reports every live executor. Removed when the last one
     * terminates, or by the hook itself when every executor was collected without terminating: JFR holds its hooks
     * strongly, and a hook left registered kept this class, and its class loader, for the JVM's life (a redeployed
     * application's loader was never collected once a recording had run). Both under this class's lock, as is every
     * change of {@link #LIVE}'s emptiness that decides them. Left alone: the hook of executors collected after the last
     * recording of their statistics stopped stays until JFR next runs it.
     */
    private static volatile boolean periodicRegistered;
    private static final Runnable PERIODIC = JfrRecorder::emitStatistics;
    /**
     * Told of the first recording that starts while an executor lives and JFR is not yet in use: it polls, so the
     * periodic hook is registered even if no executor ever runs a thread (an executor built before JFR was in use and
     * never used got no Statistics event), and the SlowTask flag is read at the recording's start. Once JFR is in use it
     * has done its work (a build polls at once, workers and checkers refresh the flag), so it goes at that first call.
     * JFR calls it holding its recorder's lock or none; this class's lock is only ever taken after that one.
     *
     * <p>Added and removed outside this class's lock (see {@link #reconcileListener}), and only while JFR is not in
     * use: JFR adds and removes listeners under a lock of its own, and holds that lock while it tells listeners that it
     * has initialized (at its initialization, and to each listener added later). An application's listener may build
     * or close an executor there, holding that lock: a build or termination that waited for it would then wait for
     * good. A termination once JFR is in use leaves the listener to its next call.
     *
     * <p>Held strongly by JFR. Left alone: executors built before JFR's first use and collected without terminating
     * leave it (and this class, and its class loader) registered until a recording next starts, stops or closes, or
     * another executor of this class is built and terminated before JFR is used; in a JVM where JFR is never used, for
     * good (README, "Known limits"); so do executors terminated after JFR was initialized with no recording yet, until
     * the first one starts. Adding it costs the first executor of a JVM a few milliseconds (JFR checks that the VM
     * supports it: 6 to 15 ms on JDK 17 here, 2 on JDK 25), and loads none of the event machinery.
     */
    private static final FlightRecorderListener LISTENER = new FlightRecorderListener() {
        @Override
        public void recordingStateChanged(Recording recording) {
            poll();
            removeHookIfNoneLive(); // every executor may have been collected without terminating
            reconcileListener(true); // JFR is in use: not wanted any more
        }
    };
    /** Whether {@link #LISTENER} is added, as of the last add or remove that completed; under this class's lock. */
    private static boolean listening;
    /** Whether a thread is in {@link #reconcileListener}'s add or remove; under this class's lock. */
    private static boolean reconciling;
    /**
     * Whether a recording times tasks now. Refreshed when an executor is built, when the first recording starts
     * ({@link #LISTENER}), by the checker on each round ({@link #poll}) and by a worker as it starts and when a
     * submitter woke it from its park ({@link #refreshSlowTask}), so a worker pays one read per task instead of creating
     * an event to ask: an event returned out of {@link #beginSlowTask} escapes, so the JIT could not remove that
     * allocation. A refresh that read the old setting just before a recording started may store it after the
     * listener's: the flag is then right again at the next refresh, within a check period of any executor whose
     * checker runs. A setting changed inside a running recording is read at the next refresh too.
     */
    static volatile boolean slowTaskEnabled;

    private JfrRecorder() {
    }

    static void executorCreated(Engine engine) {
        synchronized (JfrRecorder.class) {
            LIVE.put(engine, Boolean.TRUE);
        }
        reconcileListener(false);
        // A recording already running (started with the JVM, say) applies from the executor's first task: waiting for
        // its checker's first look missed the tasks that began before it, and an executor that had started no thread
        // yet got no Statistics event. Nothing is done while JFR is not in use (one static volatile read).
        poll();
    }

    static void executorTerminated(Engine engine) {
        synchronized (JfrRecorder.class) {
            LIVE.remove(engine);
        }
        removeHookIfNoneLive();
        reconcileListener(false);
    }

    /**
     * Removes the periodic hook if no executor lives. Also called by the hook itself and by the listener (JFR runs
     * them holding its recorder's lock or none, and its lists of hooks and listeners may be changed while it walks
     * them).
     */
    private static void removeHookIfNoneLive() {
        synchronized (JfrRecorder.class) {
            if (periodicRegistered && LIVE.isEmpty()) {
                FlightRecorder.removePeriodicEvent(PERIODIC);
                periodicRegistered = false;
            }
        }
    }

    /**
     * Adds the listener while an executor lives and JFR is not in use, and removes it otherwise, calling JFR outside
     * this class's lock; once JFR is in use, only when JFR itself calls ({@code toldByJfr}: the listener), never from
     * a build or a termination (see {@link #LISTENER}). One thread at a time makes the calls; one that finds another at
     * it leaves the work to it, which looks again after each call that succeeded. After an add, a poll: a recording
     * that started before the listener was added was not told to it.
     */
    private static void reconcileListener(boolean toldByJfr) {
        for (;;) {
            boolean add;
            synchronized (JfrRecorder.class) {
                boolean inUse = inUse();
                add = !LIVE.isEmpty() && !inUse;
                if (reconciling || add == listening || (inUse && !toldByJfr)) {
                    return;
                }
                reconciling = true;
            }
            boolean done = false;
            try {
                if (add) {
                    FlightRecorder.addListener(LISTENER);
                } else {
                    FlightRecorder.removeListener(LISTENER);
                }
                done = true;
            } catch (RuntimeException refused) {
                // Denied by a security manager: executors work all the same, the listener only saves waiting for a
                // checker's round. Tried again at the next call.
            } finally {
                synchronized (JfrRecorder.class) {
                    reconciling = false;
                    if (done) {
                        listening = add;
                    }
                }
            }
            if (!done) {
                return;
            }
            if (add) {
                poll();
            }
        }
    }

    /** Whether the periodic hook is registered now (for tests). */
    static boolean periodicRegistered() {
        return periodicRegistered;
    }

    /**
     * Whether JFR has been initialized in this JVM (a recording was started: by a command-line flag, jcmd, JMX or the
     * API). Until then no event can be enabled, and the first event object created would load JFR's event machinery:
     * about 150 ms on the thread that does it (the checker, say, with every scheduled task due meanwhile waiting for
     * it; or a submitter starting a worker). So no event is created before this reads true. A static volatile read.
     */
    private static boolean inUse() {
        return FlightRecorder.isInitialized();
    }

    static void poll() {
        if (!refreshSlowTask()) {
            return; // slowTaskEnabled is still false: it is set only once JFR is in use
        }
        if (!periodicRegistered) {
            synchronized (JfrRecorder.class) {
                if (!periodicRegistered && !LIVE.isEmpty()) {
                    FlightRecorder.addPeriodicEvent(StatisticsEvent.class, PERIODIC);
                    periodicRegistered = true;
                }
            }
        }
    }

    /**
     * Refreshes {@link #slowTaskEnabled} once JFR is in use; returns whether it is. Written only when it changes: every
     * woken worker of every executor refreshes it, and a store per wake-up would keep moving its line between cores.
     */
    static boolean refreshSlowTask() {
        if (!inUse()) {
            return false;
        }
        boolean enabled = new SlowTaskEvent().isEnabled();
        if (slowTaskEnabled != enabled) {
            slowTaskEnabled = enabled;
        }
        return true;
    }

    private static void emitStatistics() {
        List<Engine> engines;
        synchronized (LIVE) {
            engines = new ArrayList<>(LIVE.keySet());
        }
        if (engines.isEmpty()) {
            // Every executor was collected without terminating (built and dropped, never used or closed): nothing else
            // removes the hook, which kept this class and its loader registered with JFR (an outside audit).
            removeHookIfNoneLive();
            return;
        }
        for (Engine engine : engines) {
            StatisticsEvent e = new StatisticsEvent();
            if (!e.isEnabled()) {
                return;
            }
            ExecutorStatistics s = engine.snapshots.executor();
            e.executor = engine.settings.name;
            e.submitted = s.submitted();
            e.executed = s.executed();
            e.coalesced = s.coalesced();
            e.failed = s.failed();
            e.returned = s.returned();
            e.queued = s.queued();
            e.liveContexts = s.liveContexts();
            e.threads = s.threads();
            e.peakThreads = s.peakThreads();
            e.coreThreads = s.coreThreads();
            e.auxiliaryThreadsStarted = s.auxiliaryThreadsStarted();
            e.coreBumps = s.coreBumps();
            e.transfers = s.transfers();
            e.blockedDetections = s.blockedDetections();
            e.threadStartFailures = s.threadStartFailures();
            e.active = s.active();
            e.maxThreads = s.maxThreads();
            e.rejected = s.rejected();
            e.waitingSubmitters = s.waitingSubmitters();
            e.acceptedOverLimit = s.acceptedOverLimit();
            e.oldestQueuedAge = s.oldestQueuedAge().toNanos();
            e.delayed = s.delayed();
            e.commit();
        }
    }

    static void workerBlocked(Engine engine, Worker worker, long runningForNanos) {
        if (!inUse()) {
            return;
        }
        WorkerBlockedEvent e = new WorkerBlockedEvent();
        if (e.isEnabled()) {
            e.executor = engine.settings.name;
            e.worker = worker.thread;
            e.context = contextOf(worker.currentLane);
            e.taskClass = taskClass(worker.runningTask);
            e.runningFor = runningForNanos;
            e.commit();
        }
    }

    static void threadStarted(Engine engine, Worker worker, String reason) {
        if (!inUse()) {
            return;
        }
        ThreadStartedEvent e = new ThreadStartedEvent();
        if (e.isEnabled()) {
            e.executor = engine.settings.name;
            e.worker = worker.thread;
            e.auxiliary = !worker.core;
            e.reason = reason;
            e.commit();
        }
    }

    static void threadRetired(Engine engine, Worker worker, String reason) {
        if (!inUse()) {
            return;
        }
        ThreadRetiredEvent e = new ThreadRetiredEvent();
        if (e.isEnabled()) {
            e.executor = engine.settings.name;
            e.worker = worker.thread;
            e.auxiliary = !worker.core;
            e.reason = reason;
            e.commit();
        }
    }

    static void coreBump(Engine engine, int coreThreads, long auxiliaryStarted) {
        if (!inUse()) {
            return;
        }
        CoreBumpEvent e = new CoreBumpEvent();
        if (e.isEnabled()) {
            e.executor = engine.settings.name;
            e.coreThreads = coreThreads;
            e.auxiliaryThreadsStarted = auxiliaryStarted;
            e.commit();
        }
    }

    static void contextTransferred(Engine engine, Object context, boolean coalescing, int previousWorker,
                                   int worker) {
        if (!inUse()) {
            return;
        }
        ContextTransferredEvent e = new ContextTransferredEvent();
        if (e.isEnabled()) {
            e.executor = engine.settings.name;
            e.context = Messages.describe(context);
            e.coalescing = coalescing;
            e.previousWorker = previousWorker;
            e.worker = worker;
            e.commit();
        }
    }

    static boolean taskRejectedEnabled() {
        return inUse() && new TaskRejectedEvent().isEnabled();
    }

    static void taskRejected(Engine engine, Object context, String limit) {
        if (!inUse()) {
            return;
        }
        TaskRejectedEvent e = new TaskRejectedEvent();
        if (e.isEnabled()) {
            e.executor = engine.settings.name;
            e.context = context == null ? "" : Messages.describe(context);
            e.limit = limit;
            e.commit();
        }
    }

    static Object beginSlowTask() {
        SlowTaskEvent e = new SlowTaskEvent();
        e.begin();
        return e;
    }

    static void endSlowTask(Object token, Engine engine, Lane lane, Runnable task) {
        SlowTaskEvent e = (SlowTaskEvent) token;
        e.end();
        if (e.shouldCommit()) {
            e.executor = engine.settings.name;
            e.context = contextOf(lane);
            e.taskClass = taskClass(task);
            e.commit();
        }
    }

    private static String contextOf(Lane lane) {
        return lane == null ? "" : Messages.describe(lane.context);
    }

    /** The caller's task class, not the future that wraps it. */
    private static Class<?> taskClass(Runnable task) {
        if (task == null) {
            return null;
        }
        return task instanceof TaskFuture ? ((TaskFuture<?>) task).userTaskClass() : task.getClass();
    }
}
