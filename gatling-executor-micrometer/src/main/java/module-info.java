/** A Micrometer {@code MeterBinder} for GatlingExecutor. */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // Micrometer is an automatic module
module io.github.gatlingexecutor.micrometer {
    // Transitive: the public API takes a ContextExecutor, and Micrometer's MeterRegistry and Tag.
    requires transitive io.github.gatlingexecutor;
    requires transitive micrometer.core; // the application brings it (Maven scope provided)
    exports io.github.gatlingexecutor.micrometer;
}
