package io.github.gatlingexecutor.kafka;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.ClusterResourceListener;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.metrics.MetricValueProvider;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The processor's view of a configured deserializer: an {@link Error} it throws becomes a
 * {@link SerializationException}. The consumer wraps only a {@link RuntimeException} of a deserializer in a
 * {@code RecordDeserializationException} (which names the record's partition and offset, so the record can reach the
 * failure handler and be skipped after it); an {@code Error} left the consumer's {@code poll} bare, naming no record,
 * and ended the polling thread. A deserializer that overflows its stack on one malformed value is such a case.
 *
 * <p>The consumer sees only this guard, so it passes on what the consumer does with a deserializer beyond calling it:
 * the cluster's id ({@link ClusterResourceListener}), and the plugin metrics of one that is {@link Monitorable}, their
 * {@code class} tag naming the deserializer, not this guard. Without that, a deserializer that relies on either worked
 * under a plain consumer and not under the processor given the same properties.
 */
class ErrorGuardingDeserializer<T> implements Deserializer<T>, ClusterResourceListener {
    final Deserializer<T> delegate;
    /** Set by the first {@link #close()}. */
    private final AtomicBoolean closed = new AtomicBoolean();

    private ErrorGuardingDeserializer(Deserializer<T> delegate) {
        this.delegate = delegate;
    }

    /**
     * Guards {@code given}, or, if null, the deserializer the consumer properties name, made and configured as the
     * consumer would make it (the consumer configures only the deserializers it makes itself). One difference: the
     * consumer adds the client id it generates when none is set to the configuration it hands its own deserializers;
     * this one sees the properties as given, with the class of {@code other} (the other side's given instance, or
     * null) under its key, as the consumer puts it there.
     */
    @SuppressWarnings("unchecked")
    static <T> Deserializer<T> of(Deserializer<T> given, Deserializer<?> other, Map<String, Object> config,
                                  boolean isKey) {
        Deserializer<T> d = given;
        if (d == null) {
            ConsumerConfig cc = new ConsumerConfig(withInstanceClass(config, other, !isKey));
            d = cc.getConfiguredInstance(isKey ? ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG
                    : ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, Deserializer.class);
            d.configure(cc.originals(), isKey);
        }
        // Monitorable only when the deserializer is: the consumer makes plugin metrics for every Monitorable it is given.
        return d instanceof Monitorable ? new Monitored<>(d) : new ErrorGuardingDeserializer<>(d);
    }

    @Override
    public void onUpdate(ClusterResource clusterResource) {
        if (delegate instanceof ClusterResourceListener) {
            ((ClusterResourceListener) delegate).onUpdate(clusterResource);
        }
    }

    /** The guard of a deserializer that is {@link Monitorable}. */
    private static final class Monitored<T> extends ErrorGuardingDeserializer<T> implements Monitorable {
        Monitored(Deserializer<T> delegate) {
            super(delegate);
        }

        @Override
        public void withPluginMetrics(PluginMetrics metrics) {
            ((Monitorable) delegate).withPluginMetrics(new Renamed(metrics, getClass().getSimpleName(),
                    delegate.getClass().getSimpleName()));
        }
    }

    /**
     * The consumer's plugin metrics for the guard, with the {@code class} tag it put on them naming the deserializer,
     * as a plain consumer names it, rather than the guard: the metric names a deserializer makes go through
     * {@link #metricName}, and the rest is passed on as it is.
     */
    private static final class Renamed implements PluginMetrics {
        private static final String CLASS_TAG = "class";
        private final PluginMetrics metrics;
        private final String guard;
        private final String deserializer;

        Renamed(PluginMetrics metrics, String guard, String deserializer) {
            this.metrics = metrics;
            this.guard = guard;
            this.deserializer = deserializer;
        }

        @Override
        public MetricName metricName(String name, String description, LinkedHashMap<String, String> tags) {
            MetricName m = metrics.metricName(name, description, tags);
            if (!guard.equals(m.tags().get(CLASS_TAG))) {
                return m;
            }
            Map<String, String> renamed = new LinkedHashMap<>(m.tags());
            renamed.put(CLASS_TAG, deserializer);
            return new MetricName(m.name(), m.group(), m.description(), renamed);
        }

