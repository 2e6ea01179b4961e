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
import jdk.jfr.Event;
import jdk.jfr.FlightRecorder;

/**
 * The JFR side of {@link Jfr}; loaded only when {@code jdk.jfr} is readable. Every event is created, asked
 * {@code isEnabled()} and only then filled in: with no recording (or the event disabled) nothing is built, and the
 * JIT removes the allocation. Strings for contexts are made only for events that will be committed.
 */
final class JfrRecorder {
    /**
     * Executors not yet terminated, for the periodic statistics event; weak, so a forgotten executor is not kept. Each
     * maps to its own monitor, which orders its periodic reports against its final one (see {@link #report}).
     */
    private static final Map<Engine, Object> LIVE = Collections.synchronizedMap(new WeakHashMap<>());
    /**
     * Registered by the first {@link #poll} (an executor's build, or a checker's round) that finds JFR in use
     * ({@link #inUse}) and some executor live: the hook reports every live executor. Removed when the last one
     * terminates, or by the hook itself when every executor was collected without terminating: JFR holds its hooks
     * strongly, and a hook left registered kept this class, and its class loader, for the JVM's life (a redeployed
     * application's loader was never collected once a recording had run). Both under this class's lock, as is every
     * change of {@link #LIVE}'s emptiness that decides them. Left alone: the hook of executors collected after the
     * last recording of their statistics stopped stays until JFR next runs it.
     */
    private static volatile boolean periodicRegistered;
    private static final Runnable PERIODIC = JfrRecorder::emitStatistics;
    /**
     * Whether a recording times tasks now. Refreshed when an executor is built, by the checker on each round
     * ({@link #poll}), and by a worker as it starts and when a submitter woke it from its park
     * ({@link #refreshSlowTask}), so a worker pays one read per task instead of creating an event to ask: an event
     * returned out of {@link #beginSlowTask} escapes, so the JIT could not remove that allocation. A recording running
     * when an executor is built applies from its first task; one started while the executor idles, or before its first
     * worker started, from the task whose submit wakes a parked worker or starts one (the checker of an idle executor
     * dozes for a check period, and a new worker's first task came before its checker's first look, so those slow
     * tasks went untimed); otherwise within a round of the checker's (of any executor whose checker runs), a check
     * period at most.
     *
     * <p>Nothing here tells JFR to call back: a listener added with JFR would be told of the first recording at once,
     * but JFR adds and removes listeners under a lock it also holds while it initializes and while it tells listeners so,
     * and an executor's build or termination that waited for that lock could wait for good on an application's listener
     * (three versions of such a listener were tried; see testing.md). So an executor that never ran a task, built before
     * JFR was first used, is reported in Statistics only once some executor's build or checker polls (README, "Known
     * limits").
     */
    static volatile boolean slowTaskEnabled;
    /** Whether {@link #registerTypes} has run. */
    private static volatile boolean typesRegistered;

    private JfrRecorder() {
    }

    static void executorCreated(Engine engine) {
        synchronized (JfrRecorder.class) {
            LIVE.put(engine, new Object());
        }
        // A recording already running (started with the JVM, say) applies from the executor's first task: waiting for
        // its checker's first look missed the tasks that began before it, and an executor that had started no thread
        // yet got no Statistics event. Nothing is done while JFR is not in use (one static volatile read).
        poll();
    }

    /**
     * Takes the executor out of the periodic reports and records its final figures once: the periodic hook reports
     * live executors only, so without this event a recording kept no figure an executor reached after its last period
     * (one that lived less than a period was never reported). Taken by the terminating thread, before awaitTermination
     * returns; a snapshot of a terminated executor walks nothing.
     *
     * <p>The removal from {@link #LIVE} and the final event happen under the executor's monitor, which a periodic report
     * holds from its check of {@code LIVE} to its commit: the hook copies {@code LIVE} before it reports, so without
     * that a report of the copy could commit after the final event, and a recording then ended on a figure of the
     * periodic hook's, taken before the executor's last tasks ran. The hook is removed outside the monitor, since JFR's
     * removal may wait for a running hook, and that hook for the monitor.
     */
    static void executorTerminated(Engine engine) {
        Object monitor = LIVE.get(engine);
        if (monitor == null) { // never added, so never reported: nothing to order against
            monitor = new Object();
        }
        synchronized (monitor) {
            synchronized (JfrRecorder.class) {
                LIVE.remove(engine);
            }
            if (inUse()) {
                StatisticsEvent e = new StatisticsEvent();
                if (e.isEnabled()) {
                    fill(e, engine.settings.name, engine.snapshots.executor());
                    e.commit();
                }
            }
        }
        removeHookIfNoneLive();
    }

