package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ThreadFactory;

/**
 * Virtual threads, found by reflection so this module still compiles and runs on Java 17 (where they do not exist).
 */
public final class VirtualThreads {
    private static final ThreadFactory FACTORY = find();

    private VirtualThreads() {
    }

    public static boolean available() {
        return FACTORY != null;
    }

    /** A virtual-thread factory, or null on a JDK without them. */
    static ThreadFactory factory() {
        return FACTORY;
    }

    private static ThreadFactory find() {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Class<?> builderType = Class.forName("java.lang.Thread$Builder");
            builder = builderType.getMethod("name", String.class, long.class).invoke(builder, "virtual-", 0L);
            return (ThreadFactory) builderType.getMethod("factory").invoke(builder);
        } catch (ReflectiveOperationException | RuntimeException notOnThisJdk) {
            return null;
        }
    }

    /** One single-thread executor per context whose one thread is virtual. */
    public static OrderedExecutorAdapter perContext(int keys) {
        if (FACTORY == null) {
            throw new IllegalStateException("virtual threads need JDK 21+, running " + Runtime.version());
        }
        return new ExecutorPerContextAdapter("virtual thread per context", keys, FACTORY);
    }
}
