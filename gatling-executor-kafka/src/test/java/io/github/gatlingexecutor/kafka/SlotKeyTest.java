package io.github.gatlingexecutor.kafka;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link Slot#isKey} must answer exactly as {@code equals} does, packed or not. */
class SlotKeyTest {

    private static final RecordRunner<Object, Object> RUNNER = new RecordRunner<>(r -> { }, null, 0,
            Duration.ofMillis(1));

    @Test
    void isKeyAgreesWithEqualsForEveryPairOfKeys() {
        List<Object> keys = List.of("", "a", "b", "ab", "ba", "key-1234", "key-1235", "key-12345", "key-1234\u0000",
                "0123456789abcdef", "0123456789abcdeg", "0123456789abcdef0", "0123456789abcdef1", "\u00ff\u00ff",
                "\u00ff\u00fe", "\u0100", "\u0101", "caf\u00e9", "caf\u0100", "\u0000", "\u0000\u0000",
                new LaneKey.Bytes(new byte[] {1, 2}), new LaneKey.Bytes(new byte[] {1, 2, 3}), 42, 42L);
        for (Object stored : keys) {
            Slot<Object, Object> slot = new Slot<>(stored, RUNNER, Runnable::run, false);
            for (Object fresh : keys) {
                // A fresh copy of a String, as the deserializer makes one per record.
                Object probe = fresh instanceof String ? new String(((String) fresh).toCharArray()) : fresh;
                assertEquals(stored.equals(probe), slot.isKey(probe), () -> "'" + stored + "' vs '" + fresh + "'");
            }
        }
        Slot<Object, Object> bytes = new Slot<>(new LaneKey.Bytes(new byte[] {1, 2}), RUNNER, Runnable::run, false);
        assertEquals(true, bytes.isKey(new LaneKey.Bytes(new byte[] {1, 2})));
    }
}