        @Override
        public void addMetric(MetricName metricName, MetricValueProvider<?> metricValueProvider) {
            metrics.addMetric(metricName, metricValueProvider);
        }

        @Override
        public void removeMetric(MetricName metricName) {
            metrics.removeMetric(metricName);
        }

        @Override
        public Sensor addSensor(String name) {
            return metrics.addSensor(name);
        }

        @Override
        public void removeSensor(String name) {
            metrics.removeSensor(name);
        }
    }

    /**
     * The properties as the consumer sees them when it is handed a deserializer instance: the instance's class under
     * its key, as {@code KafkaConsumer} puts it there. The property of a side given as an instance may be absent, but
     * {@link ConsumerConfig} requires both keys: without this, one side given as an instance and the other as a
     * property failed at {@code start()} with "Missing required configuration".
     */
    private static Map<String, Object> withInstanceClass(Map<String, Object> config, Deserializer<?> instance,
                                                         boolean isKey) {
        if (instance == null) {
            return config;
        }
        Map<String, Object> m = new HashMap<>(config);
        m.put(isKey ? ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG : ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                instance.getClass());
        return m;
    }

    @Override
    public T deserialize(String topic, byte[] data) {
        try {
            return delegate.deserialize(topic, data);
        } catch (Error e) {
            throw failed(e);
        }
    }

    @Override
    public T deserialize(String topic, Headers headers, byte[] data) {
        try {
            return delegate.deserialize(topic, headers, data);
        } catch (Error e) {
            throw failed(e);
        }
    }

    @Override
    public T deserialize(String topic, Headers headers, ByteBuffer data) {
        try {
            return delegate.deserialize(topic, headers, data);
        } catch (Error e) {
            throw failed(e);
        }
    }

    /**
     * The record's failure, as the consumer reports a deserializer's exception. An {@code OutOfMemoryError} is the
     * heap's state, not the record's: it becomes an {@link OutOfHeap}, which the processor answers by reading the
     * record again after a backoff, without the failure handler. Thrown bare, as it was, it left the consumer's fetch
     * with the record passed over (the consumer keeps a failure only when it is an exception), and the commit went
     * past a record that no handler had seen.
     */
    private SerializationException failed(Error e) {
        if (e instanceof OutOfMemoryError) {
            return new OutOfHeap((OutOfMemoryError) e);
        }
        return new SerializationException("The deserializer " + delegate.getClass().getName() + " threw " + e, e);
    }

    /**
     * What a deserializer that ran out of heap throws to the consumer (see {@link #failed}). Made with as little
     * allocation as can be, the heap being short: a constant message, and no stack trace (the cause has its own).
     */
    static final class OutOfHeap extends SerializationException {
        private static final long serialVersionUID = 1L;

        OutOfHeap(OutOfMemoryError cause) {
            super("A deserializer ran out of heap", cause);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    }

    /** The most links of a cause chain {@link #outOfHeap} looks at. */
    private static final int MAX_CAUSES = 100;

    /**
     * Whether the consumer's report of an unreadable record comes from a deserializer that ran out of heap: an
     * {@link OutOfHeap}, or an {@code OutOfMemoryError} that a deserializer wrapped in an exception of its own.
     */
    static boolean outOfHeap(Throwable reported) {
        // A bounded walk: causes may go round in a circle (two exceptions each the other's cause, which Throwable
        // allows), and this runs on the polling thread, which went round it for good (nothing more polled, committed
        // or closed). Without allocating a set of those seen, as the heap may be short here; no real chain is as long.
        int links = 0;
        for (Throwable t = reported; t != null && links++ < MAX_CAUSES; t = t.getCause()) {
            if (t instanceof OutOfHeap || t instanceof OutOfMemoryError) {
                return true;
            }
        }
        return false;
    }

    /**
     * Closes the deserializer, once: the processor closes the guards of a consumer whose construction failed, and the
     * consumer may have closed them already (when it failed after taking them in).
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            delegate.close();
        }
    }
}
