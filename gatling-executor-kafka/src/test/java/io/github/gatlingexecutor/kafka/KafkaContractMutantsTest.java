package io.github.gatlingexecutor.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.RecordDeserializationException.DeserializationExceptionOrigin;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.Deserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static io.github.gatlingexecutor.kafka.EmbeddedKafka.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Points of the Kafka contract (the committed prefix, what counts as completed, the orderings) that a pass of
 * hand-made mutants over the module found no test to fail on. No broker: one partition's {@link Router} over the model
 * executor of {@link LincheckRoutingTest}, whose queue this thread runs, so each step happens when the test says; or a
 * whole processor over a consumer the test scripts.
 */
class KafkaContractMutantsTest {

    /**
     * A handler that throws because its partition was let go while it ran (the interrupt of a revocation or close past
     * its closeTimeout) has its record dropped, not completed: the next owner processes it, and this processor counts
     * it nowhere ({@link KafkaStatistics#completed()}), under every ordering. Counted as done where the router ran it
     * (on the spot, or in partition order), the record read as completed and no longer pending, beside a commit that
     * stops short of it.
     */
    @ParameterizedTest
    @EnumSource(Ordering.class)
    void aRecordWhoseHandlerThrowsAfterItsPartitionWasLetGoIsNotCountedCompleted(Ordering ordering) {
        Harness h = new Harness(ordering);
        h.handler = r -> {
            if (r.offset() == 1) {
                h.ps.revoked = true; // the revocation's timeout passed while the handler ran
                throw new IllegalStateException("interrupted as its partition was let go");
            }
        };
        h.poll(new ConsumerRecord<>("t", 0, 0, "a", "a@0"), new ConsumerRecord<>("t", 0, 1, "b", "b@1"));
        assertEquals(List.of("a@0", "b@1"), h.ran);
        assertEquals(1, h.runner.completed.sum(), "a@0 only: b@1 is its next owner's");
        assertEquals(1, h.ps.pending(), "b@1 was not completed here");
        assertTrue(h.ps.advance() <= 1, "the commit passed the dropped record");
    }

    /**
     * The revocation's commit is sent whenever the completed prefix moved past what was last committed, not only for a
     * partition that never had a commit: here a periodic commit of 0 lands while k@0 runs, the revocation lets k@0 and
     * the two records queued behind it finish, and must commit 3. A commit that skipped every partition already
     * committed for left the group at 0, and the next owner ran all three again. (The scripted consumer revokes the
     * partition inside a poll, and commits at once.)
     */
    @Test
    void theRevocationCommitsPastWhatAPeriodicCommitAlreadyCommitted() throws Exception {
        TopicPartition tp = new TopicPartition("revoked-after-commit", 0);
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<GroupTest.ScriptedConsumer> consumer = new AtomicReference<>();
        KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(GroupTest.scriptedConfig())
                .topics(tp.topic())
                .commitInterval(Duration.ofMillis(10))
                .closeTimeout(Duration.ofSeconds(30))
                .consumerMaker((c, keys, values) -> {
                    GroupTest.ScriptedConsumer made = new GroupTest.ScriptedConsumer(c, keys, values, tp, 3);
                    made.limit = 3;
                    consumer.set(made);
                    return made;
                })
                .handler(r -> {
                    if (r.offset() == 0) {
                        running.countDown();
                        assertTrue(release.await(60, TimeUnit.SECONDS), "k@0 released");
                    }
                })
                .build();
        try {
            processor.start();
            assertTrue(running.await(30, TimeUnit.SECONDS), "k@0 runs");
            await(Duration.ofSeconds(30), "a periodic commit of 0 acknowledged",
                    () -> Map.of(tp, 0L).equals(processor.statistics().committedOffsets()));
            consumer.get().revokeAtNextPoll = true;
            await(Duration.ofSeconds(30), "the revocation under way", () -> consumer.get().revoking);
            release.countDown();
            await(Duration.ofSeconds(30), "the revocation's end", () -> consumer.get().revoked);
            assertEquals(3L, consumer.get().committed.get(tp), "the revocation commits past the three records");
        } finally {
            release.countDown();
            processor.close();
        }
    }

