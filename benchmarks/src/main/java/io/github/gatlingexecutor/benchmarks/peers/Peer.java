package io.github.gatlingexecutor.benchmarks.peers;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * A named way to make a fresh {@link OrderedExecutorAdapter} for {@code keys} keys. Every repetition of every
 * scenario gets a fresh instance, so no peer carries warm threads or queues from one run into the next.
 */
public record Peer(String name, boolean ordered, IntFunction<OrderedExecutorAdapter> factory) {

    public OrderedExecutorAdapter create(int keys) {
        return factory.apply(keys);
    }

    public static final String GATLING = "GatlingExecutor";

    /** Name fragments (lower case) a peer must contain to run; empty: all. Set once, from the command line. */
    private static volatile List<String> filter = List.of();

    public static void filter(List<String> nameFragments) {
        filter = List.copyOf(nameFragments);
    }

    /** Applies the command line's --peers filter to a scenario's peer list. */
    public static List<Peer> filtered(List<Peer> peers) {
        if (filter.isEmpty()) {
            return peers;
        }
        List<Peer> out = new ArrayList<>();
        for (Peer p : peers) {
            String n = p.name().toLowerCase(java.util.Locale.ROOT);
            if (filter.stream().anyMatch(n::contains)) {
                out.add(p);
            }
        }
        return out;
    }

    public static Peer gatling(int cores) {
        return new Peer(GATLING, true, keys -> new GatlingAdapter(keys, cores));
    }

    /** GatlingExecutor with both limits set far above what the run ever queues: the cost of being bounded. */
    public static final String GATLING_LIMITS_UNREACHED = "GatlingExecutor (limits set, never reached)";
    /** GatlingExecutor while a JFR recording with the JDK's default settings is on. */
    public static final String GATLING_JFR = "GatlingExecutor (JFR recording on)";

    /** Variants of GatlingExecutor whose cost against the plain one is a target (the bounded and JFR ones). */
    public static List<Peer> gatlingVariants(int cores) {
        return List.of(
                new Peer(GATLING_LIMITS_UNREACHED, true, keys -> new GatlingAdapter(GATLING_LIMITS_UNREACHED, keys,
                        cores, false, b -> b.maxQueued(Integer.MAX_VALUE).maxQueuedPerContext(Integer.MAX_VALUE))),
                new Peer(GATLING_JFR, true, keys -> {
                    jdk.jfr.Recording recording;
                    try {
                        recording = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("default"));
                    } catch (java.io.IOException | java.text.ParseException e) {
                        throw new IllegalStateException("no default JFR configuration", e);
                    }
                    recording.setToDisk(false);
                    recording.start();
                    // Starting a recording (the first in a JVM especially) keeps JFR's own threads busy for a while;
                    // the target is the executor's steady cost under a recording, so let that settle first.
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return new GatlingAdapter(GATLING_JFR, keys, cores, false, b -> b, recording);
                }));
    }

    public static Peer inline() {
        return new Peer("inline (caller runs)", true, keys -> new InlineAdapter());
    }

    public static Peer perContext() {
        return new Peer("executor per context", true, ExecutorPerContextAdapter::new);
    }

    public static Peer bookKeeper(int cores) {
        return new Peer("BookKeeper OrderedExecutor", true, keys -> new BookKeeperAdapter(cores));
    }

    public static Peer guava(int cores) {
        return new Peer("Guava SequentialExecutor", true, keys -> new GuavaAdapter(keys, cores));
    }

    /** Guava's sequential executor over a cached pool: an ordered peer whose pool grows when its tasks block. */
    public static Peer guavaCached() {
        return new Peer("Guava SequentialExecutor (cached pool)", true, GuavaAdapter::overCachedPool);
    }

    public static Peer netty(int cores) {
        return new Peer("Netty NonSticky", true, keys -> new NettyAdapter(keys, cores));
    }

    public static Peer jraft(int cores) {
        return new Peer("SOFAJRaft Mpsc group", true, keys -> new JraftAdapter(cores));
    }

    /**
     * The shard design probe (not an executor: see {@link io.github.gatlingexecutor.benchmarks.probe.ShardProbe}),
     * bare and with per-context records; joins the ordered peers only with {@code -Dprobe.shard=true}.
     */
    public static List<Peer> shardProbes(int cores) {
        return List.of(
                new Peer("Shard probe", true, keys -> new ShardProbeAdapter("Shard probe", keys, cores, false)),
                new Peer("Shard probe + context records", true,
                        keys -> new ShardProbeAdapter("Shard probe + context records", keys, cores, true)));
    }

    /** Needs JDK 21+: check {@link VirtualThreads#available()}. */
    public static Peer virtualPerContext() {
        return new Peer("virtual thread per context", true, VirtualThreads::perContext);
    }

    public static Peer fixedPool(int cores) {
        return new Peer("ThreadPoolExecutor (" + cores + ", no order)", false,
                keys -> UnorderedPoolAdapter.fixed(cores));
    }

    public static Peer cachedPool() {
        return new Peer("cached pool (no order)", false, keys -> UnorderedPoolAdapter.cached());
    }

    public static Peer forkJoin(int cores) {
        return new Peer("ForkJoinPool (" + cores + ", no order)", false, keys -> UnorderedPoolAdapter.forkJoin(cores));
    }

    /**
     * Finds a peer by a short name (for JMH parameters): gatling, gatling-limits, gatling-jfr, per-context, bookkeeper,
     * guava, netty, jraft, virtual, tpe.
     */
    public static Peer byShortName(String shortName, int cores) {
        switch (shortName) {
            case "gatling": return gatling(cores);
            case "gatling-limits": return gatlingVariants(cores).get(0);
            case "gatling-jfr": return gatlingVariants(cores).get(1);
            case "per-context": return perContext();
            case "bookkeeper": return bookKeeper(cores);
            case "guava": return guava(cores);
            case "netty": return netty(cores);
            case "jraft": return jraft(cores);
            case "virtual": return virtualPerContext();
            case "tpe": return fixedPool(cores);
            default: throw new IllegalArgumentException("unknown peer " + shortName);
        }
    }

    /**
     * The ordered peers (and, if asked, the unordered ThreadPoolExecutor reference), GatlingExecutor first. Virtual
     * threads join only on a JDK that has them.
     */
    public static List<Peer> orderedPeers(int cores, boolean withThreadPool) {
        List<Peer> peers = new ArrayList<>();
        peers.add(gatling(cores));
        peers.add(perContext());
        peers.add(bookKeeper(cores));
        peers.add(guava(cores));
        peers.add(netty(cores));
        peers.add(jraft(cores));
        if (Boolean.getBoolean("probe.shard")) {
            peers.addAll(shardProbes(cores));
        }
        if (VirtualThreads.available()) {
            peers.add(virtualPerContext());
        }
        if (withThreadPool) {
            peers.add(fixedPool(cores));
        }
        return peers;
    }
}
