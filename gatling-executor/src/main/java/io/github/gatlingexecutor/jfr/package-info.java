/**
 * The JFR events of the executor, all in category {@code GatlingExecutor}. Not part of the API: the package is
 * exported only to {@code jdk.jfr}, which instruments and reads the events. The README ("Observability") says how
 * to record them; {@code gatling.jfc} beside these classes is a settings file that enables every one of them.
 */
package io.github.gatlingexecutor.jfr;