    /**
     * A record that cannot be deserialized, whose failure handler throws, is read again after each backoff: it counts
     * once in {@code failed()} however often it is read, and each read again counts in {@code retries()}, as a
     * handler's failing record does. Counted at every read, failed() read 3 here for one record.
     */
    @Test
    void anUnreadableRecordReadAgainAfterItsFailureHandlerThrewCountsOnceAsFailed() throws Exception {
        TopicPartition tp = new TopicPartition("unreadable", 0);
        AtomicInteger failureHandlerCalls = new AtomicInteger();
        AtomicReference<UnreadableConsumer> consumer = new AtomicReference<>();
        try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(GroupTest.scriptedConfig())
                .topics(tp.topic())
                .retryBackoff(Duration.ofMillis(1))
                .consumerMaker((c, keys, values) -> {
                    UnreadableConsumer made = new UnreadableConsumer(c, keys, values, tp);
                    consumer.set(made);
                    return made;
                })
                .handler(r -> { })
                .onFailure((r, e) -> {
                    if (failureHandlerCalls.incrementAndGet() < 3) {
                        throw new IllegalStateException("the dead-letter topic is down");
                    }
                })
                .build()) {
            processor.start();
            await(Duration.ofSeconds(30), "the three records done", () -> processor.statistics().completed() == 3);
            KafkaStatistics s = processor.statistics();
            assertEquals(3, failureHandlerCalls.get());
            assertEquals(3, consumer.get().unreadableReads.get(), "read once, then again after each throw");
            assertEquals(1, s.failed(), s.toString());
            assertEquals(2, s.retries(), s.toString());
            assertEquals(3, s.polled(), s.toString());
        }
    }

    /**
     * A consumer of one partition of three records, offsets 0 to 2, assigned at its first poll, whose record at offset
     * 1 cannot be deserialized: a poll at that position throws, as Kafka's consumer does, until a seek moves past it.
     */
    private static final class UnreadableConsumer extends GroupTest.ScriptedConsumer {
        final AtomicInteger unreadableReads = new AtomicInteger();

        UnreadableConsumer(Map<String, Object> config, Deserializer<String> keys, Deserializer<String> values,
                           TopicPartition tp) {
            super(config, keys, values, tp, 1);
            limit = 3;
        }

        @Override
        public ConsumerRecords<String, String> poll(Duration timeout) {
            if (next == 1 && !paused) {
                unreadableReads.incrementAndGet();
                throw new RecordDeserializationException(DeserializationExceptionOrigin.VALUE, tp, 1, 0,
                        TimestampType.CREATE_TIME, null, ByteBuffer.wrap(new byte[] {1}), new RecordHeaders(),
                        "unreadable", new SerializationException("unreadable"));
            }
            return super.poll(timeout);
        }

        @Override
        public void seek(TopicPartition partition, long offset) {
            next = offset;
        }
    }

    /** A handler that may throw, as the tests give it. */
    interface Handler {
        void handle(ConsumerRecord<String, String> r) throws Exception;
    }

    /** A router of partition t-0 on the model executor, its retry timers held for the test, records run in order. */
    private static final class Harness {
        final List<String> ran = new ArrayList<>();
        final LincheckRoutingTest.ModelExecutor executor = new LincheckRoutingTest.ModelExecutor();
        final ConcurrentHashMap<Object, Slot<String, String>> keys = new ConcurrentHashMap<>();
        final PartitionState ps = new PartitionState(new TopicPartition("t", 0), Thread.currentThread(), 1024);
        final RecordRunner<String, String> runner;
        final Router<String, String> router;
        Handler handler = r -> { };

        Harness(Ordering ordering) {
            executor.timersHeld = true;
            runner = new RecordRunner<>(r -> {
                ran.add(r.value());
                handler.handle(r);
            }, null, 3, Duration.ofMillis(100));
            runner.executor(executor);
            router = new Router<>(ps, runner, executor, ordering, keys);
            ps.router = router;
        }

        /** The polling thread's part of a poll that returned these records, then the work they made runnable. */
        @SafeVarargs
        final void poll(ConsumerRecord<String, String>... records) {
            RoutingTest.poll(ps, router, records);
            for (int n = 0; n < 1_000; n++) {
                Runnable task = executor.queue.poll();
                if (task == null) {
                    return;
                }
                task.run();
            }
            throw new AssertionError("tasks still coming after 1000: one resubmits itself for ever");
        }
    }
}
