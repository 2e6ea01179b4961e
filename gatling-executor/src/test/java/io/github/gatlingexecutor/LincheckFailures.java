package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.fail;

import org.jetbrains.lincheck.Lincheck;
import org.jetbrains.lincheck.LincheckAssertionError;

/** The check every "Lincheck finds this broken variant" test makes. */
final class LincheckFailures {
    private LincheckFailures() {
    }

    /** What a broken variant's failure must look like, so that a failure of another kind does not pass for it. */
    enum Found {
        /**
         * One of the scenario's own checks failed: an {@code AssertionError} thrown by a test class's {@code check}.
         * An unexpected exception in the scenario, or a hang, is not this.
         */
        CHECK,
        /**
         * The scenario hung (a worker parked for good, a read that never returns). Lincheck 3.7 also reports some
         * bounded spins as hangs ("livelock"); the correct variant, run through the same scenario, passing is what
         * tells the two apart.
         */
        HANG
    }

    /**
     * Passes if Lincheck reports a failure of {@code scenario} of the {@code expected} kind within
     * {@code invocations}. Lincheck 3.7 reports every failure as a {@link LincheckAssertionError}, an exception
     * inside the scenario and a hang included, so its report is read for the kind. Lincheck 3.7 sometimes finds
     * the failure and then throws while rendering its trace (an {@code IndexOutOfBoundsException} from
     * {@code TraceNodes.traceToTree}, inside {@code LincheckAssertionError}'s constructor): its kind is then
     * unknown, and that passes too; an exception from anywhere else fails the test.
     */
    static void assertFinds(int invocations, Runnable scenario, Found expected) {
        try {
            Lincheck.runConcurrentTest(invocations, scenario);
        } catch (LincheckAssertionError found) {
            String report = String.valueOf(found.getMessage());
            boolean matches = expected == Found.HANG ? report.contains("= Concurrent test has hung =")
                    : report.contains("= Concurrent test failed =") && report.contains("java.lang.AssertionError: ")
                            && report.contains("Test.check(Lincheck");
            if (!matches) {
                fail("Lincheck found a failure, but not of the expected kind (" + expected + "):\n" + report, found);
            }
            return;
        } catch (RuntimeException | Error other) {
            if (raisedWhileReporting(other)) {
                return;
            }
            throw other;
        }
        fail("Lincheck found no failure in " + invocations + " invocations");
    }

    private static boolean raisedWhileReporting(Throwable t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().equals(LincheckAssertionError.class.getName()) && e.getMethodName().equals("<init>")) {
                return true;
            }
        }
        return false;
    }
}
