package io.github.gatlingexecutor.benchmarks.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Runs parallel-consumer in this JVM on the kafka-clients it was built for (3.9), while the broker and our processor
 * use 4.4. Why a class loader and not the class path: parallel-consumer 0.5.3.3 is compiled against kafka-clients
 * 3.9, and Kafka 4 removed APIs of that line, so one class path cannot serve both; a child process would add its own
 * JVM start-up, JIT warm-up and scheduling to the comparison, while a loader keeps every peer in the same JVM on the
 * same broker. The build copies parallel-consumer and its exact dependencies into {@code target/parallel-consumer};
 * this loader sees only those jars (parent: the platform loader, so no class of ours or of Kafka 4 leaks in) plus
 * the driver package, whose classes it defines itself from this jar's bytes.
 */
final class IsolatedParallelConsumer {

    private static final String DRIVER_PACKAGE = "io.github.gatlingexecutor.benchmarks.kafka.pc.";

    private final ClassLoader loader;

    private IsolatedParallelConsumer(ClassLoader loader) {
        this.loader = loader;
    }

    /** The loader over {@code target/parallel-consumer}; throws with the reason if the jars are not there. */
    static IsolatedParallelConsumer load() throws IOException {
        Path dir = libraryDirectory();
        if (!Files.isDirectory(dir)) {
            throw new IOException(dir + " is missing: build the benchmarks module with mvn package");
        }
        List<URL> urls = new ArrayList<>();
        try (Stream<Path> jars = Files.list(dir)) {
            for (Path jar : (Iterable<Path>) jars.filter(p -> p.toString().endsWith(".jar")).sorted()::iterator) {
                urls.add(jar.toUri().toURL());
            }
        } catch (MalformedURLException e) {
            throw new IOException(e);
        }
        ClassLoader own = IsolatedParallelConsumer.class.getClassLoader();
        ClassLoader loader = new URLClassLoader("parallel-consumer", urls.toArray(new URL[0]),
                ClassLoader.getPlatformClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (!name.startsWith(DRIVER_PACKAGE)) {
                    return super.loadClass(name, resolve);
                }
                synchronized (getClassLoadingLock(name)) {
                    Class<?> c = findLoadedClass(name);
                    if (c == null) {
                        try (InputStream in = own.getResourceAsStream(name.replace('.', '/') + ".class")) {
                            if (in == null) {
                                throw new ClassNotFoundException(name);
                            }
                            byte[] bytes = in.readAllBytes();
                            c = defineClass(name, bytes, 0, bytes.length);
                        } catch (IOException e) {
                            throw new ClassNotFoundException(name, e);
                        }
                    }
                    return c;
                }
            }
        };
        return new IsolatedParallelConsumer(loader);
    }

    /** Next to the benchmarks jar (or to target/classes when run from an IDE). */
    private static Path libraryDirectory() {
        try {
            Path location = Path.of(IsolatedParallelConsumer.class.getProtectionDomain().getCodeSource()
                    .getLocation().toURI());
            return location.getParent().resolve("parallel-consumer");
        } catch (Exception e) {
            return Path.of("benchmarks", "target", "parallel-consumer");
        }
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> run(Map<String, Object> spec) throws Exception {
        try {
            return (Map<String, Object>) Class.forName(DRIVER_PACKAGE + "ParallelConsumerDriver", true, loader)
                    .getMethod("run", Map.class).invoke(null, spec);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    /** The kafka-clients version the loader resolved, to print in the report. */
    String kafkaClientsVersion() {
        try {
            Class<?> info = Class.forName("org.apache.kafka.common.utils.AppInfoParser", true, loader);
            return (String) info.getMethod("getVersion").invoke(null);
        } catch (ReflectiveOperationException e) {
            return "unknown";
        }
    }
}
