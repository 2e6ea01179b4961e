package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import jdk.jfr.Configuration;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;

/** What the JFR tests share: collecting the executor's events from a stream and waiting for the ones a test needs. */
final class RecordedEvents {
    /** The name of each of the executor's event types starts with this. */
    static final String PREFIX = "io.github.gatlingexecutor.";

    /** Starts {@code stream}, each of the executor's events going into {@code events}. */
    static void startCollecting(RecordingStream stream, List<RecordedEvent> events) {
        // Kept past the callback: by default the stream may hand the same object over again for a later event.
        stream.setReuse(false);
        stream.onEvent(e -> {
            if (e.getEventType().getName().startsWith(PREFIX)) {
                events.add(e);
            }
        });
        stream.startAsync();
    }

    /** The settings file shipped in the jar. */
    static Configuration shippedSettings() throws Exception {
        try (Reader r = new InputStreamReader(GatlingExecutor.class.getResourceAsStream("jfr/gatling.jfc"),
                StandardCharsets.UTF_8)) {
            return Configuration.create(r);
        }
    }

    /** Whether {@code e} is an event of {@code type} (the name after the prefix) from {@code executor}. */
    static boolean is(RecordedEvent e, String type, String executor) {
        return e.getEventType().getName().equals(PREFIX + type) && executor.equals(e.getString("executor"));
    }

    /** The events of {@code type} from {@code executor} once there are {@code n} (or all there are after 20 s). */
    static List<RecordedEvent> awaitEvents(List<RecordedEvent> events, String type, String executor, int n) {
        List<RecordedEvent> found = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (found.size() < n && System.nanoTime() - deadline < 0) {
            TestSupport.sleep(20);
            found.clear();
            for (RecordedEvent x : events) {
                if (is(x, type, executor)) {
                    found.add(x);
                }
            }
        }
        return found;
    }

    /**
     * The first event of {@code type} from {@code executor} that {@code match} accepts, waited for up to 20 s; each
     * is also checked to be in the executor's category.
     */
    static RecordedEvent awaitEvent(List<RecordedEvent> events, String type, String executor,
                                    Predicate<RecordedEvent> match) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() - deadline < 0) {
            for (RecordedEvent e : events) {
                if (is(e, type, executor) && match.test(e)) {
                    assertEquals("GatlingExecutor", e.getEventType().getCategoryNames().get(0), e.toString());
                    return e;
                }
            }
            TestSupport.sleep(20);
        }
        throw new AssertionError("no matching " + type + " event for " + executor + " among " + events.size()
                + " events: " + events);
    }

    private RecordedEvents() {
    }
}
