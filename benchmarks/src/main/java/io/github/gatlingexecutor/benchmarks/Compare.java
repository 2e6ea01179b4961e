package io.github.gatlingexecutor.benchmarks;

import io.github.gatlingexecutor.benchmarks.kafka.KafkaBench;
import io.github.gatlingexecutor.benchmarks.peers.Peer;
import io.github.gatlingexecutor.benchmarks.peers.VirtualThreads;
import io.github.gatlingexecutor.benchmarks.report.HtmlReport;
import io.github.gatlingexecutor.benchmarks.report.Table;
import io.github.gatlingexecutor.benchmarks.scenarios.Blocking;
import io.github.gatlingexecutor.benchmarks.scenarios.BusiestContexts;
import io.github.gatlingexecutor.benchmarks.scenarios.Coalescing;
import io.github.gatlingexecutor.benchmarks.scenarios.IdleCpu;
import io.github.gatlingexecutor.benchmarks.scenarios.LowLoadLatency;
import io.github.gatlingexecutor.benchmarks.scenarios.ManyProducers;
import io.github.gatlingexecutor.benchmarks.scenarios.Overload;
import io.github.gatlingexecutor.benchmarks.scenarios.Memory;
import io.github.gatlingexecutor.benchmarks.scenarios.Runner;
import io.github.gatlingexecutor.benchmarks.scenarios.Scenario;
import io.github.gatlingexecutor.benchmarks.scenarios.SeedBench;
import io.github.gatlingexecutor.benchmarks.scenarios.SlowKey;
import io.github.gatlingexecutor.benchmarks.scenarios.Sizes;
import io.github.gatlingexecutor.benchmarks.scenarios.Summary;
import io.github.gatlingexecutor.benchmarks.scenarios.TinyTasks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Runs every scenario against every peer in one JVM, interleaved, and prints (and writes as HTML) the medians.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar --quick      # about 3 to 5 minutes
 * java -jar benchmarks/target/benchmarks.jar              # the full run (prints its estimate first)
 * options: --only=seed,tiny-uniform,...,overload,kafka  --out=path/report.html
 * </pre>
 */
public final class Compare {

