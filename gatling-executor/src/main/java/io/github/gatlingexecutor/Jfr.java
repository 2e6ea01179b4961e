package io.github.gatlingexecutor;

/**
 * Where the engine reports to JFR. This class names no JFR type, so it loads on a runtime without {@code jdk.jfr}
 * (the module {@code requires static jdk.jfr}); everything that does lives in {@link JfrRecorder}, which is loaded
 * only when {@link #ON}. {@code ON} is a constant, so with no JFR the JIT folds every call here away; with JFR
 * present but never started in this JVM, each call costs one static volatile read (no event class is even loaded:
 * the first would cost about 150 ms, see JfrRecorder#inUse); once JFR is in use and no recording takes an event, an
 * event allocation that escape analysis removes and an {@code isEnabled()} that reads false (see JfrRecorder for why
 * every event is checked before anything is built).
 */
final class Jfr {
    /** Whether {@code jdk.jfr} is present and readable by this module. */
    static final boolean ON = available();

    private Jfr() {
    }

    private static boolean available() {
        try {
            Class<?> event = Class.forName("jdk.jfr.Event", false, Jfr.class.getClassLoader());
            // On the module path, "requires static" gives no read edge unless something else required jdk.jfr at
            // start-up; the runtime has it, so this module adds the edge itself (a module may, for itself).
            Module self = Jfr.class.getModule();
            self.addReads(event.getModule());
            return self.canRead(event.getModule());
        } catch (Throwable absent) {
            return false;
        }
    }

    static void executorCreated(Engine engine) {
        if (ON) {
            JfrRecorder.executorCreated(engine);
        }
    }

    static void executorTerminated(Engine engine) {
        if (ON) {
            JfrRecorder.executorTerminated(engine);
        }
    }

    /**
     * Called by the checker on each round: registers the periodic statistics event once JFR is in use, and refreshes
     * whether tasks are timed for the SlowTask event.
     */
    static void poll() {
        if (ON) {
            JfrRecorder.poll();
        }
    }

    static void workerBlocked(Engine engine, Worker worker, long runningForNanos) {
        if (ON) {
            JfrRecorder.workerBlocked(engine, worker, runningForNanos);
        }
    }

    static void threadStarted(Engine engine, Worker worker, String reason) {
        if (ON) {
            JfrRecorder.threadStarted(engine, worker, reason);
        }
    }

    static void threadRetired(Engine engine, Worker worker, String reason) {
        if (ON) {
            JfrRecorder.threadRetired(engine, worker, reason);
        }
    }

    static void coreBump(Engine engine, int coreThreads, long auxiliaryStarted) {
        if (ON) {
            JfrRecorder.coreBump(engine, coreThreads, auxiliaryStarted);
        }
    }

    static void contextTransferred(Engine engine, Object context, boolean coalescing, int previousWorker,
                                   int worker) {
        if (ON) {
            JfrRecorder.contextTransferred(engine, context, coalescing, previousWorker, worker);
        }
    }

    /** Whether a recording takes TaskRejected events now (so a refused offer builds its message only then). */
    static boolean taskRejectedEnabled() {
        return ON && JfrRecorder.taskRejectedEnabled();
    }

    static void taskRejected(Engine engine, Object context, String limit) {
        if (ON) {
            JfrRecorder.taskRejected(engine, context, limit);
        }
    }

    /**
     * Called by a worker as it starts and when woken from its park, before it takes work: whether tasks are to be
     * timed for the SlowTask event is read again, as a recording may have started while the executor was idle or before
     * the worker existed (see {@link JfrRecorder#slowTaskEnabled}). One static volatile read while JFR is not in use.
     */
    static void refreshSlowTask() {
        if (ON) {
            JfrRecorder.refreshSlowTask();
        }
    }

    /**
     * Before a task: an opaque token if a recording times tasks now, else null (then nothing else is done). Costs a
     * task one read when no recording times tasks.
     */
    static Object beginSlowTask() {
        return ON && JfrRecorder.slowTaskEnabled ? JfrRecorder.beginSlowTask() : null;
    }

    /**
     * After a task that {@link #beginSlowTask} gave a token for: commits it if it ran past the threshold, naming the
     * context of {@code lane}, the lane the task ran from (null for an unordered task).
     */
    static void endSlowTask(Object token, Engine engine, Lane lane, Runnable task) {
        JfrRecorder.endSlowTask(token, engine, lane, task);
    }
}
