package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A delayed task keeps the JVM alive until it has run, as with {@code ScheduledThreadPoolExecutor}. Until a task is
 * due only the checker holds it, and the checker is a daemon; with no worker started yet, a program whose main thread
 * returned right after scheduling exited and dropped the task (an outside audit: 5 of 5 runs; the heartbeat form, a
 * fixed-rate task and nothing else, ran zero times). The JVM's exit is the contract here, so {@link Child} runs in a
 * JVM of its own.
 */
class ScheduledJvmExitTest {

    @ParameterizedTest
    @ValueSource(strings = {"delayed-then-shutdown", "delayed", "heartbeat"})
    @Timeout(60)
    void aScheduledTaskRunsAfterMainReturns(String form) throws Exception {
        Process p = TestSupport.childJvm(List.of(), Child.class, form);
        boolean heartbeat = form.equals("heartbeat");
        // The heartbeat never ends by itself: read until its third run, then stop the child.
        String out = TestSupport.childOutputUntil(p, text -> heartbeat && text.contains(Child.RAN + " 3"), 30);
        if (heartbeat) {
            p.destroy();
            assertTrue(out.contains(Child.RAN + " 3"), "the heartbeat did not run three times:\n" + out);
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the child JVM did not end when stopped:\n" + out);
        } else {
            boolean ended = !p.isAlive();
            if (!ended) {
                p.destroyForcibly();
            }
            assertTrue(ended, "the child JVM did not end within 30 s:\n" + out);
            assertTrue(out.contains(Child.RAN), "the JVM exited without running the task:\n" + out);
            assertEquals(0, p.exitValue(), out);
        }
    }

    /** Schedules, returns from {@code main}, and says when the task runs. */
    static final class Child {
        static final String RAN = "child: ran";

        public static void main(String[] args) {
            GatlingExecutor e = new GatlingExecutor("exit", 1);
            switch (args[0]) {
                case "delayed-then-shutdown":
                    e.schedule(() -> System.out.println(RAN), 300, TimeUnit.MILLISECONDS);
                    e.shutdown(); // the task still runs when due (SPEC point 10), then the executor ends
                    break;
                case "delayed":
                    e.schedule(() -> {
                        System.out.println(RAN);
                        e.shutdown();
                    }, 300, TimeUnit.MILLISECONDS);
                    break;
                default:
                    int[] runs = {0};
                    e.scheduleAtFixedRate(() -> System.out.println(RAN + " " + ++runs[0]), 100, 50,
                            TimeUnit.MILLISECONDS);
                    break;
            }
        }

        private Child() {
        }
    }
}