    /**
     * Removes the periodic hook if no executor lives. Also called by the hook itself (JFR runs hooks holding none of
     * its locks, and its list of hooks may be changed while it walks it).
     */
    private static void removeHookIfNoneLive() {
        synchronized (JfrRecorder.class) {
            if (periodicRegistered && LIVE.isEmpty()) {
                FlightRecorder.removePeriodicEvent(PERIODIC);
                periodicRegistered = false;
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
        if (!typesRegistered) {
            registerTypes();
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
     * Registers every event class with JFR. JFR registers an event class when the class is initialized, which for the
     * events that fire rarely (a core bump, a refusal, a transfer) was at their first occurrence: until then their types
     * were missing from a recording's metadata (JMC's event browser, {@code FlightRecorder#getEventTypes}), so a
     * configuration could not be made from them. Done once JFR is in use, by the first poll that finds it so: before,
     * loading an event class costs its thread JFR's start-up (see {@link #inUse}). Registering again is ignored, so two
     * threads may both do it.
     */
    private static void registerTypes() {
        for (Class<? extends Event> type : List.of(WorkerBlockedEvent.class, ThreadStartedEvent.class,
                ThreadRetiredEvent.class, CoreBumpEvent.class, ContextTransferredEvent.class, TaskRejectedEvent.class,
                SlowTaskEvent.class, StatisticsEvent.class)) {
            FlightRecorder.register(type);
        }
        typesRegistered = true;
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
        List<Runnable> reports = new ArrayList<>();
        synchronized (LIVE) {
            for (Map.Entry<Engine, Object> live : LIVE.entrySet()) {
                Engine engine = live.getKey(); // a strong reference from here on: null if just collected
                if (engine != null) {
                    reports.add(periodicReport(engine, live.getValue()));
                }
            }
        }
        if (reports.isEmpty()) {
            // Every executor was collected without terminating (built and dropped, never used or closed): nothing else
            // removes the hook, which kept this class and its loader registered with JFR (an outside audit).
            removeHookIfNoneLive();
            return;
        }
        for (Runnable report : reports) {
            report.run();
        }
    }

    /**
     * The periodic report of a live executor, as the hook takes it from {@link #LIVE}; run after the executor's final
     * event, it records nothing. For tests: the hook's copy of {@code LIVE}, taken before a termination and reported
     * after it.
     */
    static Runnable periodicReportOf(Engine engine) {
        Object monitor = LIVE.get(engine);
        if (monitor == null) {
            throw new IllegalStateException("not live: " + engine.settings.name);
        }
        return periodicReport(engine, monitor);
    }

    private static Runnable periodicReport(Engine engine, Object monitor) {
        return () -> report(engine, monitor);
    }

    /** One periodic Statistics event of {@code engine}, unless its final one is recorded (see executorTerminated). */
    private static void report(Engine engine, Object monitor) {
        synchronized (monitor) {
            if (!LIVE.containsKey(engine)) {
                return;
            }
            StatisticsEvent e = new StatisticsEvent();
            if (e.isEnabled()) {
                fill(e, engine.settings.name, engine.snapshots.executor());
                e.commit();
            }
        }
    }

    /** Copies every figure of {@code s} into the field of {@code e} of the same name. */
    static void fill(StatisticsEvent e, String executor, ExecutorStatistics s) {
        e.executor = executor;
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
