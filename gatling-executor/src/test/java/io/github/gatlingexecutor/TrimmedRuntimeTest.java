package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The executor on the class path of a runtime that has {@code java.base} alone: no {@code jdk.jfr} (SPEC: a runtime
 * without JFR still works) and no {@code java.management}, which the checker reads a worker's thread through. The
 * checker's class used to fail to link there, so no executor could be built (an outside audit: {@code
 * NoClassDefFoundError: java/lang/management/ManagementFactory}). Only another JVM can leave those modules out, so
 * {@link Child} runs in one, with {@code --limit-modules java.base}.
 */
class TrimmedRuntimeTest {

    @Test
    @Timeout(60)
    void anExecutorOnARuntimeOfJavaBaseAloneRunsAndMovesWorkAwayFromABlockedWorker() throws Exception {
        String out = TestSupport.childJvmOutput(List.of("--limit-modules", "java.base"), Child.class);
        assertTrue(out.contains(Child.MODULES), "the child ran with more than java.base:\n" + out);
        assertTrue(out.contains(Child.DONE), "the child did not finish its work:\n" + out);
    }

    /**
     * One core worker blocked on a latch, a task of another context behind it: only an auxiliary worker, started by
     * the checker, can run that task. Then a scheduled task, a snapshot, and termination.
     */
    static final class Child {
        static final String MODULES = "child: neither java.management nor jdk.jfr";
        static final String DONE = "child: done";

        public static void main(String[] args) throws Exception {
            if (ModuleLayer.boot().findModule("java.management").isPresent()
                    || ModuleLayer.boot().findModule("jdk.jfr").isPresent()) {
                System.out.println("child: modules " + ModuleLayer.boot().modules());
                System.exit(2);
            }
            System.out.println(MODULES);
            GatlingExecutor e = GatlingExecutor.builder().name("trimmed").coreThreads(1)
                    .checkPeriod(Duration.ofMillis(10)).blockedThreshold(Duration.ofMillis(50)).build();
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch behind = new CountDownLatch(1);
            e.sequential("a").execute(() -> {
                try {
                    release.await();
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            });
            e.sequential("b").execute(behind::countDown);
            check(behind.await(20, TimeUnit.SECONDS), "the task behind the blocked worker never ran");
            ScheduledFuture<String> due = e.schedule(() -> "due", 20, TimeUnit.MILLISECONDS);
            check("due".equals(due.get(20, TimeUnit.SECONDS)), "the scheduled task");
            release.countDown();
            e.shutdown();
            check(e.awaitTermination(20, TimeUnit.SECONDS), "termination");
            ExecutorStatistics s = e.statistics();
            check(s.executed() == 3 && s.auxiliaryThreadsStarted() >= 1 && s.threads() == 0, "statistics " + s);
            System.out.println(DONE);
        }

        private static void check(boolean ok, String what) {
            if (!ok) {
                System.out.println("child: failed: " + what);
                System.exit(1);
            }
        }

        private Child() {
        }
    }
}