    private Compare() {
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Set<String> only = new HashSet<>();
        List<String> peerFilter = new ArrayList<>();
        Path out = null;
        for (String a : args) {
            if (a.equals("--quick")) {
                quick = true;
            } else if (a.equals("--full")) {
                quick = false;
            } else if (a.startsWith("--only=")) {
                only.addAll(List.of(a.substring("--only=".length()).split(",")));
            } else if (a.startsWith("--peers=")) {
                peerFilter.addAll(List.of(a.substring("--peers=".length()).toLowerCase(Locale.ROOT).split(",")));
            } else if (a.startsWith("--out=")) {
                out = Path.of(a.substring("--out=".length()));
            } else {
                System.err.println("usage: Compare [--quick|--full] [--only=seed,tiny-uniform,tiny-zipf,tiny-hot,"
                        + "producers-8,producers-32,coalescing,blocking,latency,slow-key,overload,memory,idle,"
                        + "observability,kafka]"
                        + " [--peers=gatling,guava,...]"
                        + " [--out=report.html]");
                System.exit(2);
            }
        }
        if (out == null) {
            out = Files.isDirectory(Path.of("benchmarks", "target")) ? Path.of("benchmarks", "target", "report.html")
                    : Path.of("target", "report.html");
        }
        Peer.filter(peerFilter);
        int cores = Runtime.getRuntime().availableProcessors();
        Sizes sizes = quick ? Sizes.quick(cores) : Sizes.full(cores);

        List<Scenario> scenarios = new ArrayList<>(List.of(new SeedBench(sizes), TinyTasks.uniform(sizes),
                TinyTasks.zipf(sizes), TinyTasks.hotKey(sizes), new ManyProducers(sizes, 8),
                new ManyProducers(sizes, 32), new Coalescing(sizes), new Blocking(sizes), new LowLoadLatency(sizes),
                new SlowKey(sizes), new Overload(sizes)));
        scenarios.removeIf(s -> !only.isEmpty() && !only.contains(s.id));
        boolean memory = only.isEmpty() || only.contains("memory");
        boolean idle = only.isEmpty() || only.contains("idle");
        boolean kafka = only.isEmpty() || only.contains("kafka");
        boolean observability = only.isEmpty() || only.contains("observability");

        double estimate = scenarios.stream().mapToDouble(Scenario::estimatedSeconds).sum()
                + (memory ? (quick ? 10 : 45) : 0) + (idle ? 9 * (sizes.idleSeconds() + 0.6) : 0)
                + (kafka ? KafkaBench.estimatedSeconds(quick) : 0) + (observability ? (quick ? 5 : 30) : 0);
        List<String> header = new ArrayList<>();
        header.add("Mode: " + (quick ? "quick (small sizes, few repetitions: a sanity check, not a result)"
                : "full") + "; " + sizes.warmups() + " warm-up + " + sizes.repetitions()
                + " measured rounds per scenario (fewer for the slow ones), medians reported");
        header.add("Machine: " + cores + " cores (availableProcessors), " + System.getProperty("os.name") + " "
                + System.getProperty("os.arch") + ", max heap " + Runtime.getRuntime().maxMemory() / (1 << 20)
                + " MB");
        header.add("JDK: " + System.getProperty("java.vm.name") + " " + Runtime.version() + " ("
                + System.getProperty("java.vendor") + ")");
        header.add("Date: " + ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
        header.add("Peers run in this one JVM, interleaved round by round, each run on a fresh instance after a GC;"
                + " ordered peers are checked for per-key order on every run.");
        if (!VirtualThreads.available()) {
            header.add("virtual thread per context: skipped, this JDK (" + Runtime.version()
                    + ") has no virtual threads (run on JDK 21+ to include it)");
        }
        for (String h : header) {
            System.out.println(h);
        }
        System.out.printf(Locale.ROOT, "Estimated duration: about %.0f s (%.1f min)%n%n", estimate, estimate / 60);

        Runner runner = new Runner(estimate);
        List<Table> tables = new ArrayList<>();
        Map<String, List<Summary>> byId = new LinkedHashMap<>();
        for (Scenario s : scenarios) {
            System.out.println("== " + s.title);
            List<Summary> summaries = runner.run(s);
            byId.put(s.id, summaries);
            show(tables, Tables.of(s, summaries, cores));
        }
        Table memoryChurn = null;
        if (memory) {
            System.out.println("== 7. Memory");
            show(tables, Memory.idleContexts(sizes, runner));
            memoryChurn = show(tables, Memory.churn(sizes, runner));
        }
        Table idleCpu = null;
        Table observed = null;
        if (idle) {
            System.out.println("== Idle CPU");
            idleCpu = show(tables, IdleCpu.measure(sizes, runner));
        }

        if (observability) {
            System.out.println("== Observability cost");
            observed = show(tables, BusiestContexts.measure(sizes, runner));
        }

        List<String> kafkaVerdicts = new ArrayList<>();
        if (kafka) {
            System.out.println("== Kafka (in-process broker)");
            List<Table> kafkaTables = new ArrayList<>();
            KafkaBench.run(quick, kafkaTables, kafkaVerdicts);
            for (Table t : kafkaTables) {
                show(tables, t);
            }
        }

        List<String> verdicts = Targets.evaluate(byId, idleCpu, memoryChurn, observed, cores);
        verdicts.addAll(kafkaVerdicts);
        System.out.println("\nTargets" + (quick ? " (quick run: indicative only)" : "") + ":");
        for (String v : verdicts) {
            System.out.println("  " + v);
        }
        HtmlReport.write(out, "GatlingExecutor comparison", header, Targets.atAGlance(byId), tables, verdicts);
        Path markdown = out.resolveSibling(out.getFileName().toString().replaceFirst("\\.html$", "") + ".md");
        StringBuilder md = new StringBuilder();
        for (String h : header) {
            md.append("* ").append(h).append('\n');
        }
        for (Table t : tables) {
            md.append("\n### ").append(t.title).append("\n\n").append(t.toMarkdown());
        }
        md.append("\n### Targets\n\n");
        for (String v : verdicts) {
            md.append("* ").append(v).append('\n');
        }
        Files.writeString(markdown, md.toString());
        System.out.printf(Locale.ROOT, "%nDone in %.0f s. Report: %s (tables also in %s)%n", runner.elapsedSeconds(),
                out.toAbsolutePath(), markdown.toAbsolutePath());
        System.exit(0); // a peer that failed to stop must not keep the JVM alive
    }

    /** Prints a finished table and keeps it for the report. */
    private static Table show(List<Table> tables, Table t) {
        System.out.println(t.toText());
        tables.add(t);
        return t;
    }

    /** Peers' names as the tables show them. */
    static final String GATLING = Peer.GATLING;
}
