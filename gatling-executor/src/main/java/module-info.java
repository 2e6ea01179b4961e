/**
 * GatlingExecutor: per-context ordered, coalescing and unordered execution on a small elastic pool.
 *
 * <p>Only {@code io.github.gatlingexecutor} is exported; the engine behind it is package-private. The JFR events
 * live in {@code io.github.gatlingexecutor.jfr}, exported to {@code jdk.jfr} alone; JFR is optional at run time.
 */
module io.github.gatlingexecutor {
    requires java.management; // the checker reads a stuck worker's CPU time; on the class path it may be absent
    requires static jdk.jfr;  // events are recorded only when the runtime has JFR
    exports io.github.gatlingexecutor;
    exports io.github.gatlingexecutor.jfr to jdk.jfr;
}
