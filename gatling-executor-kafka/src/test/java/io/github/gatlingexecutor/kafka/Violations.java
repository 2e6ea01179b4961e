package io.github.gatlingexecutor.kafka;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a handler saw that its test forbids (two records of one key at once, a record after a later one, ...). A
 * handler that threw instead would only fail its record, which the processor retries and hands to the failure
 * handler: the test's thread would never hear of it. Handlers add from any thread; the test's thread checks once the
 * records it waited for have run.
 */
final class Violations {
    private final Queue<String> seen = new ConcurrentLinkedQueue<>();

    void add(String violation) {
        seen.add(violation);
    }

    void assertNone() {
        assertTrue(seen.isEmpty(), () -> seen.size() + " violations, first: " + seen.peek());
    }
}
