package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * With no recording ever started in the JVM, the executor must not load JFR's event machinery: creating the first
 * event object does (about 150 ms here), and it used to happen on the submitter that started the first worker and on
 * the checker, so the first task in a JVM started about 200 ms late and the first scheduled task ran that late. This
 * needs a JVM of its own (the surefire JVM has recordings from other tests), so it runs {@link Child} in one and
 * reads the classes it loaded.
 */
class JfrNotStartedTest {

    /** The class JFR loads to register event classes, the heavy part; nothing else of JFR's loads it. */
    private static final String EVENT_MACHINERY = "jdk.jfr.internal.MetadataRepository";

    @Test
    @Timeout(60)
    void anExecutorInAJvmWithoutARecordingNeverLoadsJfrsEventMachinery() throws Exception {
        String out = TestSupport.childJvmOutput(List.of("-Xlog:class+load=info:stdout"), Child.class);
        assertTrue(out.contains(Child.DONE), "the child did not finish its work:\n" + tail(out));
        assertTrue(out.contains(Child.class.getName()), "the class-load log is not in the output:\n" + tail(out));
        assertFalse(out.contains(EVENT_MACHINERY),
                "JFR's event machinery was loaded with no recording started:\n" + around(out, EVENT_MACHINERY));
    }

    private static String tail(String out) {
        return out.substring(Math.max(0, out.length() - 2000));
    }

    private static String around(String out, String what) {
        int at = out.indexOf(what);
        return out.substring(Math.max(0, at - 1500), Math.min(out.length(), at + 200));
    }

    /**
     * Uses every path that reports to JFR when no recording runs: a worker start, lane and plain tasks, a scheduled
     * task (the checker dispatches it and polls JFR in the same round), and termination, which the checker reaches
     * only through more rounds, each of which polls.
     */
    static final class Child {
        static final String DONE = "child: done";

        public static void main(String[] args) throws Exception {
            GatlingExecutor e = GatlingExecutor.builder().name("no-recording").coreThreads(2)
                    .checkPeriod(Duration.ofMillis(5)).build();
            CountDownLatch ran = new CountDownLatch(3);
            e.execute(ran::countDown);
            e.sequential("c").execute(ran::countDown);
            e.schedule(ran::countDown, 10, TimeUnit.MILLISECONDS);
            if (!ran.await(20, TimeUnit.SECONDS)) {
                throw new AssertionError("tasks did not run");
            }
            e.close();
            System.out.println(DONE);
        }

        private Child() {
        }
    }
}
