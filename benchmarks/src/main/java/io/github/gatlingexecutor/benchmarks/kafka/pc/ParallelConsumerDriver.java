package io.github.gatlingexecutor.benchmarks.kafka.pc;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs Confluent's parallel-consumer 0.5.3.3 (KEY order) on one workload. Loaded by the benchmark's isolated class
 * loader, next to the kafka-clients 3.9 it was built for, so it takes and returns JDK types only.
 */
public final class ParallelConsumerDriver {

    private ParallelConsumerDriver() {
    }

    public static Map<String, Object> run(Map<String, Object> spec) throws Exception {
        // Kafka resolves class names (deserializers, assignors) through the context class loader, and the threads
        // parallel-consumer starts inherit it: it must be this loader, not the application's (kafka-clients 4.4).
        Thread me = Thread.currentThread();
        ClassLoader previous = me.getContextClassLoader();
        me.setContextClassLoader(ParallelConsumerDriver.class.getClassLoader());
        try {
            return runHere(spec);
        } finally {
            me.setContextClassLoader(previous);
        }
    }

    private static Map<String, Object> runHere(Map<String, Object> spec) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, spec.get("bootstrap"));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, spec.get("group"));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"); // parallel-consumer requires it
        Probe probe = new Probe((Long) spec.get("sleepMillis"), (Integer) spec.get("lagSamples"));
        ParallelConsumerOptions<String, String> options = ParallelConsumerOptions.<String, String>builder()
                .ordering(ParallelConsumerOptions.ProcessingOrder.KEY)
                .maxConcurrency((Integer) spec.get("maxConcurrency"))
                .commitMode(ParallelConsumerOptions.CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
                .consumer(new KafkaConsumer<>(props))
                .build();
        ParallelStreamProcessor<String, String> pc = ParallelStreamProcessor.createEosStreamProcessor(options);
        try {
            pc.subscribe(List.of((String) spec.get("topic")));
            pc.poll(context -> {
                for (ConsumerRecord<String, String> r : context.getConsumerRecordsFlattened()) {
                    try {
                        probe.handle(r.timestamp());
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            });
            ((Runnable) spec.get("started")).run();
            return probe.await(probe::handled, (AtomicLong) spec.get("expected"),
                    (AtomicBoolean) spec.get("producerDone"), (Long) spec.get("limitMillis"));
        } finally {
            pc.closeDontDrainFirst(Duration.ofSeconds(10));
        }
    }
}
