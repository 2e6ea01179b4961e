package io.github.gatlingexecutor.benchmarks.kafka;

import io.github.gatlingexecutor.GatlingExecutor;
import io.github.gatlingexecutor.benchmarks.kafka.pc.Probe;
import io.github.gatlingexecutor.benchmarks.report.Table;
import io.github.gatlingexecutor.kafka.KafkaProcessor;
import io.github.gatlingexecutor.kafka.Ordering;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The {@code kafka} scenario: {@link KafkaProcessor} against Confluent's parallel-consumer (KEY order) and a plain
 * {@link KafkaConsumer} poll loop (handler inline on the polling thread), on one in-process KRaft broker.
 *
 * <ul>
 *   <li>no-op handler and 1 ms handler: one topic of 8 partitions, 10,000 keys, records produced up front (1M; 200k
 *       in quick mode); each peer reads it from the start in its own group. Records/s run from a peer's first
 *       record to its last (so group joining is not counted); the 1 ms runs stop after a time limit.</li>
 *   <li>latest: 100 hot keys produced live at 20,000 records/s, handler blocking 10 ms: more than a key can take.
 *       {@link Ordering#KEY_LATEST} runs only the newest waiting record of a key; the others must run them all.
 *       Reported: handler calls and the p99 of lag (handler start minus record timestamp).</li>
 * </ul>
 * GatlingExecutor's thread cap and parallel-consumer's {@code maxConcurrency} are both {@link #THREAD_CAP}.
 */
public final class KafkaBench {

    /** Our executor's maxThreads and parallel-consumer's maxConcurrency. */
    static final int THREAD_CAP = 64;
    static final String OURS = "GatlingExecutor KafkaProcessor";
    static final String PC = "parallel-consumer 0.5.3.3";
    static final String PLAIN = "plain KafkaConsumer loop";

    private static final int PARTITIONS = 8;
    private static final int KEYS = 10_000;
    private static final int HOT_KEYS = 100;
    private static final int HOT_RATE = 20_000;
    private static final long WARM_UP_MILLIS = 3_000;
    private static final int NOOP_ROUNDS = 5;

    private final boolean quick;
    private final Broker broker;
    private final AtomicInteger groups = new AtomicInteger();
    private IsolatedParallelConsumer pc;
    private String pcProblem;

    private KafkaBench(boolean quick, Broker broker) {
        this.quick = quick;
        this.broker = broker;
        try {
            pc = IsolatedParallelConsumer.load();
        } catch (Exception e) {
            pcProblem = e.toString();
        }
    }

    /** Rough seconds, for the runner's estimate. */
    public static double estimatedSeconds(boolean quick) {
        return quick ? 60 : 150;
    }

    /** Runs the three workloads; adds a table each to {@code tables} and the goals' verdicts to {@code verdicts}. */
    public static void run(boolean quick, List<Table> tables, List<String> verdicts) throws Exception {
        try (Broker broker = new Broker()) {
            new KafkaBench(quick, broker).runAll(tables, verdicts);
        }
    }

    private void runAll(List<Table> tables, List<String> verdicts) throws Exception {
        int records = quick ? 200_000 : 1_000_000;
        String topic = "bench-keys";
        broker.createTopic(topic, PARTITIONS);
        long t0 = System.nanoTime();
        try (KafkaProducer<String, String> producer = broker.producer()) {
            AtomicReference<Exception> failed = new AtomicReference<>();
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, "key-" + (i % KEYS), "value-" + i), (m, e) -> {
                    if (e != null) {
                        failed.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
            if (failed.get() != null) {
                throw failed.get();
            }
        }
        long produced = broker.endOffsetSum(topic, PARTITIONS);
        System.out.printf(Locale.ROOT, "  produced %,d records (%d partitions, %,d keys) in %.1f s%n", produced,
                PARTITIONS, KEYS, (System.nanoTime() - t0) / 1e9);
        if (pc != null) {
            System.out.println("  parallel-consumer runs in its own class loader on kafka-clients "
                    + pc.kafkaClientsVersion());
        }

        Map<String, Map<String, Object>> noop = new LinkedHashMap<>();
        Map<String, Map<String, Object>> blocking = new LinkedHashMap<>();
        long noopLimit = quick ? 30_000 : 60_000;
        long blockingLimit = quick ? 4_000 : 8_000;
        // One unmeasured pass per peer first (at most a few seconds each): the first peer to read the topic would
        // otherwise also pay for compiling the client's fetch and deserialization code, which the next ones reuse.
        for (String peer : List.of(PLAIN, OURS, PC)) {
            runPeer(peer + " (warm-up)", peer, topic, Ordering.KEY, 0, produced, WARM_UP_MILLIS, 0, null);
        }
        // The two fast peers still speed up from run to run after that (the JIT keeps compiling): they run
        // NOOP_ROUNDS times, interleaved, and the run with the median rate is reported. parallel-consumer, at tens of
        // seconds per run, runs once.
        Map<String, List<Map<String, Object>>> rounds = new LinkedHashMap<>();
        for (int round = 0; round < NOOP_ROUNDS; round++) {
            for (String peer : List.of(PLAIN, OURS)) {
                rounds.computeIfAbsent(peer, p -> new ArrayList<>()).add(runPeer(peer + " (round " + (round + 1) + ")",
                        peer, topic, Ordering.KEY, 0, produced, noopLimit, 0, null));
            }
        }
        for (String peer : List.of(PLAIN, OURS)) {
            noop.put(peer, median(rounds.get(peer)));
        }
        noop.put(PC, runPeer(PC, topic, Ordering.KEY, 0, produced, noopLimit, 0, null));
        for (String peer : List.of(PLAIN, OURS, PC)) {
            blocking.put(peer, runPeer(peer, topic, Ordering.KEY, 1, produced, blockingLimit, 0, null));
        }
        Map<String, Map<String, Object>> latest = new LinkedHashMap<>();
        int hotSeconds = quick ? 2 : 4;
        for (String peer : List.of(PLAIN, OURS, PC)) {
            String hot = "bench-hot-" + groups.incrementAndGet();
            broker.createTopic(hot, PARTITIONS);
            latest.put(peer, runPeer(peer, hot, peer.equals(OURS) ? Ordering.KEY_LATEST : Ordering.KEY, 10, 0,
                    hotSeconds * 1000L + (quick ? 8_000 : 15_000), HOT_RATE * hotSeconds * 2, hot));
        }

        tables.add(table("Kafka: no-op handler", String.format(Locale.ROOT, "%,d records pre-produced, %d partitions,"
                + " %,d keys; KEY order (the plain loop: partition order, one thread); after one warm-up pass each, the"
                + " median of %d interleaved runs of the plain loop and of KafkaProcessor, one run of"
                + " parallel-consumer", produced, PARTITIONS, KEYS, NOOP_ROUNDS),
                noop, false));
        tables.add(table("Kafka: handler blocking 1 ms", String.format(Locale.ROOT, "same topic; each peer runs %d s;"
                + " thread cap %d (GatlingExecutor maxThreads = parallel-consumer maxConcurrency)",
                blockingLimit / 1000, THREAD_CAP), blocking, false));
        tables.add(table("Kafka: 100 hot keys, handler blocking 10 ms", String.format(Locale.ROOT, "%,d records/s"
                + " produced live for %d s over %d keys; GatlingExecutor with KEY_LATEST, the others run every record;"
                + " records/s and records done count a superseded record as done, so GatlingExecutor's rate is the"
                + " records it disposed of (ran or superseded), not its handler calls;"
                + " lag = handler start minus record timestamp (of records that ran)", HOT_RATE, hotSeconds, HOT_KEYS),
                latest, true));

        double ours = rate(noop.get(OURS));
        double pcRate = rate(noop.get(PC));
        double plain = rate(noop.get(PLAIN));
        verdicts.add(goal(ours >= 3 * pcRate, String.format(Locale.ROOT,
                "kafka no-op: >= 3x parallel-consumer (%.2fx)", ours / pcRate), pcRate));
        verdicts.add(goal(ours * 1.5 >= plain, String.format(Locale.ROOT,
                "kafka no-op: within 1.5x of the plain consumer (plain is %.2fx of ours)", plain / ours), plain));
        double ours1 = rate(blocking.get(OURS));
        double pc1 = rate(blocking.get(PC));
        verdicts.add(goal(ours1 >= 1.5 * pc1, String.format(Locale.ROOT,
                "kafka 1 ms handler: >= 1.5x parallel-consumer at maxConcurrency %d (%.2fx)", THREAD_CAP,
                ours1 / pc1), pc1));
    }

    private static String goal(boolean met, String text, double peerRate) {
        if (!(peerRate > 0)) {
            return "NOT MEASURED  " + text.replaceAll(" \\(.*\\)$", "") + " (a peer did not run)";
        }
        return (met ? "MET     " : "MISSED  ") + text;
    }

    /** The run with the median rate (the lower middle one of an even count); a failed run counts as slowest. */
    private static Map<String, Object> median(List<Map<String, Object>> runs) {
        List<Map<String, Object>> sorted = new ArrayList<>(runs);
        sorted.sort(java.util.Comparator.comparingDouble(r -> {
            double v = rate(r);
            return Double.isNaN(v) ? Double.NEGATIVE_INFINITY : v;
        }));
        return sorted.get((sorted.size() - 1) / 2);
    }

    private static double rate(Map<String, Object> r) {
        Object v = r == null ? null : r.get("recordsPerSecond");
        return v == null ? Double.NaN : (Double) v;
    }

    private Map<String, Object> runPeer(String peer, String topic, Ordering ordering, long sleepMillis,
                                        long expected, long limitMillis, int lagSamples, String liveTopic) {
        return runPeer(peer, peer, topic, ordering, sleepMillis, expected, limitMillis, lagSamples, liveTopic);
    }

    private Map<String, Object> runPeer(String label, String peer, String topic, Ordering ordering, long sleepMillis,
                                        long expected, long limitMillis, int lagSamples, String liveTopic) {
        System.out.printf(Locale.ROOT, "  %s: %s on %s%n", label, sleepMillis == 0 ? "no-op" : sleepMillis + " ms",
                topic);
        AtomicLong expect = new AtomicLong(expected);
        AtomicBoolean producerDone = new AtomicBoolean(liveTopic == null);
        CountDownLatch started = new CountDownLatch(1);
        Thread producer = null;
        if (liveTopic != null) {
            producer = new Thread(() -> produceLive(liveTopic, started, expect, producerDone), "live-producer");
            producer.start();
        }
        String group = "bench-" + groups.incrementAndGet();
        Map<String, Object> result;
        System.gc();
        try {
            switch (peer) {
                case OURS:
                    result = runOurs(topic, group, ordering, sleepMillis, lagSamples, expect, producerDone,
                            limitMillis, started);
                    break;
                case PC:
                    if (pc == null) {
                        throw new IllegalStateException("parallel-consumer not loaded: " + pcProblem);
                    }
                    Map<String, Object> spec = new HashMap<>();
                    spec.put("bootstrap", broker.bootstrap);
                    spec.put("group", group);
                    spec.put("topic", topic);
                    spec.put("sleepMillis", sleepMillis);
                    spec.put("lagSamples", lagSamples);
                    spec.put("maxConcurrency", THREAD_CAP);
                    spec.put("expected", expect);
                    spec.put("producerDone", producerDone);
                    spec.put("limitMillis", limitMillis);
                    spec.put("started", (Runnable) started::countDown);
                    result = pc.run(spec);
                    break;
                default:
                    result = runPlain(topic, group, sleepMillis, lagSamples, expect, producerDone, limitMillis,
                            started);
            }
        } catch (Exception e) {
            result = new HashMap<>();
            Throwable root = e;
            StringBuilder why = new StringBuilder(e.toString());
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
                why.append(" <- ").append(root);
            }
            System.out.println("    failed: " + why);
            result.put("failure", root.toString());
            started.countDown();
        }
        if (producer != null) {
            producerDone.set(true);
            try {
                producer.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        System.out.println("    " + result);
        return result;
    }

    private void produceLive(String topic, CountDownLatch started, AtomicLong sent, AtomicBoolean done) {
        try (KafkaProducer<String, String> producer = broker.producer()) {
            started.await();
            Thread.sleep(1_000); // the consumer joins its group meanwhile, so lag does not count the join
            long total = (long) HOT_RATE * (quick ? 2 : 4) * 1;
            long start = System.nanoTime();
            for (long i = 0; i < total && !done.get(); i++) {
                long due = start + i * 1_000_000_000L / HOT_RATE;
                long wait = due - System.nanoTime();
                if (wait > 200_000) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                producer.send(new ProducerRecord<>(topic, "hot-" + (i % HOT_KEYS), Long.toString(i)));
                sent.set(i + 1);
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            done.set(true);
        }
    }

    private Properties consumerProperties(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return p;
    }

    private Map<String, Object> runOurs(String topic, String group, Ordering ordering, long sleepMillis,
                                        int lagSamples, AtomicLong expected, AtomicBoolean producerDone,
                                        long limitMillis, CountDownLatch started) throws Exception {
        Probe probe = new Probe(sleepMillis, lagSamples);
        try (GatlingExecutor executor = GatlingExecutor.builder().name("kafka-bench").maxThreads(THREAD_CAP).build();
             KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(
                             consumerProperties(group))
                     .topics(topic)
                     .ordering(ordering)
                     .executor(executor)
                     .closeTimeout(Duration.ofSeconds(5))
                     .handler(r -> probe.handle(r.timestamp()))
                     .build()) {
            processor.start();
            started.countDown();
            Map<String, Object> r = probe.await(() -> processor.statistics().completed(), expected, producerDone,
                    limitMillis);
            r.put("superseded", processor.statistics().superseded());
            r.put("peakThreads", executor.statistics().peakThreads());
            return r;
        }
    }

    private Map<String, Object> runPlain(String topic, String group, long sleepMillis, int lagSamples,
                                         AtomicLong expected, AtomicBoolean producerDone, long limitMillis,
                                         CountDownLatch started) throws Exception {
        Probe probe = new Probe(sleepMillis, lagSamples);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Thread loop = new Thread(() -> {
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProperties(group))) {
                consumer.subscribe(List.of(topic));
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(50))) {
                        probe.handle(r.timestamp());
                        if (stop.get()) {
                            break;
                        }
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                failure.set(e);
            }
        }, "plain-consumer");
        loop.start();
        started.countDown();
        try {
            return probe.await(probe::handled, expected, producerDone, limitMillis);
        } finally {
            stop.set(true);
            loop.join();
            if (failure.get() != null) {
                throw failure.get();
            }
        }
    }

    private static Table table(String title, String description, Map<String, Map<String, Object>> results,
                               boolean latest) {
        List<String> headers = new ArrayList<>(List.of("peer", "records/s", "vs GatlingExecutor", "handler threads",
                "handler calls"));
        if (latest) {
            headers.add("lag p99 ms");
            headers.add("records done");
        }
        Table t = new Table(title, description, headers);
        t.lowerIsBetter = latest;
        double ours = rate(results.get(OURS));
        for (Map.Entry<String, Map<String, Object>> e : results.entrySet()) {
            Map<String, Object> r = e.getValue();
            List<String> row = new ArrayList<>();
            row.add(e.getKey());
            if (r.containsKey("failure")) {
                row.add("FAILED: " + r.get("failure"));
                t.row(row);
                continue;
            }
            double rate = rate(r);
            row.add(Table.num(rate));
            row.add(Table.num(rate / ours) + "x");
            row.add(r.get("threads") + (r.containsKey("peakThreads") ? " (pool peak " + r.get("peakThreads") + ")"
                    : ""));
            row.add(String.format(Locale.ROOT, "%,d", (Long) r.get("calls")));
            if (latest) {
                Object lag = r.get("lagP99Ms");
                row.add(lag == null ? "n/a" : Table.num((Double) lag));
                row.add(String.format(Locale.ROOT, "%,d", (Long) r.get("completed")));
                if (lag != null) {
                    t.chart("lag p99 ms", e.getKey(), (Double) lag);
                }
            } else {
                t.chart("records/s", e.getKey(), rate);
            }
            t.row(row);
        }
        t.chartUnit = latest ? "ms" : "records/s";
        t.notes.add("Peers run one after another on a shared 2-core machine (see the description for how many"
                + " runs each): compare ratios within this run, not absolute numbers across runs.");
        return t;
    }
}
