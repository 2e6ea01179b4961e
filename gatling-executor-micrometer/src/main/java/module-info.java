/** A Micrometer {@code MeterBinder} for GatlingExecutor. */
module io.github.gatlingexecutor.micrometer {
    requires io.github.gatlingexecutor;
    requires micrometer.core; // the application brings it (Maven scope provided)
    exports io.github.gatlingexecutor.micrometer;
}
