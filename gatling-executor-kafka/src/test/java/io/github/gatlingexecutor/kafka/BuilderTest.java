package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.ContextExecutor;
import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad input is reported by build() (or start()), naming what is wrong; no broker needed. */
class BuilderTest {

    private static Map<String, Object> valid() {
        Map<String, Object> p = new HashMap<>();
        p.put("bootstrap.servers", "127.0.0.1:1");
        p.put("group.id", "g");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return p;
    }

    /** {@link #valid()} with these deserializers, the counts of {@link CountingDeserializer} set back to zero. */
    private static Map<String, Object> countedProps(Class<?> keys, Class<?> values) {
        Map<String, Object> p = valid();
        p.put("key.deserializer", keys.getName());
        p.put("value.deserializer", values.getName());
        CountingDeserializer.CONFIGURED.set(0);
        CountingDeserializer.CLOSED.set(0);
        return p;
    }

    private static KafkaProcessor.Builder<String, String> builder(Map<String, Object> p) {
        return KafkaProcessor.<String, String>builder(p).topics("t").handler(r -> { });
    }

    private static void rejected(String expectedInMessage, Consumer<Map<String, Object>> props,
                                 Consumer<KafkaProcessor.Builder<String, String>> settings) {
        Map<String, Object> p = valid();
        props.accept(p);
        KafkaProcessor.Builder<String, String> b = builder(p);
        settings.accept(b);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build);
        assertTrue(e.getMessage().contains(expectedInMessage), () -> "message names " + expectedInMessage + ": "
                + e.getMessage());
    }

    @Test
    void validSettingsBuild() {
        assertDoesNotThrow(() -> builder(valid()).build().close());
    }

    /** The defaults the README and SPEC name: every other test sets its own, so nothing else would notice a change. */
    @Test
    void defaultsAreAsDocumented() throws Exception {
        try (KafkaProcessor<String, String> p = builder(valid()).build()) {
            assertEquals(10_000, field(p, "maxPending"), "maxPendingPerPartition");
            assertEquals(Duration.ofSeconds(1).toNanos(), field(p, "commitIntervalNanos"), "commitInterval");
            assertEquals(Duration.ofSeconds(30), field(p, "closeTimeout"), "closeTimeout");
            RecordRunner<?, ?> runner = (RecordRunner<?, ?>) field(p, "runner");
            assertEquals(3, runner.retries(), "retries");
            // retryBackoff 100 ms, doubling per failed try, capped at 10 s
            assertEquals(Duration.ofMillis(100).toNanos(), runner.backoff(1));
            assertEquals(Duration.ofMillis(200).toNanos(), runner.backoff(2));
            assertEquals(Duration.ofMillis(400).toNanos(), runner.backoff(3));
            assertEquals(Duration.ofSeconds(10).toNanos(), runner.backoff(8), "the cap");
            assertEquals(Duration.ofSeconds(10).toNanos(), runner.backoff(1_000), "the cap");
        }
    }

    /**
     * The backoff doubles up to 10 s, and a retryBackoff longer than that is kept as it is (the cap never shortens what
     * was asked for): capped at 10 s, a 30 s backoff retried a failing record three times as often as configured.
     */
    @Test
    void aRetryBackoffLongerThanTheCapIsKeptAndAShorterOneDoublesUpToTheCap() throws Exception {
        try (KafkaProcessor<String, String> p = builder(valid()).retryBackoff(Duration.ofSeconds(30)).build()) {
            RecordRunner<?, ?> runner = (RecordRunner<?, ?>) field(p, "runner");
            assertEquals(Duration.ofSeconds(30).toNanos(), runner.backoff(1), "the first wait, as configured");
            assertEquals(Duration.ofSeconds(30).toNanos(), runner.backoff(2), "no doubling past the configured wait");
            assertEquals(Duration.ofSeconds(30).toNanos(), runner.backoff(1_000));
        }
        try (KafkaProcessor<String, String> p = builder(valid()).retryBackoff(Duration.ofSeconds(3)).build()) {
            RecordRunner<?, ?> runner = (RecordRunner<?, ?>) field(p, "runner");
            assertEquals(Duration.ofSeconds(3).toNanos(), runner.backoff(1));
            assertEquals(Duration.ofSeconds(6).toNanos(), runner.backoff(2));
            assertEquals(Duration.ofSeconds(10).toNanos(), runner.backoff(3), "doubled to 12 s, capped at 10 s");
            assertEquals(Duration.ofSeconds(10).toNanos(), runner.backoff(4));
        }
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = KafkaProcessor.class.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }

    @Test
    void missingConsumerSettingsAreNamed() {
        rejected("bootstrap.servers", p -> p.remove("bootstrap.servers"), b -> { });
        rejected("bootstrap.servers", p -> p.put("bootstrap.servers", " "), b -> { });
        // A list, as the consumer also accepts: an empty one names no broker (it used to fail only at start()).
        rejected("bootstrap.servers", p -> p.put("bootstrap.servers", java.util.List.of()), b -> { });
        rejected("bootstrap.servers", p -> p.put("bootstrap.servers", java.util.List.of(" ")), b -> { });
        rejected("group.id", p -> p.remove("group.id"), b -> { });
        rejected("key.deserializer", p -> p.remove("key.deserializer"), b -> { });
        rejected("value.deserializer", p -> p.remove("value.deserializer"), b -> { });
    }

    @Test
    void deserializerInstancesReplaceTheProperties() {
        Map<String, Object> p = valid();
        p.remove("key.deserializer");
        p.remove("value.deserializer");
        assertDoesNotThrow(() -> builder(p).keyDeserializer(new StringDeserializer())
                .valueDeserializer(new StringDeserializer()).build());
    }

    @Test
    void oneDeserializerGivenAsAnInstanceAndTheOtherAsAPropertyStarts() {
        // The property of the one given as an instance may be absent: start() makes the other from its property
        // without asking for both (it threw ConfigException, "Missing required configuration", and closed).
        Map<String, Object> noKeyClass = valid();
        noKeyClass.remove("key.deserializer");
        Map<String, Object> noValueClass = valid();
        noValueClass.remove("value.deserializer");
        for (KafkaProcessor.Builder<String, String> b : List.of(
                builder(noKeyClass).keyDeserializer(new StringDeserializer()),
                builder(noValueClass).valueDeserializer(new StringDeserializer()))) {
            KafkaProcessor<String, String> p = b.closeTimeout(Duration.ZERO).build();
            try {
                assertDoesNotThrow(p::start);
            } finally {
                p.close();
            }
        }
    }

    @Test
    void autoCommitIsTheProcessorsJob() {
        rejected("enable.auto.commit", p -> p.put("enable.auto.commit", "true"), b -> { });
        rejected("enable.auto.commit", p -> p.put("enable.auto.commit", Boolean.TRUE), b -> { });
        Map<String, Object> p = valid();
        p.put("enable.auto.commit", "false");
        assertDoesNotThrow(() -> builder(p).build());
    }

    @Test
    void propertiesAreAcceptedAsWellAsMaps() {
        Properties p = new Properties();
        p.putAll(valid());
        assertDoesNotThrow(() -> KafkaProcessor.<String, String>builder(p).topics(List.of("a", "b"))
                .handler(r -> { }).build());
        p.put("enable.auto.commit", "TRUE");
        assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(p).topics("a").handler(r -> { }).build());
    }

    /**
     * Properties over defaults are read as the consumer reads them: a value set in the table itself, of any type, wins
     * over the default under its name. A String default took the place of a typed value set over it (the consumer got
     * another setting than the one given), and enable.auto.commit=true set over a default of "false" passed build().
     */
    @Test
    void aValueSetOverAPropertiesDefaultWinsWhateverItsType() throws Exception {
        Properties defaults = new Properties();
        defaults.putAll(valid());
        defaults.setProperty("max.poll.records", "500");
        defaults.setProperty("key.deserializer", "no.such.Deserializer");
        defaults.setProperty("enable.auto.commit", "false");
        Properties p = new Properties(defaults);
        p.put("max.poll.records", 10);
        p.put("key.deserializer", StringDeserializer.class);
        try (KafkaProcessor<String, String> k = KafkaProcessor.<String, String>builder(p).topics("t")
                .handler(r -> { }).build()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> config = (Map<String, Object>) field(k, "config");
            assertEquals(10, config.get("max.poll.records"), "the value set, not the default");
            assertEquals(StringDeserializer.class, config.get("key.deserializer"), "the value set, not the default");
            assertEquals("g", config.get("group.id"), "a default with nothing set over it");
        }
        p.put("enable.auto.commit", Boolean.TRUE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(p).topics("t").handler(r -> { }).build());
        assertTrue(e.getMessage().contains("enable.auto.commit"), e::getMessage);
    }

    /**
     * Names Kafka refuses passed build(), and the processor then logged "Poll failed" every few seconds for good. Legal
     * names are ASCII letters, digits, '.', '_' and '-', 1 to 249 characters, neither "." nor "..".
     */
    @ParameterizedTest
    @ValueSource(strings = {"bad topic!", "", " ", ".", "..", "a/b", "caf\u00e9", "tab\t", "x\u0000"})
    void anIllegalTopicNameIsRefusedByBuildNamingIt(String topic) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(valid()).topics("fine", topic).handler(r -> { }).build());
        assertTrue(e.getMessage().startsWith("topics: '" + topic + "' is not a legal topic name"), e::getMessage);
    }

    @Test
    void aTopicNameOfMoreThan249CharactersIsRefusedAndOneOf249Builds() {
        String tooLong = "t".repeat(250);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(valid()).topics(tooLong).handler(r -> { }).build());
        assertTrue(e.getMessage().startsWith("topics: '" + tooLong + "' is not a legal topic name"), e::getMessage);
        assertTrue(e.getMessage().contains("250"), e::getMessage);
        assertDoesNotThrow(() -> KafkaProcessor.<String, String>builder(valid()).topics("t".repeat(249), "...",
                "Az.09_-", "_", "-").handler(r -> { }).build().close());
    }

    @Test
    void topicsAndHandlerAreRequired() {
        IllegalArgumentException noTopics = assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(valid()).handler(r -> { }).build());
        assertTrue(noTopics.getMessage().contains("topics"), noTopics.getMessage());
        IllegalArgumentException blank = assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(valid()).topics("").handler(r -> { }).build());
        assertTrue(blank.getMessage().contains("topic"), blank.getMessage());
        IllegalArgumentException noHandler = assertThrows(IllegalArgumentException.class,
                () -> KafkaProcessor.<String, String>builder(valid()).topics("t").build());
        assertTrue(noHandler.getMessage().contains("handler"), noHandler.getMessage());
    }

    @Test
    void limitsAndIntervalsMustBePositive() {
        rejected("maxPendingPerPartition", p -> { }, b -> b.maxPendingPerPartition(0));
        rejected("maxPendingPerPartition", p -> { }, b -> b.maxPendingPerPartition(-5));
        rejected("commitInterval", p -> { }, b -> b.commitInterval(Duration.ZERO));
        rejected("commitInterval", p -> { }, b -> b.commitInterval(Duration.ofMillis(-1)));
        rejected("retryBackoff", p -> { }, b -> b.retryBackoff(Duration.ZERO));
        rejected("retries", p -> { }, b -> b.retries(-1));
        rejected("closeTimeout", p -> { }, b -> b.closeTimeout(Duration.ofSeconds(-1)));
        assertDoesNotThrow(() -> builder(valid()).retries(0).closeTimeout(Duration.ZERO).build());
    }

    @Test
    void nullArgumentsAreNamed() {
        KafkaProcessor.Builder<String, String> b = builder(valid());
        assertEquals("handler", assertThrows(NullPointerException.class, () -> b.handler(null)).getMessage());
        assertEquals("ordering", assertThrows(NullPointerException.class, () -> b.ordering(null)).getMessage());
        assertEquals("executor", assertThrows(NullPointerException.class, () -> b.executor(null)).getMessage());
        assertEquals("topic", assertThrows(NullPointerException.class,
                () -> b.topics(java.util.Arrays.asList("a", null))).getMessage());
        assertEquals("topic", assertThrows(NullPointerException.class, () -> b.topics("a", null)).getMessage());
        assertEquals("topic", assertThrows(NullPointerException.class, () -> b.topics((String) null)).getMessage());
        assertThrows(NullPointerException.class, () -> KafkaProcessor.builder((Properties) null));
    }

    @Test
    void startTwiceOrAfterCloseIsAnIllegalState() {
        // Nothing listens on port 1: the consumer is created (no connection is made in its constructor) and
        // polls in vain until close.
        KafkaProcessor<String, String> p = builder(valid()).closeTimeout(Duration.ZERO).build();
        p.start();
        try {
            assertThrows(IllegalStateException.class, p::start);
        } finally {
            p.close();
        }
        assertThrows(IllegalStateException.class, p::start);
        p.close(); // idempotent

        KafkaProcessor<String, String> neverStarted = builder(valid()).build();
        neverStarted.close();
        assertThrows(IllegalStateException.class, neverStarted::start);
    }

    /**
     * A deserializer named in the properties whose {@code configure} throws: a plain consumer fails to construct with a
     * {@code KafkaException} (the cause inside), as {@code start()} documents for a consumer that cannot be created;
     * the processor configures that deserializer itself and let the exception out bare, an
     * {@code IllegalStateException} here, the very type {@code start()} throws for "already started or closed".
     */
    @Test
    void aDeserializerWhoseConfigureThrowsFailsStartWithAKafkaException() {
        for (boolean isKey : new boolean[] {true, false}) {
            Map<String, Object> props = valid();
            props.put(isKey ? "key.deserializer" : "value.deserializer", UnconfigurableDeserializer.class.getName());
            KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO).build();
            KafkaException e = assertThrows(KafkaException.class, p::start, isKey ? "key" : "value");
            Throwable cause = e;
            while (cause.getCause() != null) {
                cause = cause.getCause();
            }
            assertEquals("refuses its configuration (thrown on purpose)", cause.getMessage());
            IllegalStateException closed = assertThrows(IllegalStateException.class, p::start);
            assertTrue(closed.getMessage().contains("closed"), closed::getMessage);
            p.close();
        }
    }

    /**
     * A deserializer named in the properties whose {@code configure} throws an {@link Error} (a class it needs that
     * is missing, say): a plain consumer catches any {@code Throwable} of its construction and fails with a
     * {@code KafkaException}, having closed what it made. The processor let the Error out bare, left the deserializer
     * made before it open, and stayed started: a second start() said "already started" of a processor that never ran.
     */
    @Test
    void aDeserializerWhoseConfigureThrowsAnErrorFailsStartWithAKafkaExceptionAndClosesTheOther() {
        Map<String, Object> props = countedProps(CountingDeserializer.class, BrokenDeserializer.class);
        KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO).build();
        KafkaException e = assertThrows(KafkaException.class, p::start);
        Throwable cause = e;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        assertTrue(cause instanceof NoClassDefFoundError, cause::toString);
        assertEquals(1, CountingDeserializer.CONFIGURED.get(), "the key deserializer was made");
        assertEquals(1, CountingDeserializer.CLOSED.get(), "and is closed");
        IllegalStateException closed = assertThrows(IllegalStateException.class, p::start);
        assertTrue(closed.getMessage().contains("closed"), closed::getMessage);
        p.close();
    }

    /** A deserializer whose {@code configure} throws an {@link Error}. */
    public static final class BrokenDeserializer extends StringDeserializer {
        @Override
        public void configure(Map<String, ?> configs, boolean isKey) {
            throw new NoClassDefFoundError("a class it needs (thrown on purpose)");
        }
    }

    /** A deserializer whose {@code configure} throws. */
    public static final class UnconfigurableDeserializer extends StringDeserializer {
        @Override
        public void configure(Map<String, ?> configs, boolean isKey) {
            throw new IllegalStateException("refuses its configuration (thrown on purpose)");
        }
    }

    /**
     * A consumer whose construction fails before it takes in its deserializers (an interceptor that cannot be
     * configured, say) has none to close under a plain consumer, which makes its deserializers later. The processor
     * makes and configures the ones the properties name before the consumer, and left them open: 2 configured, 0
     * closed.
     */
    @Test
    void theDeserializersMadeForAConsumerThatFailsToConstructAreClosed() {
        Map<String, Object> props = countedProps(CountingDeserializer.class, CountingDeserializer.class);
        props.put("interceptor.classes", UnconfigurableInterceptor.class.getName());
        KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO).build();
        assertThrows(KafkaException.class, p::start);
        assertEquals(2, CountingDeserializer.CONFIGURED.get(), "both deserializers were made");
        assertEquals(2, CountingDeserializer.CLOSED.get(), "each deserializer made is closed once");
        p.close();
        assertEquals(2, CountingDeserializer.CLOSED.get(), "and only once");
    }

    /**
     * As above, with a key deserializer whose {@code close} throws an {@link Error}: that error left start()'s clean-up
     * before the value deserializer was closed (1 made, 0 closed), and came out of start() in place of the failure
     * that stopped it (the interceptor's). A plain consumer closes each of its parts whatever the one before threw.
     */
    @Test
    void aDeserializerWhoseCloseThrowsAnErrorDoesNotKeepTheOtherOpenNorHideWhyStartFailed() {
        Map<String, Object> props = countedProps(ErrorOnCloseDeserializer.class, CountingDeserializer.class);
        props.put("interceptor.classes", UnconfigurableInterceptor.class.getName());
        KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO).build();
        KafkaException e = assertThrows(KafkaException.class, p::start);
        Throwable cause = e;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        assertEquals("refuses its configuration (thrown on purpose)", cause.getMessage(), "why start failed");
        assertEquals(1, CountingDeserializer.CONFIGURED.get());
        assertEquals(1, CountingDeserializer.CLOSED.get(), "the value deserializer is closed");
        p.close();
    }

    /** A deserializer whose {@code close} throws an {@link Error}. */
    public static final class ErrorOnCloseDeserializer extends StringDeserializer {
        @Override
        public void close() {
            throw new NoClassDefFoundError("a class its close needs (thrown on purpose)");
        }
    }

    /** Counts the instances configured and the closes. */
    public static final class CountingDeserializer extends StringDeserializer {
        static final AtomicInteger CONFIGURED = new AtomicInteger();
        static final AtomicInteger CLOSED = new AtomicInteger();

        @Override
        public void configure(Map<String, ?> configs, boolean isKey) {
            super.configure(configs, isKey);
            CONFIGURED.incrementAndGet();
        }

        @Override
        public void close() {
            CLOSED.incrementAndGet();
        }
    }

    /** An interceptor that acts in {@code configure} alone (made by the consumer from its class name). */
    public abstract static class ConfigureOnlyInterceptor implements ConsumerInterceptor<String, String> {
        @Override
        public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
            return records;
        }

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        }

        @Override
        public void close() {
        }
    }

    /** An interceptor whose {@code configure} throws. */
    public static final class UnconfigurableInterceptor extends ConfigureOnlyInterceptor {
        @Override
        public void configure(Map<String, ?> configs) {
            throw new IllegalStateException("refuses its configuration (thrown on purpose)");
        }
    }

    /**
     * A polling thread that cannot be started (the JVM's {@code OutOfMemoryError: unable to create native thread}):
     * start() let the error out with the consumer it had made still open (its deserializers too), the processor's own
     * executor not shut down, and the processor left started: a second start() said "already started" of a processor
     * that never polled.
     */
    @Test
    void aPollingThreadThatCannotStartFailsStartAndClosesWhatItMade() throws Exception {
        Map<String, Object> props = countedProps(CountingDeserializer.class, CountingDeserializer.class);
        props.put("group.id", "no-poll-thread");
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread (thrown on purpose)");
        List<org.apache.kafka.clients.consumer.KafkaConsumer<String, String>> made = new ArrayList<>();
        KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO)
                .consumerMaker((c, k, v) -> {
                    org.apache.kafka.clients.consumer.KafkaConsumer<String, String> consumer =
                            new org.apache.kafka.clients.consumer.KafkaConsumer<>(c, k, v);
                    made.add(consumer);
                    return consumer;
                })
                .pollThreadFactory(r -> new Thread(r) {
                    @Override
                    public synchronized void start() {
                        throw noThread;
                    }
                }).build();
        assertSame(noThread, assertThrows(OutOfMemoryError.class, p::start));
        assertEquals(1, made.size());
        assertThrows(IllegalStateException.class, () -> made.get(0).subscribe(List.of("t")),
                "the consumer is closed");
        assertEquals(2, CountingDeserializer.CONFIGURED.get());
        assertEquals(2, CountingDeserializer.CLOSED.get(), "the deserializers are closed");
        ContextExecutor own = (ContextExecutor) field(p, "executor");
        assertTrue(own == null || own.isShutdown(), "the processor's own executor is shut down");
        IllegalStateException closed = assertThrows(IllegalStateException.class, p::start);
        assertTrue(closed.getMessage().contains("closed"), closed::getMessage);
        p.close();
        assertEquals(2, CountingDeserializer.CLOSED.get(), "closed once");
    }

    /**
     * As above, with a consumer whose {@code close} throws the very error that stopped start() (the JVM throws one
     * preallocated {@code OutOfMemoryError} when it has no memory left to make another): adding it to itself as
     * suppressed threw an IllegalArgumentException ("Self-suppression not permitted"), which came out of start() in
     * place of the error and skipped the shutdown of the processor's own executor.
     */
    @Test
    void aConsumerCloseThrowingTheErrorThatStoppedStartNeitherHidesItNorKeepsTheExecutorOpen() throws Exception {
        Map<String, Object> props = valid();
        props.put("group.id", "no-poll-thread-same-error");
        OutOfMemoryError noMemory = new OutOfMemoryError("the same instance twice (thrown on purpose)");
        KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO)
                .consumerMaker((c, k, v) -> new org.apache.kafka.clients.consumer.KafkaConsumer<>(c, k, v) {
                    @Override
                    public void close(org.apache.kafka.clients.consumer.CloseOptions option) {
                        super.close(option);
                        throw noMemory;
                    }
                })
                .pollThreadFactory(r -> {
                    throw noMemory;
                }).build();
        assertSame(noMemory, assertThrows(Throwable.class, p::start));
        ContextExecutor own = (ContextExecutor) field(p, "executor");
        assertTrue(own == null || own.isShutdown(), "the processor's own executor is shut down");
        p.close();
    }

    /**
     * {@code close()} called from start()'s own thread, by a deserializer's or an interceptor's {@code configure}:
     * the close found nothing made yet and returned, and start() went on to make the processor's own executor and
     * start a polling thread for a closed processor, which ended at once and left that executor open for good.
     * start() after close() is an IllegalStateException; so is a start that a close overtook.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aCloseFromAConfigureDuringStartLeavesNothingOpenAndStartFails(boolean fromInterceptor) throws Exception {
        Map<String, Object> props = countedProps(
                fromInterceptor ? CountingDeserializer.class : ClosingDeserializer.class, CountingDeserializer.class);
        String group = "closed-in-configure-" + fromInterceptor;
        props.put("group.id", group);
        if (fromInterceptor) {
            props.put("interceptor.classes", ClosingInterceptor.class.getName());
        }
        KafkaProcessor<String, String> p = builder(props).closeTimeout(Duration.ZERO).build();
        CLOSE_IN_CONFIGURE.set(p);
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, p::start);
            assertTrue(e.getMessage().contains("closed"), e::getMessage);
        } finally {
            CLOSE_IN_CONFIGURE.set(null);
        }
        assertEquals(CountingDeserializer.CONFIGURED.get(), CountingDeserializer.CLOSED.get(),
                "every deserializer made is closed");
        ContextExecutor own = (ContextExecutor) field(p, "executor");
        assertTrue(own == null || own.isShutdown(), "the processor's own executor is shut down");
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                        .noneMatch(t -> t.getName().equals("kafka-" + group + "-poll")), "no polling thread is left");
        assertThrows(IllegalStateException.class, p::start);
        p.close();
    }

    /** The processor that {@link ClosingDeserializer} and {@link ClosingInterceptor} close as they are configured. */
    static final AtomicReference<KafkaProcessor<?, ?>> CLOSE_IN_CONFIGURE = new AtomicReference<>();

    /** A key deserializer whose {@code configure} closes {@link #CLOSE_IN_CONFIGURE}. */
    public static final class ClosingDeserializer extends StringDeserializer {
        @Override
        public void configure(Map<String, ?> configs, boolean isKey) {
            super.configure(configs, isKey);
            CountingDeserializer.CONFIGURED.incrementAndGet();
            KafkaProcessor<?, ?> p = CLOSE_IN_CONFIGURE.get();
            if (p != null) {
                p.close();
            }
        }

        @Override
        public void close() {
            CountingDeserializer.CLOSED.incrementAndGet();
        }
    }

    /** An interceptor whose {@code configure} closes {@link #CLOSE_IN_CONFIGURE}. */
    public static final class ClosingInterceptor extends ConfigureOnlyInterceptor {
        @Override
        public void configure(Map<String, ?> configs) {
            KafkaProcessor<?, ?> p = CLOSE_IN_CONFIGURE.get();
            if (p != null) {
                p.close();
            }
        }
    }

    /**
     * An executor already shut down refuses every record: build() accepted it, and the processor then polled records
     * that never ran (20 polled, 0 completed) with one warning logged. build() refuses it, naming the setting; one shut
     * down between build() and start() is refused by start(), before anything is made.
     */
    @Test
    void anExecutorShutDownIsRefusedByBuildOrByStartBeforeAnythingIsMade() throws Exception {
        GatlingExecutor shut = GatlingExecutor.builder().name("shut-before-build").build();
        shut.shutdown();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> builder(valid()).executor(shut).build());
        assertTrue(e.getMessage().startsWith("executor: shut-before-build is shut down"), e::getMessage);

        Map<String, Object> props = countedProps(CountingDeserializer.class, CountingDeserializer.class);
        props.put("group.id", "executor-shut-before-start");
        GatlingExecutor later = GatlingExecutor.builder().name("shut-before-start").build();
        KafkaProcessor<String, String> p = builder(props).executor(later).build();
        later.shutdown();
        IllegalStateException s = assertThrows(IllegalStateException.class, p::start);
        assertTrue(s.getMessage().startsWith("executor: shut-before-start was shut down"), s::getMessage);
        assertEquals(0, CountingDeserializer.CONFIGURED.get(), "no deserializer made");
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().equals("kafka-executor-shut-before-start-poll")), "no polling thread");
        IllegalStateException again = assertThrows(IllegalStateException.class, p::start);
        assertTrue(again.getMessage().contains("closed"), again::getMessage);
        p.close();
    }

    @Test
    void theBuilderDoesNotChangeTheCallersProperties() {
        Map<String, Object> p = valid();
        builder(p).build();
        assertEquals(4, p.size(), "enable.auto.commit is set on a copy");
    }
}
