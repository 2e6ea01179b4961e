package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/** The order checker the concurrency tests rely on finds what it must: a checker that cannot fail proves nothing. */
class OrderCheckerTest {

    @Test
    void inOrderWithoutOverlapIsClean() {
        OrderChecker checker = new OrderChecker(2, 2);
        for (int seq = 1; seq <= 3; seq++) {
            for (int stream = 0; stream < 2; stream++) {
                checker.enter(1, stream, seq);
                checker.exit(1);
            }
        }
        checker.assertClean("in order");
        assertEquals(6, checker.ran());
        assertEquals(6, checker.runs(1));
        assertEquals(3, checker.last(1, 1));
    }

    @Test
    void findsAnOverlap() {
        OrderChecker checker = new OrderChecker(1);
        checker.enter(0, 1);
        checker.enter(0, 2); // the first has not exited
        checker.exit(0);
        checker.exit(0);
        assertThrows(AssertionFailedError.class, () -> checker.assertClean("overlap"));
    }

    /** Two producers' tasks of one context at once: the suites' usual overlap, which a per-stream count would miss. */
    @Test
    void findsAnOverlapOfTwoStreamsOfOneContext() {
        OrderChecker checker = new OrderChecker(1, 2);
        checker.enter(0, 0, 1);
        checker.enter(0, 1, 1); // another producer's task of the same context, while the first runs
        checker.exit(0);
        checker.exit(0);
        assertThrows(AssertionFailedError.class, () -> checker.assertClean("overlap across streams"));
    }

    @Test
    void findsAGapARepeatAndAReordering() {
        for (long[] seqs : new long[][] {{1, 3}, {1, 1}, {2, 1}}) {
            OrderChecker checker = new OrderChecker(1);
            for (long seq : seqs) {
                checker.enter(0, seq);
                checker.exit(0);
            }
            assertThrows(AssertionFailedError.class, () -> checker.assertClean("sequence " + seqs[0] + ", " + seqs[1]));
        }
    }

    @Test
    void increasingAllowsGapsButNotARepeatOrADecrease() {
        OrderChecker gaps = new OrderChecker(1);
        for (long value : new long[] {2, 5, 9}) {
            gaps.enterIncreasing(0, 0, value);
            gaps.exit(0);
        }
        gaps.assertClean("gaps");
        for (long[] values : new long[][] {{3, 3}, {5, 4}}) {
            OrderChecker checker = new OrderChecker(1);
            for (long value : values) {
                checker.enterIncreasing(0, 0, value);
                checker.exit(0);
            }
            assertThrows(AssertionFailedError.class,
                    () -> checker.assertClean("values " + values[0] + ", " + values[1]));
        }
    }

    @Test
    void streamsAndContextsAreCheckedApart() {
        OrderChecker checker = new OrderChecker(2, 2);
        checker.enter(0, 0, 1);
        checker.enter(1, 0, 1); // another context may run at the same time
        checker.exit(1);
        checker.exit(0);
        checker.enter(0, 1, 1); // another stream of the same context starts at 1
        checker.exit(0);
        checker.assertClean("apart");
    }
}
