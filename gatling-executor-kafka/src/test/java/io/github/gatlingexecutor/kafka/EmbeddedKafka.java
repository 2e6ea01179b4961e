package io.github.gatlingexecutor.kafka;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.MetadataVersion;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * A single-node KRaft broker (controller and broker in one) inside the test JVM, on loopback ports. Register it as a
 * static {@code @RegisterExtension} field: it starts before the class's first test and stops after its last.
 */
final class EmbeddedKafka implements BeforeAllCallback, AfterAllCallback {

    private static final AtomicInteger NAMES = new AtomicInteger();

    private Path dir;
    private KafkaRaftServer server;
    private String bootstrap;
    private Admin admin;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        stop();
    }

    void start() throws Exception {
        dir = Files.createTempDirectory("kraft-");
        int brokerPort = freePort();
        int controllerPort = freePort();
        String logDir = dir.resolve("log").toString();
        Map<String, Object> p = new HashMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("log.dirs", logDir);
        p.put("num.partitions", "1");
        p.put("auto.create.topics.enable", "false");
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "4");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("group.min.session.timeout.ms", "500");
        p.put("group.consumer.min.session.timeout.ms", "500");
        p.put("group.consumer.min.heartbeat.interval.ms", "100");
        p.put("group.consumer.heartbeat.interval.ms", "200");
        p.put("log.flush.interval.messages", String.valueOf(Long.MAX_VALUE));
        p.put("num.network.threads", "2");
        p.put("num.io.threads", "2");
        p.put("background.threads", "2");
        KafkaConfig config = new KafkaConfig(p, false);

        new Formatter()
                .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                .setNodeId(1)
                .setClusterId(Uuid.randomUuid().toString())
                .setDirectories(List.of(logDir))
                .setMetadataLogDirectory(logDir)
                .setControllerListenerName("CONTROLLER")
                .setReleaseVersion(MetadataVersion.latestProduction())
                .run();

        server = new KafkaRaftServer(config, Time.SYSTEM);
        server.startup();
        bootstrap = "127.0.0.1:" + brokerPort;
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin = Admin.create(a);
        await(Duration.ofSeconds(60), "broker ready", () -> {
            try {
                return !admin.describeCluster().nodes().get().isEmpty();
            } catch (Exception e) {
                return false;
            }
        });
    }

    void stop() {
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
        }
        if (dir != null) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    String bootstrap() {
        return bootstrap;
    }

    Admin admin() {
        return admin;
    }

    /** A fresh name, so that every test has its own topic and group. */
    static String name(String prefix) {
        return prefix + "-" + NAMES.incrementAndGet();
    }

    /** Creates a topic and waits until every partition has a leader and answers offset requests. */
    void createTopic(String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        await(Duration.ofSeconds(30), "leaders of " + topic, () -> {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                if (d.partitions().size() != partitions
                        || d.partitions().stream().map(TopicPartitionInfo::leader).anyMatch(l -> l == null)) {
                    return false;
                }
                endOffsets(topic, partitions);
                return true;
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** Consumer properties for a processor in {@code group}: short timeouts, so that tests rebalance quickly. */
    Properties consumerProperties(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "2000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "100");
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        return p;
    }

    KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 * 1024));
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return new KafkaProducer<>(p);
    }

    /**
     * Sends every record, waits for all acknowledgements, and fails if any send failed. Returns where each record
     * went, in the order given.
     */
    List<RecordMetadata> produce(List<ProducerRecord<String, String>> records) throws Exception {
        AtomicReference<Exception> failure = new AtomicReference<>();
        RecordMetadata[] sent = new RecordMetadata[records.size()];
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < records.size(); i++) {
                int index = i;
                producer.send(records.get(i), (meta, e) -> {
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    } else {
                        sent[index] = meta;
                    }
                });
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw new AssertionError("a send failed", failure.get());
        }
        return List.of(sent);
    }

    /**
     * Has the broker start the threads it starts lazily (for fetches, group coordination, scheduling) by running a
     * throwaway consumer group over {@code topic}, so that a thread comparison afterwards sees only the client's.
     */
    void warmUp(String topic) {
        Properties p = consumerProperties(name("warm-up"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (c.poll(Duration.ofMillis(50)).isEmpty()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("warm-up consumer got nothing from " + topic);
                }
            }
            c.commitSync();
        }
    }

    Map<TopicPartition, Long> endOffsets(String topic, int partitions) throws ExecutionException,
            InterruptedException {
        Map<TopicPartition, OffsetSpec> request = IntStream.range(0, partitions)
                .mapToObj(i -> new TopicPartition(topic, i))
                .collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest()));
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> r = admin.listOffsets(request).all().get();
        return r.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    /** The group's committed offsets, as the broker has them. */
    Map<TopicPartition, Long> committed(String group) throws ExecutionException, InterruptedException {
        Map<TopicPartition, OffsetAndMetadata> m =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        Map<TopicPartition, Long> out = new HashMap<>();
        m.forEach((tp, o) -> {
            if (o != null) {
                out.put(tp, o.offset());
            }
        });
        return out;
    }

    /** Waits until the broker has {@code expected} as the group's committed offsets. */
    void awaitGroupCommitted(String group, Map<TopicPartition, Long> expected) {
        await(Duration.ofSeconds(60), "group " + group + " committed " + expected, () -> {
            try {
                return committed(group).equals(expected);
            } catch (Exception e) {
                return false;
            }
        });
    }

    /**
     * Waits that a handler makes for a test's latch. A handler that throws is retried or handed to the failure
     * handler, so an assertion there fails nothing at once; a wait that timed out is recorded instead, and the test
     * class checks after each test that none did.
     */
    static final class HandlerWaits {
        private final java.util.Queue<String> timedOut = new java.util.concurrent.ConcurrentLinkedQueue<>();

        /** Waits up to 30 s for {@code latch}; a time-out is recorded (and the handler goes on). */
        void await(java.util.concurrent.CountDownLatch latch, String what) throws InterruptedException {
            if (!latch.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
                timedOut.add(what);
            }
        }

        void assertNoneTimedOut() {
            org.junit.jupiter.api.Assertions.assertTrue(timedOut.isEmpty(),
                    () -> "a handler's wait timed out: " + timedOut);
        }
    }

    /** The polling thread of the (one) processor of {@code group} running now. */
    static Thread pollingThread(String group) {
        String name = pollingThreadName(group);
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no thread " + name));
    }

    /** Whether a polling thread of any processor of {@code group} has {@code method} on its stack now. */
    static boolean pollingThreadsIn(String group, String method) {
        String name = pollingThreadName(group);
        return Thread.getAllStackTraces().entrySet().stream().filter(e -> e.getKey().getName().equals(name))
                .anyMatch(e -> hasFrame(e.getValue(), method));
    }

    /** Whether {@code thread} has {@code method} on its stack now. */
    static boolean onStack(Thread thread, String method) {
        return hasFrame(thread.getStackTrace(), method);
    }

    private static boolean hasFrame(StackTraceElement[] stack, String method) {
        return java.util.Arrays.stream(stack).anyMatch(f -> f.getMethodName().equals(method));
    }

    private static String pollingThreadName(String group) {
        return "kafka-" + group + "-poll";
    }

    /** Polls {@code condition} until it holds; fails with {@code what} at the deadline. */
    static void await(Duration timeout, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what);
            }
        }
    }

    static Set<TopicPartition> partitions(String topic, int n) {
        return IntStream.range(0, n).mapToObj(i -> new TopicPartition(topic, i)).collect(Collectors.toSet());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
