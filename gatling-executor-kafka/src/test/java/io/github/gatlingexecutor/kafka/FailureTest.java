package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import io.github.gatlingexecutor.GatlingExecutor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;

import static io.github.gatlingexecutor.kafka.EmbeddedKafka.await;
import static io.github.gatlingexecutor.kafka.OrderingTest.awaitCommitted;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Failing handlers, records that cannot be deserialized, and close. */
class FailureTest {
    @RegisterExtension
    static final EmbeddedKafka KAFKA = new EmbeddedKafka();

    private final EmbeddedKafka.HandlerWaits handlerWaits = new EmbeddedKafka.HandlerWaits();

    @org.junit.jupiter.api.AfterEach
    void noHandlerWaitTimedOut() {
        handlerWaits.assertNoneTimedOut();
    }

    @Test
    void poisonRecordIsRetriedThenHandedOverWhileOtherKeysFlowAndTheOffsetWaitsForTheCallback() throws Exception {
        String topic = EmbeddedKafka.name("poison");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            records.add(new ProducerRecord<>(topic, 0, "k" + (i % 20), "v" + i));
        }
        int poisonIndex = records.size();
        records.add(new ProducerRecord<>(topic, 0, "bad", "poison"));
        for (int i = 0; i < 5; i++) {
            records.add(new ProducerRecord<>(topic, 0, "bad", "after" + i)); // held back behind the poison
        }
        for (int i = 200; i < 400; i++) {
            records.add(new ProducerRecord<>(topic, i % 2, "k" + (i % 20), "v" + i)); // others keep flowing
        }
        List<RecordMetadata> sent = KAFKA.produce(records);
        TopicPartition p0 = new TopicPartition(topic, 0);
        long poisonOffset = sent.get(poisonIndex).offset();
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 2);

        AtomicInteger poisonTries = new AtomicInteger();
        // One key, so the processor orders the handler's calls; the test's thread reads it while they may run.
        List<String> badKeyRuns = new CopyOnWriteArrayList<>();
        Set<String> otherValues = ConcurrentHashMap.newKeySet();
        CountDownLatch inFailureHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<ConsumerRecord<String, String>> failedRecord = new AtomicReference<>();
        AtomicReference<Throwable> failedError = new AtomicReference<>();
        RuntimeException poison = new IllegalStateException("poison");
        String group = EmbeddedKafka.name("g");
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .retries(2)
                .retryBackoff(Duration.ofMillis(20))
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    if (r.value().equals("poison")) {
                        poisonTries.incrementAndGet();
                        throw poison;
                    } else if (r.key().equals("bad")) {
                        badKeyRuns.add(r.value());
                    } else {
                        otherValues.add(r.value());
                    }
                })
                .onFailure((r, e) -> {
                    failedRecord.set(r);
                    failedError.set(e);
                    inFailureHandler.countDown();
                    handlerWaits.await(release, "release");
                })
                .build()) {
            processor.start();
            assertTrue(inFailureHandler.await(30, TimeUnit.SECONDS), "the failure handler was called");
            assertEquals(3, poisonTries.get(), "one try and two retries");
            assertEquals(poisonOffset, failedRecord.get().offset());
            assertSame(poison, failedError.get());

            // While the failure handler runs: every other key completes, partition 1 commits to its end, the
            // poison's key is held back and partition 0 commits up to the poison record, not past it.
            await(Duration.ofSeconds(30), "other keys done", () -> otherValues.size() == 400);
            TopicPartition p1 = new TopicPartition(topic, 1);
            await(Duration.ofSeconds(30), "partition 1 committed", () ->
                    end.get(p1).equals(processor.statistics().committedOffsets().get(p1)));
            await(Duration.ofSeconds(30), "partition 0 committed up to the poison", () ->
                    Long.valueOf(poisonOffset).equals(processor.statistics().committedOffsets().get(p0)));
            assertTrue(badKeyRuns.isEmpty(), "the poison's key waits: " + badKeyRuns);
            assertEquals(Long.valueOf(poisonOffset), processor.statistics().committedOffsets().get(p0),
                    "still not past the poison after other commits");
            assertEquals(1, processor.statistics().failed());
            assertEquals(2, processor.statistics().retries());

            release.countDown();
            awaitCommitted(processor, end);
            assertEquals(List.of("after0", "after1", "after2", "after3", "after4"), badKeyRuns);
            assertEquals(records.size(), processor.statistics().completed());
        }
        assertEquals(end, KAFKA.committed(group), "committed on the broker too");
    }

    @Test
    void failureHandlerThatThrowsKeepsTheRecordFailedAndItIsTriedAgainUntilAcknowledged() throws Exception {
        String topic = EmbeddedKafka.name("dlq-down");
        KAFKA.createTopic(topic, 1);
        List<RecordMetadata> sent = KAFKA.produce(List.of(
                new ProducerRecord<>(topic, "a", "fail"),
                new ProducerRecord<>(topic, "a", "next"),
                new ProducerRecord<>(topic, "b", "other")));
        TopicPartition tp = new TopicPartition(topic, 0);
        AtomicInteger handlerCalls = new AtomicInteger();
        AtomicInteger failureCalls = new AtomicInteger();
        Queue<String> ran = new ConcurrentLinkedQueue<>();
        String group = EmbeddedKafka.name("g");
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .retries(1)
                .retryBackoff(Duration.ofMillis(10))
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    if (r.value().equals("fail")) {
                        handlerCalls.incrementAndGet();
                        throw new Exception("always");
                    }
                    ran.add(r.value());
                })
                .onFailure((r, e) -> {
                    if (failureCalls.incrementAndGet() < 3) {
                        throw new Exception("dead-letter topic unavailable");
                    }
                })
                .build()) {
            processor.start();
            awaitCommitted(processor, Map.of(tp, 3L));
            assertEquals(3, failureCalls.get(), "the failure handler was called until it returned");
            // Each round after the retries ran out tries the handler once more before the failure handler.
            assertEquals(2 + 2, handlerCalls.get());
            assertEquals(List.of("other", "next"), new ArrayList<>(ran), "key a waited for its failed record");
            assertEquals(1, processor.statistics().failed(), "one record failed, however often it was tried");
            assertEquals(3, processor.statistics().completed());
        }
        assertEquals(Map.of(tp, 3L), KAFKA.committed(group));
        assertEquals(0, sent.get(0).offset());
    }

    /**
     * A failure handler that rethrows the error it was given, to keep the record failed, ended the record's retries
     * for good: the processor attached that error to the handler's as a suppressed one, which for the same object
     * throws ({@code IllegalArgumentException: Self-suppression not permitted}) past the retry's scheduling, in every
     * ordering (in a key's lane, in the router's own run with no retries, in a partition's run, unordered); the commit
     * stayed at the record and the failure handler was called once.
     */
    @ParameterizedTest
    @ValueSource(strings = {"KEY:0", "KEY:1", "KEY_LATEST:1", "PARTITION:1", "UNORDERED:1"})
    void aFailureHandlerThatRethrowsTheErrorItWasGivenKeepsTheRecordFailedAndTriedAgain(String setup)
            throws Exception {
        Ordering ordering = Ordering.valueOf(setup.substring(0, setup.indexOf(':')));
        int retries = Integer.parseInt(setup.substring(setup.indexOf(':') + 1));
        String topic = EmbeddedKafka.name("dlq-rethrow");
        KAFKA.createTopic(topic, 1);
        // Three keys: under KEY_LATEST a later record of the failing one's key, polled with it, would supersede it.
        KAFKA.produce(List.of(
                new ProducerRecord<>(topic, "a", "fail"),
                new ProducerRecord<>(topic, "c", "next"),
                new ProducerRecord<>(topic, "b", "other")));
        TopicPartition tp = new TopicPartition(topic, 0);
        Exception always = new Exception("always");
        AtomicInteger handlerCalls = new AtomicInteger();
        AtomicInteger failureCalls = new AtomicInteger();
        String group = EmbeddedKafka.name("g");
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .ordering(ordering)
                .retries(retries)
                .retryBackoff(Duration.ofMillis(10))
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    if (r.value().equals("fail")) {
                        handlerCalls.incrementAndGet();
                        throw always;
                    }
                })
                .onFailure((r, e) -> {
                    if (failureCalls.incrementAndGet() < 3) {
                        throw (Exception) e; // keep it failed: the very error it was given
                    }
                })
                .build()) {
            processor.start();
            awaitCommitted(processor, Map.of(tp, 3L));
            assertEquals(3, failureCalls.get(), "the failure handler was called until it returned");
            assertEquals(retries + 1 + 2, handlerCalls.get(), "one try after each of the first two refusals");
            assertEquals(1, processor.statistics().failed());
            assertEquals(0, always.getSuppressed().length, "the user's exception was left as it was");
        }
        assertEquals(Map.of(tp, 3L), KAFKA.committed(group));
    }

    /**
     * A handler still running when {@code close()} gave up waiting for it is interrupted; one that obeys throws, and
     * on its last try its record was counted failed and handed to the failure handler (a dead-letter topic) with the
     * {@code InterruptedException}, although the processor had let it go and the commit stayed short of it: its next
     * owner processed it again. It is dropped now, as a queued record of that partition is.
     */
    @Test
    void aHandlerInterruptedByCloseDoesNotSendItsRecordToTheFailureHandler() throws Exception {
        String topic = EmbeddedKafka.name("close-interrupt");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
        }
        KAFKA.produce(records);
        TopicPartition tp = new TopicPartition(topic, 0);
        CountDownLatch blocked = new CountDownLatch(1);
        Queue<String> failureHandled = new ConcurrentLinkedQueue<>();
        String group = EmbeddedKafka.name("g");
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic).retries(0).closeTimeout(Duration.ofMillis(300))
                .handler(r -> {
                    if (r.offset() == 3) {
                        blocked.countDown();
                        new CountDownLatch(1).await(); // until close() interrupts it
                    }
                })
                .onFailure((r, e) -> failureHandled.add(r.offset() + ": " + e))
                .build();
        processor.start();
        assertTrue(blocked.await(30, TimeUnit.SECONDS), "the record at offset 3 is running");
        processor.close();
        assertEquals(List.of(), new ArrayList<>(failureHandled), "the record let go is not the failure handler's");
        assertEquals(0, processor.statistics().failed());
        assertEquals(Map.of(tp, 3L), KAFKA.committed(group), "its next owner processes it");
    }

    @Test
    void noFailureHandlerHoldsTheKeyAndTheCommitUntilClose() throws Exception {
        String topic = EmbeddedKafka.name("no-dlq");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, "a", "ok"), new ProducerRecord<>(topic, "a", "fail"),
                new ProducerRecord<>(topic, "a", "held"), new ProducerRecord<>(topic, "b", "free")));
        TopicPartition tp = new TopicPartition(topic, 0);
        Queue<String> ran = new ConcurrentLinkedQueue<>();
        String group = EmbeddedKafka.name("g");
        AtomicInteger tries = new AtomicInteger();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .retries(0)
                .retryBackoff(Duration.ofMillis(5))
                .commitInterval(Duration.ofMillis(20))
                .closeTimeout(Duration.ofMillis(200))
                .handler(r -> {
                    if (r.value().equals("fail")) {
                        tries.incrementAndGet();
                        throw new Exception("always");
                    }
                    ran.add(r.value());
                })
                .build();
        processor.start();
        await(Duration.ofSeconds(30), "tried again with backoff", () -> tries.get() >= 4);
        await(Duration.ofSeconds(30), "committed up to the failed record",
                () -> Long.valueOf(1).equals(processor.statistics().committedOffsets().get(tp)));
        assertEquals(Set.of("ok", "free"), Set.copyOf(ran), "the failed record's key waits, others do not");
        processor.close();
        assertEquals(Map.of(tp, 1L), KAFKA.committed(group), "never past the failed record");
        assertEquals(1, processor.statistics().failed());
    }

    @Test
    void aRecordThatStaysFailedHoldsTheCommitButNotItsPartitionsOtherKeys() throws Exception {
        String topic = EmbeddedKafka.name("held");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        records.add(new ProducerRecord<>(topic, "bad", "fail"));
        for (int i = 1; i < 200; i++) {
            records.add(new ProducerRecord<>(topic, "k" + (i % 10), "v" + i));
        }
        KAFKA.produce(records);
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
        LongAdder handled = new LongAdder();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .maxPendingPerPartition(5) // paused at 5 pending, resumed below 3: only the failed one stays
                .retries(0)
                .retryBackoff(Duration.ofMillis(5))
                .commitInterval(Duration.ofMillis(20))
                .closeTimeout(Duration.ofMillis(200))
                .handler(r -> {
                    if (r.value().equals("fail")) {
                        throw new Exception("always");
                    }
                    handled.increment();
                })
                .build()) {
            processor.start();
            try {
                // completed() too: records run on the spot are counted when their router publishes, just after
                await(Duration.ofSeconds(30), "every record of the other keys",
                        () -> handled.sum() == 199 && processor.statistics().completed() == 199);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; " + handled.sum() + " handled; "
                        + processor.statistics(), e);
            }
            KafkaStatistics s = processor.statistics();
            assertEquals(199, s.completed(), s.toString());
            assertEquals(200, s.polled(), s.toString());
            assertEquals(1, s.failed(), s.toString());
            assertEquals(Long.valueOf(0), s.committedOffsets().getOrDefault(tp, 0L), "never past the failed record");
            await(Duration.ofSeconds(30), "the partition resumed with only the failed record pending",
                    () -> processor.statistics().pausedPartitions().isEmpty());
        }
    }

    /**
     * {@code retries()} counts the handler's calls that were tries again, when they are made: before, it counted a
     * retry when it was scheduled, so a retry dropped with its partition (revoked, or the processor closed during
     * the backoff) counted as a call that never happened.
     */
    @Test
    void retriesCountsTheCallsMadeNotTheRetriesScheduled() throws Exception {
        String topic = EmbeddedKafka.name("retries-count");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, 0, "k", "v")));
        AtomicInteger calls = new AtomicInteger();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .retries(3)
                .retryBackoff(Duration.ofSeconds(2))
                .closeTimeout(Duration.ofMillis(100))
                .handler(r -> {
                    calls.incrementAndGet();
                    throw new IllegalStateException("fails every time");
                })
                .build()) {
            processor.start();
            await(Duration.ofSeconds(30), "the first call", () -> calls.get() == 1);
            // The retry is scheduled a moment after the call returns; this wait only gives the old count the time to
            // show. The retry itself is 2 s away, so no wait here can make the count right.
            TimeUnit.MILLISECONDS.sleep(200);
            assertEquals(0, processor.statistics().retries(), "a retry counted before its call");
            await(Duration.ofSeconds(30), "the second call", () -> calls.get() == 2);
            assertEquals(1, processor.statistics().retries());
        }
    }

    /** Fails on the value "bad", as a schema mismatch would. */
    public static final class PickyDeserializer implements Deserializer<String> {
        @Override
        public String deserialize(String topic, byte[] data) {
            String s = data == null ? null : new String(data, StandardCharsets.UTF_8);
            if ("bad".equals(s)) {
                throw new SerializationException("not a valid value: bad");
            }
            return s;
        }
    }

    /**
     * Fails on the value "bad" with an exception whose causes go round in a circle (two exceptions, each the cause of
     * the other, as a library that wraps what it catches can end up with), until {@link #CIRCLE_CLOSED} is cleared.
     */
    public static final class CircularCauseDeserializer implements Deserializer<String> {
        static volatile boolean CIRCLE_CLOSED = true;

        @Override
        public String deserialize(String topic, byte[] data) {
            String s = data == null ? null : new String(data, StandardCharsets.UTF_8);
            if ("bad".equals(s)) {
                Circular outer = new Circular("not a valid value: bad");
                Circular inner = new Circular("while parsing");
                outer.next = inner;
                inner.next = outer;
                throw outer;
            }
            return s;
        }

        private static final class Circular extends SerializationException {
            private static final long serialVersionUID = 1L;
            transient Throwable next;

            Circular(String message) {
                super(message);
            }

            @Override
            public synchronized Throwable getCause() {
                return CIRCLE_CLOSED ? next : null;
            }
        }
    }

    /**
     * A deserializer's exception whose causes form a circle (which the JDK allows, and prints with "CIRCULAR
     * REFERENCE"): the processor's look for an out-of-heap error down the cause chain went round it for good on the
     * polling thread, so the failure handler was never called, nothing more was polled or committed, and close() waited
     * for that thread with it. The record now reaches the failure handler like any unreadable record.
     */
    @Test
    void anUnreadableRecordWhoseExceptionsCausesGoRoundInACircleReachesTheFailureHandler() throws Exception {
        String topic = EmbeddedKafka.name("deser-circle");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, "k", "v0"), new ProducerRecord<>(topic, "k", "bad"),
                new ProducerRecord<>(topic, "k", "v2")));
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, CircularCauseDeserializer.class.getName());
        Queue<ConsumerRecord<String, String>> failed = new ConcurrentLinkedQueue<>();
        Queue<String> handled = new ConcurrentLinkedQueue<>();
        CircularCauseDeserializer.CIRCLE_CLOSED = true;
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> handled.add(r.value()))
                .onFailure((r, e) -> failed.add(r))
                .build()) {
            processor.start();
            try {
                awaitCommitted(processor, Map.of(tp, 3L));
            } finally {
                CircularCauseDeserializer.CIRCLE_CLOSED = false; // lets a polling thread stuck in the circle out of it
            }
            assertEquals(List.of("v0", "v2"), new ArrayList<>(handled));
            assertEquals(1, failed.size());
            assertEquals(1, failed.peek().offset());
            assertEquals(1, processor.statistics().failed());
            assertEquals(3, processor.statistics().completed());
        }
    }

    /**
     * Runs out of heap on the value "big", as many times as {@link #OUT_OF_HEAP} says (as a deserializer that sizes a
     * buffer from a length field can: once when the heap is short, every time when the length is corrupt).
     */
    public static final class HeapStarvedDeserializer implements Deserializer<String> {
        static final AtomicInteger OUT_OF_HEAP = new AtomicInteger();
        static final AtomicInteger THROWN = new AtomicInteger();

        @Override
        public String deserialize(String topic, byte[] data) {
            String s = data == null ? null : new String(data, StandardCharsets.UTF_8);
            if ("big".equals(s) && OUT_OF_HEAP.getAndDecrement() > 0) {
                THROWN.incrementAndGet();
                throw new OutOfMemoryError("Java heap space");
            }
            return s;
        }
    }

    /** Ten records, the fifth "big", to a new topic of one partition, read by a deserializer out of heap n times. */
    private static Properties heapStarved(String topic, int n) throws Exception {
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(new ProducerRecord<>(topic, "k" + i, i == 4 ? "big" : "v" + i));
        }
        KAFKA.produce(records);
        HeapStarvedDeserializer.OUT_OF_HEAP.set(n);
        HeapStarvedDeserializer.THROWN.set(0);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, HeapStarvedDeserializer.class.getName());
        // One record a poll, so that the record that fails is the first of its poll's (with the records before it in
        // the same poll, the consumer happened to read them all again from the position it had not yet moved).
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1);
        return props;
    }

    /**
     * A deserializer that ran out of heap on one record ({@code once}): the {@code OutOfMemoryError} left the
     * consumer's poll bare, the consumer passed over the record, and the commit went past it with no handler having
     * seen it (0-3 and 5-9 handled). Its partition now waits and reads it again; the failure handler, which is for
     * unreadable records, never gets it. One that runs it out of heap at every read (not {@code once}) is read again as
     * many times as a failing handler is retried, then it is the record's failure: the failure handler gets it, and its
     * partition goes on once the handler returns (read again for good, it held its partition with nothing in
     * {@code failed()}).
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aRecordWhoseDeserializerRanOutOfHeapIsReadAgainThenHandedToTheFailureHandler(boolean once) throws Exception {
        String topic = EmbeddedKafka.name("heap");
        Properties props = heapStarved(topic, once ? 1 : Integer.MAX_VALUE);
        TopicPartition tp = new TopicPartition(topic, 0);
        Set<Long> handledOffsets = ConcurrentHashMap.newKeySet();
        Queue<ConsumerRecord<String, String>> failed = new ConcurrentLinkedQueue<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .commitInterval(Duration.ofMillis(20))
                .retries(2)
                .retryBackoff(Duration.ofMillis(10))
                .handler(r -> handledOffsets.add(r.offset()))
                .onFailure((r, e) -> failed.add(r))
                .build()) {
            processor.start();
            awaitCommitted(processor, Map.of(tp, 10L));
            await(Duration.ofSeconds(10), "every record counted", () -> processor.statistics().completed() == 10);
            KafkaStatistics s = processor.statistics();
            Set<Long> all = Set.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L);
            if (once) {
                assertEquals(1, HeapStarvedDeserializer.THROWN.get(), "the deserializer ran out of heap once");
                assertEquals(all, handledOffsets);
                assertTrue(failed.isEmpty(), "not an unreadable record: " + failed);
                assertEquals(0, s.failed(), s.toString());
            } else {
                assertEquals(3, HeapStarvedDeserializer.THROWN.get(), "the first read and two more");
                assertEquals(all.stream().filter(o -> o != 4).collect(Collectors.toSet()), handledOffsets);
                assertEquals(List.of(4L), failed.stream().map(ConsumerRecord::offset).collect(Collectors.toList()));
                assertEquals(1, s.failed(), s.toString());
            }
            assertEquals(10, s.polled(), s.toString());
        }
    }

    @Test
    void recordThatCannotBeDeserializedReachesTheFailureHandlerAndIsSkippedOnlyAfterIt() throws Exception {
        String topic = EmbeddedKafka.name("deser");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            records.add(new ProducerRecord<>(topic, "k" + (i % 5), i == 20 ? "bad" : "v" + i));
        }
        KAFKA.produce(records);
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, PickyDeserializer.class.getName());
        Queue<ConsumerRecord<String, String>> failed = new ConcurrentLinkedQueue<>();
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        CountDownLatch release = new CountDownLatch(1);
        LongAdder handled = new LongAdder();
        Set<Long> handledOffsets = ConcurrentHashMap.newKeySet();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    handled.increment();
                    handledOffsets.add(r.offset());
                })
                .onFailure((r, e) -> {
                    failed.add(r);
                    errors.add(e);
                    handlerWaits.await(release, "release");
                })
                .build()) {
            processor.start();
            await(Duration.ofSeconds(30), "the failure handler called", () -> !failed.isEmpty());
            await(Duration.ofSeconds(30), "records before the bad one done", () -> handled.sum() == 20);
            await(Duration.ofSeconds(30), "committed up to the bad record",
                    () -> Long.valueOf(20).equals(processor.statistics().committedOffsets().get(tp)));
            assertTrue(processor.statistics().pausedPartitions().contains(tp), "its partition waits");
            assertEquals(20, handled.sum(), "nothing past the bad record before the failure handler returns");

            release.countDown();
            awaitCommitted(processor, Map.of(tp, 50L));
            assertEquals(49, handled.sum());
            assertEquals(1, failed.size());
            ConsumerRecord<String, String> r = failed.peek();
            assertEquals(20, r.offset());
            assertEquals(0, r.partition());
            assertEquals(topic, r.topic());
            assertNull(r.key());
            assertNull(r.value());
            RecordDeserializationException e = assertInstanceOf(RecordDeserializationException.class, errors.peek());
            assertEquals(20, e.offset());
            assertEquals("bad", StandardCharsets.UTF_8.decode(e.valueBuffer()).toString());
            assertEquals(1, processor.statistics().failed());
            assertEquals(50, processor.statistics().completed());
            assertEquals(50, processor.statistics().polled(), "the record the failure handler got counts as polled");
            assertEquals(Set.of(), processor.statistics().pausedPartitions());
            assertTrue(handledOffsets.stream().noneMatch(o -> o == 20));
        }
    }

    /**
     * The failure handler of a record that cannot be deserialized is handed to the executor apart from the router's
     * records. Close (and a revocation, through the same drain) looked only at those, so it went on at once,
     * interrupted the handler with the executor's shutdown, and committed short of the record: the next owner would
     * hand it over again while the first call might still run.
     */
    @Test
    void closeGivesARunningFailureHandlerOfAnUnreadableRecordItsTimeoutAndCommitsPastIt() throws Exception {
        String topic = EmbeddedKafka.name("deser-close");
        KAFKA.createTopic(topic, 1);
        KAFKA.produce(List.of(new ProducerRecord<>(topic, "k", "v0"), new ProducerRecord<>(topic, "k", "bad"),
                new ProducerRecord<>(topic, "k", "v2")));
        TopicPartition tp = new TopicPartition(topic, 0);
        String group = EmbeddedKafka.name("g");
        Properties props = KAFKA.consumerProperties(group);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, PickyDeserializer.class.getName());
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger interrupted = new AtomicInteger();
        AtomicInteger returned = new AtomicInteger();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .commitInterval(Duration.ofSeconds(60)) // only close commits
                .handler(r -> { })
                .onFailure((r, e) -> {
                    inHandler.countDown();
                    try {
                        handlerWaits.await(release, "release");
                    } catch (InterruptedException x) {
                        interrupted.incrementAndGet();
                        throw x;
                    }
                    returned.incrementAndGet();
                })
                .build(); // the default closeTimeout, 30 s
        processor.start();
        assertTrue(inHandler.await(30, TimeUnit.SECONDS));
        Thread closer = new Thread(processor::close, "closer");
        closer.start();
        closer.join(500);
        assertTrue(closer.isAlive(), "close did not wait for the running failure handler");
        release.countDown();
        closer.join(TimeUnit.SECONDS.toMillis(30));
        assertFalse(closer.isAlive(), "close did not return once the failure handler had");
        assertEquals(0, interrupted.get(), "the failure handler was interrupted within its timeout");
        assertEquals(1, returned.get());
        assertEquals(Map.of(tp, 2L), KAFKA.committed(group), "the commit passes the record the handler acknowledged");
    }

    @Test
    void closeWaitsForDispatchedRecordsCommitsTheCompletedPrefixAndLeavesNoThread() throws Exception {
        String topic = EmbeddedKafka.name("close");
        KAFKA.createTopic(topic, 2);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            records.add(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i));
        }
        KAFKA.produce(records);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        String group = EmbeddedKafka.name("g");
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        AtomicInteger interrupted = new AtomicInteger();
        KAFKA.warmUp(topic);
        Set<Thread> before = liveThreads();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .commitInterval(Duration.ofSeconds(60)) // only close commits
                .closeTimeout(Duration.ofMillis(300))
                .handler(r -> {
                    if (r.partition() == 0 && r.offset() == 300) {
                        stuck.countDown();
                        try {
                            never.await(); // overruns the close timeout; close interrupts it
                        } catch (InterruptedException e) {
                            interrupted.incrementAndGet();
                            throw e;
                        }
                    }
                })
                .build();
        processor.start();
        assertTrue(stuck.await(30, TimeUnit.SECONDS));
        await(Duration.ofSeconds(30), "the rest completed",
                () -> processor.statistics().completed() == 999);
        assertEquals(Map.of(), KAFKA.committed(group), "no periodic commit yet");
        long start = System.nanoTime();
        processor.close();
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(tookMs >= 250 && tookMs < 10_000, "close gave the stuck record its timeout: " + tookMs + " ms");
        assertEquals(Map.of(p0, 300L, p1, 500L), KAFKA.committed(group), "the completed prefix of each partition");
        assertEquals(Map.of(p0, 300L, p1, 500L), processor.statistics().committedOffsets());
        assertEquals(1, interrupted.get(), "the overrunning handler was interrupted");
        Set<Thread> left = liveThreads();
        left.removeAll(before);
        assertEquals(Set.of(), left.stream().map(Thread::getName).collect(Collectors.toSet()),
                "threads started by the processor are gone");
    }

    @Test
    void closeOfAnIdleProcessorCommitsEverythingAndLeavesNoThread() throws Exception {
        String topic = EmbeddedKafka.name("close-idle");
        KAFKA.createTopic(topic, 3);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            records.add(new ProducerRecord<>(topic, "k" + i, "v"));
        }
        KAFKA.produce(records);
        Map<TopicPartition, Long> end = KAFKA.endOffsets(topic, 3);
        String group = EmbeddedKafka.name("g");
        KAFKA.warmUp(topic);
        Set<Thread> before = liveThreads();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .commitInterval(Duration.ofSeconds(60))
                .handler(r -> { })
                .build();
        processor.start();
        await(Duration.ofSeconds(30), "all completed", () -> processor.statistics().completed() == 300);
        processor.close();
        assertEquals(end, KAFKA.committed(group));
        Set<Thread> left = liveThreads();
        left.removeAll(before);
        assertEquals(Set.of(), left.stream().map(Thread::getName).collect(Collectors.toSet()));
    }

    /**
     * Several records run in one executor task (a router's batch under PARTITION order), and the executor clears a
     * worker's interrupt status only between its tasks: an interrupt one handler left set reached the records after
     * it in that task (records 6 to 39 of 40 here).
     */
    @Test
    void anInterruptLeftByOneHandlerDoesNotReachTheNextRecords() throws Exception {
        String topic = topicOfKeyedRecords("interrupt", 40);
        Queue<Long> startedInterrupted = new ConcurrentLinkedQueue<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .ordering(Ordering.PARTITION)
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    if (Thread.currentThread().isInterrupted()) {
                        startedInterrupted.add(r.offset());
                    }
                    if (r.offset() == 5) {
                        Thread.currentThread().interrupt(); // and returns: the record completes
                    }
                })
                .build()) {
            processor.start();
            awaitCommitted(processor, Map.of(new TopicPartition(topic, 0), 40L));
            assertEquals(List.of(), new ArrayList<>(startedInterrupted), "records that started interrupted");
        }
    }

    /**
     * The failure handler of a record that cannot be deserialized ran at once, as an unordered task, beside the
     * handlers of the records before it in its partition; such a record has no key, and records without a key are
     * ordered by partition, as everything is under PARTITION order.
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"PARTITION", "KEY"})
    void theFailureHandlerOfAnUnreadableRecordRunsAfterTheRecordsBeforeIt(Ordering ordering) throws Exception {
        String topic = EmbeddedKafka.name("deser-order");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(new ProducerRecord<>(topic, null, i == 3 ? "bad" : "v" + i));
        }
        KAFKA.produce(records);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, PickyDeserializer.class.getName());
        CountDownLatch firstStarted = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch failureCalled = new CountDownLatch(1);
        AtomicInteger earlierDone = new AtomicInteger();
        AtomicInteger earlierDoneAtFailure = new AtomicInteger(-1);
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .ordering(ordering)
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    if (r.offset() == 0) {
                        firstStarted.countDown();
                        handlerWaits.await(release, "release");
                    }
                    if (r.offset() < 3) {
                        earlierDone.incrementAndGet();
                    }
                })
                .onFailure((r, e) -> {
                    earlierDoneAtFailure.set(earlierDone.get());
                    failureCalled.countDown();
                })
                .build()) {
            processor.start();
            assertTrue(firstStarted.await(30, TimeUnit.SECONDS));
            // An observation window for the broken order: the failure handler came within tens of milliseconds.
            boolean early = failureCalled.await(500, TimeUnit.MILLISECONDS);
            release.countDown();
            assertTrue(failureCalled.await(30, TimeUnit.SECONDS), "the failure handler was called");
            assertEquals(3, earlierDoneAtFailure.get(), "records before it done when the failure handler ran"
                    + (early ? " (it ran while the first still ran)" : ""));
            awaitCommitted(processor, Map.of(new TopicPartition(topic, 0), 10L));
        }
    }

    /**
     * Under KEY order the failure handler of an unreadable record waits only for the earlier records without a key:
     * a keyed record that stays failed before it must not hold it (and, through it, the whole partition, which stops
     * at the unreadable record until its failure handler returns).
     */
    @Test
    void aKeyedRecordThatStaysFailedDoesNotHoldAnUnreadableRecordsFailureHandler() throws Exception {
        String topic = EmbeddedKafka.name("deser-keyed");
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        records.add(new ProducerRecord<>(topic, "stuck", "v0"));
        records.add(new ProducerRecord<>(topic, null, "bad"));
        for (int i = 2; i < 10; i++) {
            records.add(new ProducerRecord<>(topic, "k" + i, "v" + i));
        }
        KAFKA.produce(records);
        Properties props = KAFKA.consumerProperties(EmbeddedKafka.name("g"));
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, PickyDeserializer.class.getName());
        Set<Long> handled = ConcurrentHashMap.newKeySet();
        CountDownLatch unreadableHandled = new CountDownLatch(1);
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(props)
                .topics(topic)
                .retries(0)
                .retryBackoff(Duration.ofMillis(10))
                .closeTimeout(Duration.ofMillis(200))
                .handler(r -> {
                    if ("stuck".equals(r.key())) {
                        throw new IllegalStateException("stays failed");
                    }
                    handled.add(r.offset());
                })
                .onFailure((r, e) -> {
                    if (!(e instanceof RecordDeserializationException)) {
                        throw new IllegalStateException("not acknowledged: " + r.offset());
                    }
                    unreadableHandled.countDown();
                })
                .build()) {
            processor.start();
            assertTrue(unreadableHandled.await(30, TimeUnit.SECONDS), "the unreadable record's failure handler ran");
            await(Duration.ofSeconds(30), "the records after it", () -> handled.size() == 8);
        }
    }

    /**
     * A close timeout of {@code ChronoUnit.FOREVER} passed build() and made close() overflow: it threw
     * ArithmeticException, committed nothing and left the consumer's heartbeat thread behind.
     */
    @Test
    void aCloseTimeoutOfForeverClosesNormally() throws Exception {
        String topic = topicOfKeyedRecords("forever", 50);
        String group = EmbeddedKafka.name("g");
        KAFKA.warmUp(topic);
        Set<Thread> before = liveThreads();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(group))
                .topics(topic)
                .commitInterval(ChronoUnit.FOREVER.getDuration()) // only close commits
                .retryBackoff(ChronoUnit.FOREVER.getDuration())
                .closeTimeout(ChronoUnit.FOREVER.getDuration())
                .handler(r -> { })
                .build();
        processor.start();
        await(Duration.ofSeconds(30), "all completed", () -> processor.statistics().completed() == 50);
        processor.close();
        assertEquals(Map.of(new TopicPartition(topic, 0), 50L), KAFKA.committed(group));
        Set<Thread> left = liveThreads();
        left.removeAll(before);
        assertEquals(Set.of(), left.stream().map(Thread::getName).collect(Collectors.toSet()));
    }

    /**
     * An executor given to the processor may be bounded: the records it refused for capacity were dropped (taken for
     * a sign that it was shutting down), and their partition's commit stayed behind them for good (about 20 of 300
     * records ran). A refused hand-off is now made again shortly after.
     */
    @ParameterizedTest
    @EnumSource(value = Ordering.class, names = {"UNORDERED", "KEY"})
    void recordsABoundedExecutorRefusesRunLater(Ordering ordering) throws Exception {
        String topic = topicOfKeyedRecords("bounded", 300);
        LongAdder handled = new LongAdder();
        try (GatlingExecutor executor = GatlingExecutor.builder().name("bounded").coreThreads(2).maxThreads(4)
                .maxQueued(16).build();
             KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                        KAFKA.consumerProperties(EmbeddedKafka.name("g")))
                .topics(topic)
                .ordering(ordering)
                .executor(executor)
                .commitInterval(Duration.ofMillis(20))
                .handler(r -> {
                    Thread.sleep(1); // a backlog for the bound
                    handled.increment();
                })
                .build()) {
            processor.start();
            awaitCommitted(processor, Map.of(new TopicPartition(topic, 0), 300L));
            assertEquals(300, handled.sum());
            assertTrue(executor.statistics().rejected() > 0, "the bound refused some: " + executor.statistics());
        }
    }

    /** A new topic of one partition holding {@code n} records, key {@code k<i>} and value {@code v<i>}. */
    private static String topicOfKeyedRecords(String prefix, int n) throws Exception {
        String topic = EmbeddedKafka.name(prefix);
        KAFKA.createTopic(topic, 1);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            records.add(new ProducerRecord<>(topic, "k" + i, "v" + i));
        }
        KAFKA.produce(records);
        return topic;
    }

    private static Set<Thread> liveThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
                .collect(Collectors.toCollection(java.util.HashSet::new));
    }
}
