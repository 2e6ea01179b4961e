/**
 * GatlingExecutor: per-context ordered, coalescing and unordered execution on a small elastic pool.
 *
 * <p>Only {@code io.github.gatlingexecutor} is exported; the engine behind it is package-private.
 */
module io.github.gatlingexecutor {
    requires java.management; // the checker reads a stuck worker's thread CPU time
    exports io.github.gatlingexecutor;
}
