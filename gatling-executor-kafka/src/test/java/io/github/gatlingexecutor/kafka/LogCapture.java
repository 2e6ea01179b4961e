package io.github.gatlingexecutor.kafka;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * What {@link KafkaProcessor} logs (through {@code java.util.logging}, which its {@code System.Logger} uses by
 * default) while a test runs: from {@link #start()} until {@link #close()}, on any thread.
 */
final class LogCapture implements AutoCloseable {

    private final Logger logger = Logger.getLogger(KafkaProcessor.class.getName());
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    private LogCapture() {
    }

    static LogCapture start() {
        LogCapture c = new LogCapture();
        c.logger.addHandler(c.handler);
        return c;
    }

    /** The messages logged at {@code level} or above, in order. */
    List<String> messagesAtLeast(Level level) {
        return records.stream().filter(r -> r.getLevel().intValue() >= level.intValue())
                .map(r -> String.valueOf(r.getMessage())).collect(Collectors.toList());
    }

    /** The throwables logged with a record, in order. */
    List<Throwable> thrown() {
        return records.stream().map(LogRecord::getThrown).filter(t -> t != null).collect(Collectors.toList());
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
