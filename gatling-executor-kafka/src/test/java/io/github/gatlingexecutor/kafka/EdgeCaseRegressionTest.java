package io.github.gatlingexecutor.kafka;

import static io.github.gatlingexecutor.kafka.EmbeddedKafka.await;
import static io.github.gatlingexecutor.kafka.OrderingTest.awaitCommitted;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.gatlingexecutor.ContextExecutor;
import io.github.gatlingexecutor.GatlingExecutor;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.ClusterResourceListener;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Defects an outside audit of this module found at its edges, one test each; each was seen failing on the code before
 * its fix.
 */
class EdgeCaseRegressionTest {

    @RegisterExtension
    static final EmbeddedKafka KAFKA = new EmbeddedKafka();

    /**
     * In {@code PARTITION} order the records a router finished were published only between records: while a record ran
     * long, the ones before it were neither counted nor committed, not even by {@code close()} (5 of 5 runs).
     */
    @Test
    void partitionOrderCommitsWhatFinishedBeforeARecordThatRunsLong() throws Exception {
        String topic = topicWithRecords("partition-stuck", 20);
        TopicPartition tp = new TopicPartition(topic, 0);
        String group = EmbeddedKafka.name("g");
        CountDownLatch release = new CountDownLatch(1);
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).ordering(Ordering.PARTITION).commitInterval(Duration.ofMillis(20))
                .closeTimeout(Duration.ofMillis(300))
                .handler(r -> {
                    if (r.offset() == 5) {
                        release.await(30, TimeUnit.SECONDS);
                    }
                })
                .build();
        try {
            processor.start();
            await(Duration.ofSeconds(30), "offsets 0 to 4 committed while offset 5 runs",
                    () -> Long.valueOf(5).equals(processor.statistics().committedOffsets().get(tp)));
            assertEquals(5, processor.statistics().completed());
            processor.close();
            assertEquals(Map.of(tp, 5L), KAFKA.committed(group), "close commits the completed prefix");
        } finally {
            release.countDown();
            processor.close();
        }
    }

    /** A record key whose {@code hashCode} and {@code equals} throw, as a key class with a bug may. */
    static final class BrokenKey {
        @Override
        public int hashCode() {
            throw new IllegalStateException("a broken hashCode");
        }

        @Override
        public boolean equals(Object o) {
            throw new IllegalStateException("a broken equals");
        }

        @Override
        public String toString() {
            return "broken";
        }
    }

    /** A record key whose {@code hashCode} works and whose {@code equals} throws (a null field compared, say). */
    static final class UnequalKey {
        @Override
        public int hashCode() {
            return 7;
        }

        @Override
        public boolean equals(Object o) {
            throw new NullPointerException("a broken equals");
        }

        @Override
        public String toString() {
            return "unequal";
        }
    }

    /** Reads the key "broken" as a {@link BrokenKey}, "unequal" as an {@link UnequalKey}, any other as its string. */
    public static final class BrokenKeyDeserializer implements Deserializer<Object> {
        @Override
        public Object deserialize(String topic, byte[] data) {
            String s = new String(data, StandardCharsets.UTF_8);
            return s.equals("broken") ? new BrokenKey() : s.equals("unequal") ? new UnequalKey() : s;
        }
    }

    /**
     * Routing hashed each record's key unguarded: a key whose {@code hashCode} threw ended the polling thread under
     * {@code KEY_LATEST} (the processor stopped; nothing more was polled or committed), and under {@code KEY} left the
     * partition's router scheduled for good, so nothing after that record was handled or committed. Such records now
     * keep the order of the partition's records without a key; so do those of a key whose {@code equals} alone throws,
     * the first of them included (kept in a slot of its own, it ran beside the later ones).
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"KEY", "KEY_LATEST"})
    void aKeyWhoseHashCodeThrowsNeitherStopsThePollingNorHoldsItsPartition(Ordering ordering) throws Exception {
        String topic = EmbeddedKafka.name("broken-key");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            String key = i % 10 == 5 ? "broken" : i % 10 == 7 || i % 10 == 8 ? "unequal" : "k" + i % 3;
            records.add(new ProducerRecord<>(topic, 0, key, "v" + i));
        }
        KAFKA.produce(records);
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, BrokenKeyDeserializer.class.getName());
        LongAdder handled = new LongAdder();
        LongAdder handledBroken = new LongAdder();
        AtomicInteger unequalRunning = new AtomicInteger();
        AtomicInteger unequalAtOnce = new AtomicInteger();
        try (KafkaProcessor<Object, String> processor = KafkaProcessor.<Object, String>builder(props)
                .topics(topic).ordering(ordering).commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    if (r.key() instanceof UnequalKey) {
                        unequalAtOnce.accumulateAndGet(unequalRunning.incrementAndGet(), Math::max);
                        Thread.sleep(20); // long enough for a second record of the key to start beside it, if it can
                        unequalRunning.decrementAndGet();
                    }
                    if (!(r.key() instanceof String)) {
                        handledBroken.increment();
                    }
                    handled.increment();
                })
                .build()) {
            processor.start();
            awaitCommitted(processor, Map.of(tp, 30L));
            await(Duration.ofSeconds(10), "every record counted", () -> processor.statistics().completed() == 30);
            // Under KEY_LATEST some records of a good key may be superseded; none of the broken-key ones, which share
            // the partition's null-key slot and are never superseded.
            assertEquals(9, handledBroken.sum(), "every record of a broken key ran");
            assertEquals(1, unequalAtOnce.get(), "records of the key whose equals throws ran one at a time");
            if (ordering == Ordering.KEY) {
                assertEquals(30, handled.sum());
            }
        }
    }

    /** Overflows its stack on the value "bad", as a recursive decoder might on a malformed record. */
    public static final class OverflowingDeserializer implements Deserializer<String> {
        @Override
        public String deserialize(String topic, byte[] data) {
            String s = new String(data, StandardCharsets.UTF_8);
            if (s.equals("bad")) {
                throw new StackOverflowError("deserializer overflow");
            }
            return s;
        }
    }

    /**
     * The consumer wraps only a deserializer's {@code RuntimeException}; an {@code Error} came out of {@code poll}
     * bare and ended the polling thread: nothing more was polled, handled or committed, and nobody was told (5 of 5
     * runs).
     */
    @Test
    void aDeserializerThatThrowsAnErrorReachesTheFailureHandlerAndPollingGoesOn() throws Exception {
        String topic = EmbeddedKafka.name("deserializer-error");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            records.add(new ProducerRecord<>(topic, i % 2, "k" + i, i == 10 ? "bad" : "v" + i));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 2);
        String group = EmbeddedKafka.name("g");
        Properties props = KAFKA.consumerProperties(group);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, OverflowingDeserializer.class.getName());
        LongAdder handled = new LongAdder();
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).commitInterval(Duration.ofMillis(20))
                .handler(r -> handled.increment())
                .onFailure((r, e) -> failures.add(e))
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            assertEquals(39, handled.sum(), "every other record was handled");
            assertEquals(1, failures.size(), () -> "the failure handler saw: " + failures);
            RecordDeserializationException e = assertInstanceOf(RecordDeserializationException.class,
                    failures.peek());
            assertInstanceOf(StackOverflowError.class, e.getCause().getCause(), e::toString);
        }
    }

    /** An interceptor that acts in {@code onConsume} alone (made by the consumer from its class name). */
    public abstract static class ConsumeOnlyInterceptor implements ConsumerInterceptor<String, String> {
        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }
    }

    /**
     * An interceptor whose {@code onConsume} throws an Error, {@link #times} times, whenever it is given a record at or
     * past {@link #from}: Kafka catches only exceptions there, so the Error leaves {@code poll()} after the consumer's
     * position has passed those records.
     */
    public static final class ErrorInterceptor extends ConsumeOnlyInterceptor {
        static volatile long from;
        static final AtomicInteger TIMES = new AtomicInteger();
        static final AtomicInteger THROWN = new AtomicInteger();

        @Override
        public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
            for (ConsumerRecord<String, String> r : records) {
                if (r.offset() >= from && TIMES.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    THROWN.incrementAndGet();
                    throw new NoClassDefFoundError("a class the interceptor needs (thrown on purpose)");
                }
            }
            return records;
        }

    }

    /**
     * A poll that threw an Error after the consumer had collected its records (an interceptor's, here) was logged and
     * polling went on; nothing was in flight, so the commit followed the consumer's position, past records no handler
     * saw: 0 of 20 handled with the end committed (4 of 4 runs). Now the partition goes back to the first offset not
     * taken: from the group's start (the failed poll was the first) or from the records handed out before it.
     */
    @ParameterizedTest(name = "the Error at offset {0}")
    @ValueSource(longs = {0, 10})
    void recordsOfAPollThatThrewAfterFetchingThemAreNotSkipped(long errorAt) throws Exception {
        ErrorInterceptor.from = errorAt;
        ErrorInterceptor.TIMES.set(1);
        ErrorInterceptor.THROWN.set(0);
        String topic = topicWithRecords("poll-error", 20);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 1);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, ErrorInterceptor.class.getName());
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        Set<String> handled = ConcurrentHashMap.newKeySet();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).commitInterval(Duration.ofMillis(20))
                .handler(r -> handled.add(r.value()))
                .build()) {
            processor.start();
            awaitCommitted(processor, end);
            assertEquals(1, ErrorInterceptor.THROWN.get(), "the interceptor's Errors");
            assertEquals(20, handled.size(), () -> "handled before the commit reached the end: " + handled);
        }
    }

    /**
     * As above, with a {@code close()} under way when the poll throws (here from another thread, which has set the
     * close going and waits for the polling thread): the failed poll was left as it was, without going back, as
     * polling was about to end; but the close's own commit follows the consumer's position when nothing is in flight,
     * and so went past the records of that poll, which no handler saw: 10 of 20 handled and 15 committed. Now the
     * partition goes back first, and the close commits the 10 handled.
     */
    @Test
    void aPollThatThrowsDuringCloseDoesNotLetTheCloseCommitPastItsRecords() throws Exception {
        String topic = topicWithRecords("poll-error-closing", 20);
        TopicPartition tp = new TopicPartition(topic, 0);
        String group = EmbeddedKafka.name("g");
        Properties props = KAFKA.consumerProperties(group);
        props.put(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, ClosingErrorInterceptor.class.getName());
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        Set<String> handled = ConcurrentHashMap.newKeySet();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).commitInterval(Duration.ofMillis(20))
                .handler(r -> handled.add(r.value()))
                .build();
        ClosingErrorInterceptor.PROCESSOR.set(processor);
        ClosingErrorInterceptor.CLOSER.set(null);
        try {
            processor.start();
            await(Duration.ofSeconds(60), "the close begun by the interceptor",
                    () -> ClosingErrorInterceptor.CLOSER.get() != null);
            ClosingErrorInterceptor.CLOSER.get().join(TimeUnit.SECONDS.toMillis(60));
            assertFalse(ClosingErrorInterceptor.CLOSER.get().isAlive(), "the close returned");
            assertEquals(10, handled.size(), () -> "handled: " + handled);
            assertEquals(Map.of(tp, 10L), KAFKA.committed(group), "committed past records no handler saw");
        } finally {
            ClosingErrorInterceptor.PROCESSOR.set(null);
            processor.close();
        }
    }

    /**
     * At the first record at or past offset 10 once the ones before are handled, has another thread close the
     * processor, waits until that close waits for the polling thread (the close has begun), then throws an Error, which
     * Kafka lets out of {@code poll()} after the consumer's position has passed the records.
     */
    public static final class ClosingErrorInterceptor extends ConsumeOnlyInterceptor {
        static final AtomicReference<KafkaProcessor<String, String>> PROCESSOR = new AtomicReference<>();
        static final AtomicReference<Thread> CLOSER = new AtomicReference<>();

        @Override
        public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
            KafkaProcessor<String, String> processor = PROCESSOR.get();
            for (ConsumerRecord<String, String> r : records) {
                if (processor != null && r.offset() >= 10 && CLOSER.get() == null) {
                    // Handled before the close begins: a drain of them would not tell this defect apart.
                    await(Duration.ofSeconds(30), "the first 10 completed",
                            () -> processor.statistics().completed() >= 10);
                    Thread closer = new Thread(processor::close, "outside-close");
                    closer.start();
                    CLOSER.set(closer);
                    await(Duration.ofSeconds(30), "the close waits for the polling thread",
                            () -> EmbeddedKafka.onStack(closer, "joinPollThread")
                                    && closer.getState() == Thread.State.WAITING);
                    throw new NoClassDefFoundError("a class the interceptor needs (thrown on purpose)");
                }
            }
            return records;
        }

    }

    /**
     * An Error that comes back with the same records holds their partition where it is: polled again after a pause
     * that doubles while polls keep failing, the records after it are neither handled nor committed, and
     * {@code close()} is not held by the pause (10 s at most).
     */
    @Test
    void anErrorThatComesBackWithTheSameRecordsHoldsThemAndCloseIsNotHeldByThePause() throws Exception {
        ErrorInterceptor.from = 10;
        ErrorInterceptor.TIMES.set(Integer.MAX_VALUE);
        ErrorInterceptor.THROWN.set(0);
        String topic = topicWithRecords("poll-error-again", 20);
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, ErrorInterceptor.class.getName());
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        Set<String> handled = ConcurrentHashMap.newKeySet();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).commitInterval(Duration.ofMillis(20))
                .handler(r -> handled.add(r.value()))
                .build();
        long closedIn;
        try {
            processor.start();
            awaitCommitted(processor, Map.of(tp, 10L));
            // Six failed polls: pauses of 0.2, 0.4, 0.8, 1.6 and 3.2 s between them, and the sixth's of 6.4 s begins
            // as we close.
            await(Duration.ofSeconds(30), "six failed polls", () -> ErrorInterceptor.THROWN.get() >= 6);
        } finally {
            long start = System.nanoTime();
            processor.close();
            closedIn = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        }
        assertEquals(10, handled.size(), () -> "handled: " + handled);
        assertEquals(10L, processor.statistics().committedOffsets().get(tp));
        assertTrue(closedIn < 3_000, "close() took " + closedIn + " ms, held by the pause after a failed poll");
    }

    /**
     * The polling thread added a poll's records to {@code polled()} after it had handed them to the routers, which
     * may finish some first: {@code completed()} read above {@code polled()} (by up to a poll's records) in up to 7%
     * of the snapshots.
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"KEY_LATEST", "UNORDERED"})
    void completedNeverReadsAbovePolled(Ordering ordering) throws Exception {
        String topic = EmbeddedKafka.name("polled-completed");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            records.add(new ProducerRecord<>(topic, i % 2, "k" + (i % 50), "v" + i));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 2);
        AtomicLong above = new AtomicLong();
        AtomicLong samples = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> readerFailed = new AtomicReference<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic).ordering(ordering).commitInterval(Duration.ofMillis(50))
                .handler(r -> { })
                .build()) {
            Thread reader = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        KafkaStatistics s = processor.statistics();
                        samples.incrementAndGet();
                        if (s.completed() > s.polled()) {
                            above.incrementAndGet();
                        }
                    }
                } catch (Throwable t) {
                    // Uncaught, it only ended the reader: the snapshots read before it passed the checks below.
                    readerFailed.set(t);
                }
            }, "statistics-reader");
            reader.start();
            try {
                processor.start();
                awaitCommitted(processor, end);
            } finally {
                stop.set(true);
                reader.join();
            }
        }
        if (readerFailed.get() != null) {
            fail("reading the statistics threw after " + samples + " snapshots", readerFailed.get());
        }
        assertTrue(samples.get() > 0);
        assertEquals(0, above.get(), above + " of " + samples + " snapshots read completed() above polled()");
    }

    /**
     * {@code start()} moved to the running state before it made the consumer, the executor and the polling thread; a
     * {@code close()} in between found none of them and returned, and they were left running (9 of 10 runs).
     */
    @Test
    void closeRacingStartLeavesNothingRunning() throws Exception {
        for (int round = 0; round < 10; round++) {
            String group = EmbeddedKafka.name("race");
            Map<String, Object> config = new HashMap<>();
            config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"); // nobody listens: nothing is needed
            config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(config)
                    .topics("t").handler(r -> { }).closeTimeout(Duration.ZERO).build();
            AtomicReference<Throwable> startFailed = new AtomicReference<>();
            Thread starter = new Thread(() -> {
                try {
                    processor.start();
                } catch (IllegalStateException closedFirst) {
                    // close() won the race: start() refuses, as after any close
                } catch (Throwable t) {
                    // Uncaught, it only ended the starter: a start() that failed left nothing running to find below.
                    startFailed.set(t);
                }
            }, "starter");
            starter.start();
            Thread.sleep(2 + round % 5);
            processor.close();
            starter.join();
            if (startFailed.get() != null) {
                fail("start() threw in round " + round, startFailed.get());
            }
            assertTrue(Thread.getAllStackTraces().keySet().stream()
                            .noneMatch(t -> t.isAlive() && t.getName().equals("kafka-" + group + "-poll")),
                    "the polling thread outlived close()");
            ContextExecutor own = ownExecutor(processor);
            assertFalse(own != null && !own.isShutdown(), "the processor's own executor outlived close()");
        }
    }

    /**
     * A bounded executor that refused the records' run: the processor offers it again after each poll, but the wait of
     * a close (or a revocation) did not, so it sat out the whole {@code closeTimeout} beside an executor with room, and
     * dropped the records (close took 20 s, nothing handled or committed).
     */
    @Test
    void closeRunsRecordsTheExecutorRefusedOnceItHasRoom() throws Exception {
        String topic = topicWithRecords("refused", 10);
        String group = EmbeddedKafka.name("g");
        AtomicInteger handled = new AtomicInteger();
        CountDownLatch release = new CountDownLatch(1);
        try (GatlingExecutor executor = GatlingExecutor.builder().name("full").coreThreads(1).maxThreads(1)
                .maxQueued(1).build()) {
            CountDownLatch holding = new CountDownLatch(1);
            executor.execute(() -> {
                holding.countDown();
                awaitQuietly(release);
            });
            assertTrue(holding.await(30, TimeUnit.SECONDS));
            executor.execute(() -> { }); // the one place: every run the processor asks for is refused
            KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                            KAFKA.consumerProperties(group))
                    .topics(topic).executor(executor).closeTimeout(Duration.ofSeconds(20))
                    .handler(r -> handled.incrementAndGet()).build();
            processor.start();
            await(Duration.ofSeconds(30), "the records polled", () -> processor.statistics().polled() == 10);
            Thread closer = new Thread(processor::close, "closer");
            long start = System.nanoTime();
            closer.start();
            // The close waits for the partition's records (its drain on the polling thread's stack); then the executor
            // makes room. Released before the drain, the records would run through the re-offer after a poll, and a
            // drain that does not offer them again would pass.
            await(Duration.ofSeconds(30), "the close's drain", () -> EmbeddedKafka.pollingThreadsIn(group, "drain"));
            release.countDown();
            closer.join(TimeUnit.SECONDS.toMillis(60));
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(tookMillis < 10_000, "close took " + tookMillis + " ms beside an executor with room");
            assertEquals(10, handled.get());
            assertEquals(Map.of(new TopicPartition(topic, 0), 10L), KAFKA.committed(group));
        } finally {
            release.countDown();
        }
    }

    /**
     * A transactional topic: the commit went one past the last record handed out, never over the transaction markers
     * and aborted records that follow it, which the consumer never returns; the group's lag stayed above zero for good
     * (committed 10 of 17: ten records, a commit marker, five aborted records and their abort marker).
     */
    @Test
    void theCommitOfATransactionalTopicReachesItsEnd() throws Exception {
        String topic = EmbeddedKafka.name("transactional");
        KAFKA.createTopic(topic, 1);
        Properties producerProperties = transactionalProducer();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProperties)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
            }
            producer.commitTransaction();
            abortTransaction(producer, topic, 5);
        }
        awaitEndOffset(topic, 17); // ten records, five aborted, two markers
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 1);
        Properties consumerProperties = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        consumerProperties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        AtomicInteger handled = new AtomicInteger();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(consumerProperties)
                .topics(topic).commitInterval(Duration.ofMillis(50))
                .handler(r -> handled.incrementAndGet()).build();
        try {
            processor.start();
            awaitCommitted(processor, end);
            assertEquals(10, handled.get(), "the aborted records are never handed out");
            // An aborted transaction after everything was handled: the consumer moves its position past it and its
            // marker without returning a record, and the commit must follow it there too.
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProperties)) {
                producer.initTransactions();
                abortTransaction(producer, topic, 3);
            }
            awaitEndOffset(topic, 21);
            awaitCommitted(processor, KAFKA.endOffsets(topic, 1));
            assertEquals(10, handled.get());
        } finally {
            processor.close();
        }
    }

    /**
     * A transactional topic whose last record is followed by its transaction's marker, which the consumer moves past
     * without returning anything: an assignment that returned no record never let its commit follow the consumer's
     * position there (the group's offset stayed at 10 of 11 however long the processor ran); and the commits of
     * {@code close()} and of a revocation, which may come before the next commit tick, went only one past the last
     * record.
     */
    @Test
    void aFreshAssignmentThatReturnsNoRecordCommitsPastTheMarkersAtItsPosition() throws Exception {
        String topic = EmbeddedKafka.name("transactional-idle");
        KAFKA.createTopic(topic, 1);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(transactionalProducer())) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
            }
            producer.commitTransaction();
        }
        awaitEndOffset(topic, 11); // ten records and the commit marker
        TopicPartition tp = new TopicPartition(topic, 0);
        String group = EmbeddedKafka.name("g");
        Properties consumerProperties = KAFKA.consumerProperties(group);
        consumerProperties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        // The group has handled the ten records: its offset is one past the last, before the marker.
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProperties)) {
            consumer.assign(List.of(tp));
            consumer.commitSync(Map.of(tp, new OffsetAndMetadata(10)));
        }
        AtomicInteger handled = new AtomicInteger();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(consumerProperties)
                .topics(topic).commitInterval(Duration.ofMillis(50))
                .handler(r -> handled.incrementAndGet()).build()) {
            processor.start();
            awaitCommitted(processor, Map.of(tp, 11L));
            assertEquals(0, handled.get(), "no record after the group's offset but the marker");
        }
        assertEquals(Map.of(tp, 11L), KAFKA.committed(group));
    }

    /** Properties of a transactional producer of strings with a transactional id of its own. */
    private static Properties transactionalProducer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", KAFKA.bootstrap());
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("transactional.id", EmbeddedKafka.name("tx"));
        return p;
    }

    /**
     * With an executor the caller gave, {@code close()} left the processor's retry timers on it: the caller's own
     * {@code close()} of the executor then waited for the capped backoff (18.7 s for a {@code retryBackoff} of 20 s in
     * an audit's probe), and its {@code shutdownNow()} handed back the processor's internal retry.
     */
    @Test
    void closeCancelsTheRetryTimersItLeftOnAGivenExecutor() throws Exception {
        String topic = topicWithRecords("given-timers", 1);
        AtomicInteger calls = new AtomicInteger();
        GatlingExecutor executor = new GatlingExecutor("given-timers", 2);
        try {
            KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                            KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                    .topics(topic).executor(executor).retries(0).retryBackoff(Duration.ofSeconds(20))
                    .closeTimeout(Duration.ofMillis(200))
                    .handler(r -> {
                        calls.incrementAndGet();
                        throw new IllegalStateException("always");
                    }).build();
            processor.start();
            await(Duration.ofSeconds(30), "the record to fail", () -> processor.statistics().failed() == 1);
            processor.close();
            assertEquals(1, calls.get(), "no retry within the backoff");
        } finally {
            assertEquals(List.of(), executor.shutdownNow(), "nothing of the closed processor's left waiting");
            assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
        }
    }

    /** A new topic of one partition holding {@code n} records, keys k0, k1, ... and values v0, v1, ... */
    private static String topicWithRecords(String name, int n) throws Exception {
        String topic = EmbeddedKafka.name(name);
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            records.add(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
        }
        KAFKA.produce(records);
        return topic;
    }

    /** Sends {@code n} records to partition 0 of {@code topic} in a transaction, and aborts it. */
    private static void abortTransaction(KafkaProducer<String, String> producer, String topic, int n) {
        producer.beginTransaction();
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, 0, "aborted-" + i, "aborted"));
        }
        producer.flush();
        producer.abortTransaction();
    }

    /**
     * Waits for partition 0's end offset to reach {@code end}: the coordinator writes a transaction's marker after
     * {@code abortTransaction} returns (the end offset read one short at once in one run).
     */
    private static void awaitEndOffset(String topic, long end) {
        await(Duration.ofSeconds(30), "the end offset " + end, () -> {
            try {
                return KAFKA.endOffsets(topic, 1).get(new TopicPartition(topic, 0)) == end;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A second {@code close()}, come while the first waited for the processor's own executor to end, returned at once:
     * a handler that had overrun the close timeout still ran on the processor's thread after its caller had been told
     * that none was left.
     */
    @Test
    void aSecondCloseWaitsForTheHandlersAsTheFirstDoes() throws Exception {
        String topic = EmbeddedKafka.name("close-twice");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, 0, "k", "v")));
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean handlerDone = new AtomicBoolean();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic).closeTimeout(Duration.ofSeconds(2))
                .handler(r -> {
                    running.countDown();
                    while (true) { // overruns the close timeout, and ignores the interrupt that ends it
                        try {
                            release.await();
                            break;
                        } catch (InterruptedException e) {
                            interrupted.countDown();
                        }
                    }
                    handlerDone.set(true);
                })
                .build();
        AtomicBoolean doneWhenSecondReturned = new AtomicBoolean();
        Thread first = new Thread(processor::close, "first-close");
        Thread second = new Thread(() -> {
            processor.close();
            doneWhenSecondReturned.set(handlerDone.get());
        }, "second-close");
        try {
            processor.start();
            assertTrue(running.await(30, TimeUnit.SECONDS), "the record reaches the handler");
            first.start();
            // The interrupt comes from the first close shutting the executor down, after its closeTimeout: it then
            // waits for the executor to end.
            assertTrue(interrupted.await(30, TimeUnit.SECONDS), "the first close interrupts the handler");
            second.start();
            // The handler is released only once the second close waits, or has returned.
            await(Duration.ofSeconds(30), "the second close waits or returns",
                    () -> second.getState() == Thread.State.TIMED_WAITING
                            || second.getState() == Thread.State.TERMINATED);
            release.countDown();
            second.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(second.isAlive());
            assertTrue(doneWhenSecondReturned.get(), "the second close returned while a handler still ran");
        } finally {
            release.countDown();
            processor.close();
            first.join(TimeUnit.SECONDS.toMillis(30));
        }
    }

    /**
     * A deserializer that is a {@link ClusterResourceListener} or a {@link Monitorable}: a plain consumer given the same
     * properties tells it the cluster's id and hands it its plugin metrics, but the processor gave the consumer its
     * own guard around the deserializer, which is neither, so neither call reached it (cluster id and plugin
     * metrics both null, as the first assertion saw).
     */
    @Test
    void aDeserializerGetsTheClusterIdAndPluginMetricsAsUnderAPlainConsumer() throws Exception {
        String topic = EmbeddedKafka.name("deserializer-hooks");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, 0, "k", "v")));
        HookedDeserializer.CLUSTER.set(null);
        HookedDeserializer.METRICS.set(null);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, HookedDeserializer.class.getName());
        CountDownLatch handled = new CountDownLatch(1);
        HookedDeserializer given = new HookedDeserializer();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).keyDeserializer(given)
                .handler(r -> handled.countDown())
                .build()) {
            processor.start();
            assertTrue(handled.await(30, TimeUnit.SECONDS), "the record is handled");
            assertTrue(HookedDeserializer.CLUSTER.get() != null, "the deserializer named in the properties was"
                    + " told the cluster id");
            assertTrue(HookedDeserializer.METRICS.get() != null, "the deserializer named in the properties was"
                    + " given its plugin metrics");
            assertTrue(given.cluster != null, "the key deserializer given as an instance was told the cluster id");
            assertTrue(given.metrics != null, "the key deserializer given as an instance got its plugin metrics");
            // The consumer tags a plugin's metrics with the plugin's class: the deserializer's, as a plain consumer's.
            assertEquals("HookedDeserializer", HookedDeserializer.METRICS.get()
                    .metricName("m", "a metric", new java.util.LinkedHashMap<>()).tags().get("class"));
        }
    }

    /** Records the consumer's calls of the two optional interfaces of a deserializer. */
    public static final class HookedDeserializer implements Deserializer<String>, ClusterResourceListener,
            Monitorable {
        static final AtomicReference<ClusterResource> CLUSTER = new AtomicReference<>();
        static final AtomicReference<PluginMetrics> METRICS = new AtomicReference<>();
        volatile ClusterResource cluster;
        volatile PluginMetrics metrics;

        @Override
        public String deserialize(String topic, byte[] data) {
            return data == null ? null : new String(data, StandardCharsets.UTF_8);
        }

        @Override
        public void onUpdate(ClusterResource clusterResource) {
            cluster = clusterResource;
            CLUSTER.set(clusterResource);
        }

        @Override
        public void withPluginMetrics(PluginMetrics pluginMetrics) {
            metrics = pluginMetrics;
            METRICS.set(pluginMetrics);
        }
    }

    /**
     * {@code close()} from a handler (stop on a fatal error) could not wait for that handler: the drain of the close,
     * on the polling thread, waited the whole {@code closeTimeout} for the calling handler's own record; then, with the
     * processor's own executor, {@code shutdownNow} interrupted the calling handler itself, and the wait for the
     * executor's end, from one of that executor's workers, took {@code closeTimeout} again and logged that a handler
     * ignores interrupts (4,152 ms with a closeTimeout of 2 s; about 60 s with the default). It now starts the close,
     * returns at once without interrupting its caller, and the polling thread ends the close once the handler returns.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void closeFromAHandlerReturnsAtOnceAndTheCloseEndsOnceTheHandlerReturns(boolean fromFailureHandler)
            throws Exception {
        String topic = topicWithRecords(fromFailureHandler ? "close-in-on-failure" : "close-in-handler", 1);
        String group = EmbeddedKafka.name("g");
        AtomicReference<KafkaProcessor<String, String>> self = new AtomicReference<>();
        AtomicLong closeMillis = new AtomicLong(-1);
        AtomicBoolean interruptedAfterClose = new AtomicBoolean();
        CountDownLatch closeReturned = new CountDownLatch(1);
        Runnable stop = () -> {
            long start = System.nanoTime();
            self.get().close();
            closeMillis.set(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
            interruptedAfterClose.set(Thread.currentThread().isInterrupted());
            closeReturned.countDown();
        };
        KafkaProcessor.Builder<String, String> builder = KafkaProcessor.<String, String>builder(
                KAFKA.consumerProperties(group)).topics(topic).closeTimeout(Duration.ofSeconds(30));
        if (fromFailureHandler) {
            builder.retries(0).handler(r -> {
                throw new IllegalStateException("fatal");
            }).onFailure((r, e) -> stop.run());
        } else {
            builder.handler(r -> stop.run());
        }
        KafkaProcessor<String, String> processor = builder.build();
        self.set(processor);
        LogCapture logs = LogCapture.start();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            ContextExecutor own = ownExecutor(processor);
            // Bounded above the old call's two closeTimeouts, so that it fails on the time measured below.
            assertTrue(closeReturned.await(90, TimeUnit.SECONDS), "the close from the handler returned");
            assertTrue(closeMillis.get() < 5_000, "close() from the handler took " + closeMillis.get()
                    + " ms with a closeTimeout of 30 s");
            assertFalse(interruptedAfterClose.get(), "the handler's own close interrupted it");
            poll.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(poll.isAlive(), "the polling thread outlived the handler");
            assertTrue(own.awaitTermination(20, TimeUnit.SECONDS), "the processor's own executor did not end");
            assertEquals(Map.of(new TopicPartition(topic, 0), 1L), KAFKA.committed(group),
                    "the calling handler's record, completed, is committed");
            assertEquals(1, processor.statistics().completed());
            assertEquals(List.of(), logs.messagesAtLeast(java.util.logging.Level.WARNING));
        } finally {
            logs.close();
            processor.close();
        }
    }

    /**
     * A {@code close()} from outside while a close from a handler is under way waits, as a second close always did,
     * for the whole close: the handler's return, the drain and commit, and the end of the processor's own executor
     * (on the code before, the close from the handler did not return for about 60 s).
     */
    @Test
    void anOutsideCloseDuringACloseFromAHandlerWaitsForTheWholeClose() throws Exception {
        String topic = topicWithRecords("close-in-handler-and-outside", 1);
        String group = EmbeddedKafka.name("g");
        AtomicReference<KafkaProcessor<String, String>> self = new AtomicReference<>();
        CountDownLatch closedInside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean handlerDone = new AtomicBoolean();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).closeTimeout(Duration.ofSeconds(30))
                .handler(r -> {
                    self.get().close();
                    closedInside.countDown();
                    release.await(30, TimeUnit.SECONDS);
                    handlerDone.set(true);
                }).build();
        self.set(processor);
        AtomicBoolean allEndedWhenOutsideReturned = new AtomicBoolean();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            ContextExecutor own = ownExecutor(processor);
            assertTrue(closedInside.await(45, TimeUnit.SECONDS), "the close from the handler returned");
            Thread outside = new Thread(() -> {
                processor.close();
                allEndedWhenOutsideReturned.set(handlerDone.get() && !poll.isAlive() && own.isTerminated());
            }, "outside-close");
            outside.start();
            // The handler is released only once the outside close waits, or has returned.
            await(Duration.ofSeconds(30), "the outside close waits or returns",
                    () -> outside.getState() == Thread.State.WAITING
                            || outside.getState() == Thread.State.TIMED_WAITING
                            || outside.getState() == Thread.State.TERMINATED);
            release.countDown();
            outside.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(outside.isAlive());
            assertTrue(allEndedWhenOutsideReturned.get(), "the outside close returned before the close had ended");
            assertEquals(Map.of(new TopicPartition(topic, 0), 1L), KAFKA.committed(group));
        } finally {
            release.countDown();
            processor.close();
        }
    }

    /**
     * As above, from the failure handler of a record that cannot be deserialized, which runs apart from the router's
     * records: its close returns at once, the polling thread ends the close once it returns, and the record it
     * acknowledged is committed past. Marked as a handler of the processor like the others; left unmarked, its close
     * waited out the drain's closeTimeout for itself, then, with the own executor, another closeTimeout for its own
     * thread after interrupting it.
     */
    @Test
    void closeFromTheFailureHandlerOfAnUndeserializableRecordReturnsAtOnce() throws Exception {
        String topic = EmbeddedKafka.name("close-in-deserialization-failure");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, 0, "k", "bad")));
        String group = EmbeddedKafka.name("g");
        Properties props = KAFKA.consumerProperties(group);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, FailureTest.PickyDeserializer.class.getName());
        AtomicReference<KafkaProcessor<String, String>> self = new AtomicReference<>();
        AtomicLong closeMillis = new AtomicLong(-1);
        AtomicBoolean interruptedAfterClose = new AtomicBoolean();
        CountDownLatch closeReturned = new CountDownLatch(1);
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).closeTimeout(Duration.ofSeconds(10))
                .handler(r -> fail("no record can be deserialized"))
                .onFailure((r, e) -> {
                    long start = System.nanoTime();
                    self.get().close();
                    closeMillis.set(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                    interruptedAfterClose.set(Thread.currentThread().isInterrupted());
                    closeReturned.countDown();
                }).build();
        self.set(processor);
        try {
            processor.start();
            Thread poll = pollThread(processor);
            ContextExecutor own = ownExecutor(processor);
            assertTrue(closeReturned.await(60, TimeUnit.SECONDS), "the close from the failure handler returned");
            assertTrue(closeMillis.get() < 5_000, "close() from the failure handler took " + closeMillis.get()
                    + " ms with a closeTimeout of 10 s");
            assertFalse(interruptedAfterClose.get(), "the failure handler's own close interrupted it");
            poll.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(poll.isAlive(), "the polling thread outlived the failure handler");
            assertTrue(own.awaitTermination(20, TimeUnit.SECONDS), "the processor's own executor did not end");
            assertEquals(Map.of(new TopicPartition(topic, 0), 1L), KAFKA.committed(group),
                    "the record the failure handler acknowledged is committed past");
        } finally {
            processor.close();
        }
    }

    /**
     * Only this processor's own handlers may start its close without waiting: a handler of another processor sharing
     * the executor waits, as any caller, for this one's records to finish (it guards the mark of a handler's thread,
     * which a mark of "any worker of the executor" would fail).
     */
    @Test
    void aCloseFromAHandlerOfAnotherProcessorOnTheSameExecutorWaits() throws Exception {
        String topicA = topicWithRecords("close-other-a", 1);
        String topicB = topicWithRecords("close-other-b", 1);
        String groupA = EmbeddedKafka.name("g");
        CountDownLatch aRunning = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        AtomicBoolean aDone = new AtomicBoolean();
        AtomicReference<Thread> bThread = new AtomicReference<>();
        AtomicBoolean aDoneWhenBsCloseReturned = new AtomicBoolean();
        CountDownLatch bsCloseReturned = new CountDownLatch(1);
        try (GatlingExecutor executor = new GatlingExecutor("shared-close", 4)) {
            KafkaProcessor<String, String> a = KafkaProcessor.<String, String>builder(KAFKA.consumerProperties(groupA))
                    .topics(topicA).executor(executor).closeTimeout(Duration.ofSeconds(30))
                    .handler(r -> {
                        aRunning.countDown();
                        releaseA.await(30, TimeUnit.SECONDS);
                        aDone.set(true);
                    }).build();
            KafkaProcessor<String, String> b = KafkaProcessor.<String, String>builder(
                            KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                    .topics(topicB).executor(executor).closeTimeout(Duration.ofSeconds(30))
                    .handler(r -> {
                        bThread.set(Thread.currentThread());
                        a.close();
                        aDoneWhenBsCloseReturned.set(aDone.get());
                        bsCloseReturned.countDown();
                    }).build();
            try {
                a.start();
                assertTrue(aRunning.await(30, TimeUnit.SECONDS), "A's record reaches its handler");
                b.start();
                await(Duration.ofSeconds(30), "B's handler waits in A's close, or returns", () -> {
                    Thread t = bThread.get();
                    return bsCloseReturned.getCount() == 0 || t != null
                            && (t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING)
                            && EmbeddedKafka.onStack(t, "close");
                });
                releaseA.countDown();
                assertTrue(bsCloseReturned.await(30, TimeUnit.SECONDS));
                assertTrue(aDoneWhenBsCloseReturned.get(), "A's close from B's handler did not wait for A's handler");
                assertEquals(Map.of(new TopicPartition(topicA, 0), 1L), KAFKA.committed(groupA));
            } finally {
                releaseA.countDown();
                a.close();
                b.close();
            }
        }
    }

    /**
     * An {@link Error} out of the consumer's {@code close} (one that Kafka does not wrap, an {@code OutOfMemoryError}
     * say) during a close from a handler, which the polling thread ends: it left the polling thread's {@code finally}
     * before the end of the close, so the processor's own executor was never shut down (it was still running 10 s
     * later), and the error went to the thread's default handler, past the processor's log. The close now ends
     * anyway, and the error is logged.
     */
    @Test
    void anErrorFromTheConsumersCloseDuringACloseFromAHandlerStillEndsTheClose() throws Exception {
        String topic = topicWithRecords("close-error-from-consumer", 1);
        String group = EmbeddedKafka.name("g");
        Error thrown = new OutOfMemoryError("thrown on purpose by the consumer's close");
        AtomicReference<KafkaProcessor<String, String>> self = new AtomicReference<>();
        CountDownLatch closedInside = new CountDownLatch(1);
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).closeTimeout(Duration.ofSeconds(10))
                .consumerMaker((config, keys, values) -> new KafkaConsumer<>(config, keys, values) {
                    @Override
                    public void close(org.apache.kafka.clients.consumer.CloseOptions option) {
                        super.close(option);
                        throw thrown;
                    }
                })
                .handler(r -> {
                    self.get().close();
                    closedInside.countDown();
                }).build();
        self.set(processor);
        LogCapture logs = LogCapture.start();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            ContextExecutor own = ownExecutor(processor);
            assertTrue(closedInside.await(30, TimeUnit.SECONDS), "the close from the handler returned");
            poll.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(poll.isAlive(), "the polling thread ended");
            assertTrue(own.awaitTermination(10, TimeUnit.SECONDS), "the processor's own executor ended");
            assertTrue(logs.thrown().contains(thrown), "the consumer's error is logged: " + logs.thrown());
            assertEquals(Map.of(new TopicPartition(topic, 0), 1L), KAFKA.committed(group));
        } finally {
            logs.close();
            processor.close();
        }
    }

    /**
     * The executor given to the builder, shut down by its owner while the processor runs, once the first records are
     * polled: the processor polled on, handing every record to an executor that refused it (20 polled, 0 completed),
     * polled every 5 ms for good once the partition paused, logged one warning, and a close() then sat out the whole
     * closeTimeout waiting for records that could never run. The processor now stops by itself, logs a warning,
     * commits nothing past what ran, and a close() returns at once.
     */
    @Test
    void anExecutorShutDownWhileTheProcessorRunsStopsItWithoutCommittingWhatNeverRan() throws Exception {
        String topic = topicWithRecords("given-shut-down", 20);
        String group = EmbeddedKafka.name("g");
        AtomicInteger handled = new AtomicInteger();
        LogCapture logs = LogCapture.start();
        GatlingExecutor executor = GatlingExecutor.builder().name("owned-by-the-caller").build();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).executor(executor).closeTimeout(Duration.ofSeconds(60))
                .consumerMaker((config, keys, values) -> new KafkaConsumer<>(config, keys, values) {
                    @Override
                    public ConsumerRecords<String, String> poll(Duration timeout) {
                        ConsumerRecords<String, String> records = super.poll(timeout);
                        if (!records.isEmpty()) {
                            executor.shutdown(); // by its owner, before the processor hands out these records
                        }
                        return records;
                    }
                })
                .handler(r -> handled.incrementAndGet()).build();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            poll.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(poll.isAlive(), "the polling thread stopped by itself");
            long polled = processor.statistics().polled(); // the first poll that returned records: 20, or a part
            assertTrue(polled > 0 && polled <= 20, "polled " + polled);
            assertEquals(0, processor.statistics().completed());
            assertEquals(0, handled.get());
            Map<TopicPartition, Long> committed = KAFKA.committed(group);
            assertTrue(committed.isEmpty() || committed.equals(Map.of(new TopicPartition(topic, 0), 0L)),
                    "nothing committed past records that never ran: " + committed);
            assertTrue(logs.messagesAtLeast(java.util.logging.Level.WARNING).stream()
                            .anyMatch(m -> m.contains("owned-by-the-caller")),
                    "a warning names the executor");
            long start = System.nanoTime();
            processor.close();
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(tookMillis < 5_000, "close took " + tookMillis + " ms");
            assertThrows(IllegalStateException.class, processor::start);
        } finally {
            logs.close();
            processor.close();
            executor.shutdownNow();
        }
    }

    /**
     * A record that fails once the executor given to the builder is shut down: its retry cannot be scheduled, and the
     * record was given up with its key (or, under {@link Ordering#PARTITION}, its partition) let go, so the records
     * after it ran on in the task still running (19 of 19 ran while the first never completed). They now wait behind
     * it, as behind any failed record: none of them runs, and nothing is committed past it.
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"KEY", "PARTITION"})
    void aRecordFailingAfterTheGivenExecutorShutDownStillHoldsBackTheRecordsAfterIt(Ordering ordering)
            throws Exception {
        String topic = EmbeddedKafka.name("given-shut-down-failed");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            records.add(new ProducerRecord<>(topic, 0, "one-key", "v" + i));
        }
        KAFKA.produce(records);
        String group = EmbeddedKafka.name("g");
        Queue<Long> ranAfterTheFailure = new ConcurrentLinkedQueue<>();
        GatlingExecutor executor = GatlingExecutor.builder().name("shut-as-a-record-fails").build();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).ordering(ordering).executor(executor).closeTimeout(Duration.ofSeconds(10))
                .handler(r -> {
                    if (r.offset() == 0) {
                        executor.shutdown(); // by its owner, as this record fails
                        throw new IllegalStateException("fails on purpose");
                    }
                    ranAfterTheFailure.add(r.offset());
                }).build();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            poll.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(poll.isAlive(), "the polling thread stopped by itself");
            assertTrue(ranAfterTheFailure.isEmpty(), "ran after the failed record: " + ranAfterTheFailure);
            Map<TopicPartition, Long> committed = KAFKA.committed(group);
            assertTrue(committed.isEmpty() || committed.equals(Map.of(new TopicPartition(topic, 0), 0L)),
                    "nothing committed past the failed record: " + committed);
        } finally {
            processor.close();
            executor.shutdownNow();
        }
    }

    /**
     * The executor given to the builder, shut down by its owner from the first record's handler while a router's run
     * routes a poll of more than {@link Router#MAX_PER_RUN} records: that run, taken by the executor before its
     * shutdown, stopped at its budget and handed the rest to the executor, which refused it, so only 1024 of 1500
     * ran and were committed while the worker that ran them was free to go on. A run on an executor that is shut down
     * now routes on past its budget: every record polled runs, and the commit follows.
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"KEY", "PARTITION", "UNORDERED"})
    void aRunTakenBeforeTheGivenExecutorShutDownRunsThePollPastItsBudget(Ordering ordering) throws Exception {
        int n = Router.MAX_PER_RUN + 476;
        String topic = topicWithRecords("given-shut-down-budget", n);
        String group = EmbeddedKafka.name("g");
        Queue<Long> ran = new ConcurrentLinkedQueue<>();
        GatlingExecutor executor = GatlingExecutor.builder().name("shut-in-a-long-run").build();
        Properties props = KAFKA.consumerProperties(group);
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, n);
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic).ordering(ordering).executor(executor).closeTimeout(Duration.ofSeconds(30))
                .handler(r -> {
                    if (r.offset() == 0) {
                        executor.shutdown(); // by its owner, as the run it took routes the first poll
                    }
                    ran.add(r.offset());
                }).build();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            poll.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(poll.isAlive(), "the polling thread stopped by itself");
            long polled = processor.statistics().polled();
            assertTrue(polled > Router.MAX_PER_RUN, "one poll took more than a run's budget: " + polled);
            assertEquals(polled, ran.size(), "every record polled ran");
            assertEquals(Map.of(new TopicPartition(topic, 0), polled), KAFKA.committed(group));
        } finally {
            processor.close();
            executor.shutdownNow();
        }
    }

    /**
     * As above, with a record that runs long on the spot (under {@code KEY}) once the executor is shut down: the
     * polling thread took the routing from that call and handed it to the executor, which refused it, so the records
     * after it never ran (2 of 20 ran and were committed), though the call's own worker was there to run them. The
     * routing now stays with the call, as handing it to a shut-down executor can only drop it: all 20 run.
     */
    @Test
    void aLongCallOnTheSpotAfterTheGivenExecutorShutDownKeepsTheRouting() throws Exception {
        String topic = topicWithRecords("given-shut-down-long-call", 20);
        String group = EmbeddedKafka.name("g");
        Queue<Long> ran = new ConcurrentLinkedQueue<>();
        GatlingExecutor executor = GatlingExecutor.builder().name("shut-before-a-long-call").build();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).ordering(Ordering.KEY).executor(executor).closeTimeout(Duration.ofSeconds(30))
                .handler(r -> {
                    if (r.offset() == 0) {
                        executor.shutdown(); // by its owner
                    } else if (r.offset() == 1) {
                        // A long call: many times the detach threshold, so the polling thread's watch meets it.
                        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(Router.DETACH_NANOS) * 40);
                    }
                    ran.add(r.offset());
                }).build();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            poll.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(poll.isAlive(), "the polling thread stopped by itself");
            assertEquals(20, ran.size(), "ran: " + ran);
            assertEquals(Map.of(new TopicPartition(topic, 0), 20L), KAFKA.committed(group));
        } finally {
            processor.close();
            executor.shutdownNow();
        }
    }

    /**
     * As above, for a key's lane: under {@code KEY}, one key whose handler is slow (so the router hands its records to
     * the key's lane), and the executor given to the builder shut down by its owner from a record that lane runs. The
     * lane's run, taken before the shutdown, stopped after its batch of {@link Slot#BATCH} records and handed the rest
     * of the key to the executor, which refused it: 19 of 40 ran and were committed. While the executor is shut down,
     * the run now goes on past its batch: all 40 run.
     */
    @Test
    void aKeysLaneRunTakenBeforeTheGivenExecutorShutDownRunsTheKeyPastItsBatch() throws Exception {
        String topic = EmbeddedKafka.name("given-shut-down-lane");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            records.add(new ProducerRecord<>(topic, 0, "one-key", "v" + i));
        }
        KAFKA.produce(records);
        String group = EmbeddedKafka.name("g");
        Queue<Long> ran = new ConcurrentLinkedQueue<>();
        GatlingExecutor executor = GatlingExecutor.builder().name("shut-in-a-lane").build();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).ordering(Ordering.KEY).executor(executor).closeTimeout(Duration.ofSeconds(30))
                .handler(r -> {
                    // Slow enough, from the first record on, that the router hands the key's records to its lane.
                    Thread.sleep(1);
                    if (r.offset() == Router.SLOW_STREAK + 2) {
                        executor.shutdown(); // by its owner, from the lane's run
                    }
                    ran.add(r.offset());
                }).build();
        try {
            processor.start();
            Thread poll = pollThread(processor);
            poll.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(poll.isAlive(), "the polling thread stopped by itself");
            assertEquals(40, processor.statistics().polled(), "one poll");
            assertEquals(40, ran.size(), "ran: " + ran);
            assertEquals(Map.of(new TopicPartition(topic, 0), 40L), KAFKA.committed(group));
        } finally {
            processor.close();
            executor.shutdownNow();
        }
    }

    /**
     * The processor's polling thread, from the processor itself: looked up by name after start(), it was not found when
     * the processor had already ended it (a handler that closes at once, an executor shut down at the first poll) before
     * the test thread got there, as a loaded machine lets it.
     */
    private static Thread pollThread(KafkaProcessor<?, ?> processor) throws ReflectiveOperationException {
        return (Thread) processorField(processor, "pollThread");
    }

    private static ContextExecutor ownExecutor(KafkaProcessor<?, ?> processor) throws ReflectiveOperationException {
        return (ContextExecutor) processorField(processor, "executor");
    }

    private static Object processorField(KafkaProcessor<?, ?> processor, String name)
            throws ReflectiveOperationException {
        Field field = KafkaProcessor.class.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(processor);
    }
}
