package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.fail;

import org.jetbrains.lincheck.Lincheck;
import org.jetbrains.lincheck.LincheckAssertionError;

/** The check every "Lincheck finds this broken variant" test makes. */
final class LincheckFailures {
    private LincheckFailures() {
    }

    /**
     * Passes if Lincheck reports a failure of {@code scenario} within {@code invocations}. Lincheck 3.7 sometimes
     * finds the failure and then throws while rendering its trace (an {@code IndexOutOfBoundsException} from
     * {@code TraceNodes.traceToTree}, inside {@code LincheckAssertionError}'s constructor): that is a failure found
     * too, so it passes, and only that; an exception from anywhere else (the scenario itself, say) fails the test.
     */
    static void assertFinds(int invocations, Runnable scenario) {
        try {
            Lincheck.runConcurrentTest(invocations, scenario);
        } catch (LincheckAssertionError found) {
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
