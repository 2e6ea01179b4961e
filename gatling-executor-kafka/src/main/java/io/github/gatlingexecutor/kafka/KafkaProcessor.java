package io.github.gatlingexecutor.kafka;

import io.github.gatlingexecutor.ContextExecutor;
import io.github.gatlingexecutor.GatlingExecutor;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.Deserializer;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import static io.github.gatlingexecutor.kafka.PartitionState.DeserializationFailure.ACKNOWLEDGED;
import static io.github.gatlingexecutor.kafka.PartitionState.DeserializationFailure.FAILED;
import static io.github.gatlingexecutor.kafka.PartitionState.DeserializationFailure.RUNNING;
import static io.github.gatlingexecutor.kafka.PartitionState.DeserializationFailure.WAITING;

/**
 * Consumes Kafka topics and runs each record's handler on a {@link ContextExecutor}, in per-key order (or as
 * {@link Ordering} says), committing only offsets behind completed work.
 *
 * <pre>{@code
 * try (KafkaProcessor<String, String> processor = KafkaProcessor.<String, String>builder(consumerProperties)
 *         .topics("orders")
 *         .ordering(Ordering.KEY)
 *         .handler(record -> apply(record.key(), record.value()))
 *         .onFailure((record, error) -> deadLetter(record, error))
 *         .build()) {
 *     processor.start();
 *     ...
 * }
 * }</pre>
 *
 * <h2>Threads</h2>
 * {@link #start()} starts one polling thread, named {@code kafka-<group.id>-poll}, which alone uses the
 * {@link KafkaConsumer} (it is not thread-safe): it polls, hands each partition's records of a poll to that
 * partition's router as one batch, pauses and resumes partitions, commits, and runs the rebalance callbacks. The
 * routers run on the executor's threads (under {@link Ordering#KEY_LATEST}, on the polling thread, which hands each
 * record to its key's lane): a record whose key is free runs right there, a record whose key is busy (or any record,
 * once the handler proves slow) goes to the key's lane. Handlers and failure handlers run on the
 * executor's threads, never on the polling thread, so a slow or failing handler never stops polling. Unless an
 * executor is given, the processor makes its own {@link GatlingExecutor} (named {@code kafka-<group.id>}) and closes
 * it in {@link #close()}.
 *
 * <h2>Commits</h2>
 * Per partition, the committed offset is the end of the contiguous prefix of completed records: records whose handler
 * returned, superseded records ({@link Ordering#KEY_LATEST}), and records the {@link FailureHandler} returned for. It
 * is committed every {@code commitInterval}, when the partition is revoked, and on {@link #close()}; it never passes
 * a record that is not complete. So delivery is at least once: after a crash, the records after the last commit are
 * processed again (some of them may have run already), and nothing is skipped.
 *
 * <h2>Rebalancing</h2>
 * A revoked partition takes no new records; the records already handed out (queued or running) get up to
 * {@code closeTimeout} to finish, the completed prefix is committed, and the rest is dropped without running (the
 * new owner reads it from the committed offset). A record waiting for its next try is not complete either: its tries
 * go on meanwhile, and a partition with one that stays failed makes its revocation (and a close) wait out the whole
 * {@code closeTimeout}. Past that timeout the partition is let go anyway: a handler still
 * running then may overlap with the new owner's first records of that key, unless the new owner is this processor,
 * which first waits (up to {@code closeTimeout} again) for that handler. A record whose handler fails after its
 * partition was let go (the interrupt of {@code close()} past its timeout, say) is dropped, not retried or handed to
 * the {@link FailureHandler}: its next owner processes it. Lost partitions commit nothing and drop
 * their queued records (and one assigned back waits in the same way). Eager and cooperative assignors
 * ({@code CooperativeStickyAssignor}) and the consumer group protocol all work, since only the rebalance callbacks
 * are used.
 *
 * <h2>Back-pressure</h2>
 * A partition with {@code maxPendingPerPartition} records polled and not completed is paused alone (it may go over by
 * the records of one poll) and resumed when fewer than half remain; the other partitions keep flowing. A record that
 * stays failed holds its partition's commit, and under {@link Ordering#KEY} and {@link Ordering#KEY_LATEST} not its
 * other keys: they keep flowing, and the memory spent tracking the commit follows the records pending, not those
 * completed behind the failed one (under {@link Ordering#PARTITION} it holds its partition).
 *
 * @param <K> key type
 * @param <V> value type
 */
public final class KafkaProcessor<K, V> implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(KafkaProcessor.class.getName());

    private static final int NEW = 0;
    private static final int RUNNING_STATE = 1;
    private static final int CLOSED = 2;

    /** Longest poll when nothing is waiting: bounds how late a close or a due commit is noticed. */
    private static final long IDLE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** Poll while a partition waits to be resumed or re-read: bounds how late a drained partition resumes. */
    private static final long BUSY_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    /** Pause of the polling thread after the consumer itself failed, so that a persistent error does not spin. */
    private static final long CONSUMER_ERROR_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /** The longest pause between polls that keep failing: the pause doubles from {@link #CONSUMER_ERROR_PAUSE_NANOS}. */
    private static final long MAX_CONSUMER_ERROR_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** The longest wait of a failed poll's look-up of the group's committed offsets (see rewindAfterFailedPoll). */
    private static final Duration COMMITTED_LOOKUP_TIMEOUT = Duration.ofSeconds(5);
    private static final int SWEEP_MIN = 4096;
    /** Fewest records behind a partition's oldest incomplete one before its commit tracking is compacted. */
    private static final int COMPACT_MIN = 1024;

    private final Map<String, Object> config;
    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final List<String> topics;
    private final Ordering ordering;
    private final ContextExecutor givenExecutor;
    private final int maxPending;
    private final long resumeBelow;
    private final long commitIntervalNanos;
    private final Duration closeTimeout;
    private final String groupId;
    private final RecordRunner<K, V> runner;
    private final ThreadFactory pollThreadFactory;
    private final ConsumerMaker<K, V> consumerMaker;

    private final AtomicInteger state = new AtomicInteger(NEW);
    private final Object lifecycle = new Object();
    private final AtomicBoolean executorClosed = new AtomicBoolean();
    /**
     * {@link #FINISH_ASKED} once a {@code close()} from inside the processor (see {@link #closeFromInside}) left the end
     * of the close to the polling thread; {@link #FINISH_POLL_ENDED} once the polling thread has ended. Whoever moves
     * it first decides who ends the close: a close from inside that finds the polling thread gone cannot leave it
     * there.
     */
    private final AtomicInteger finish = new AtomicInteger(FINISH_NONE);
    private static final int FINISH_NONE = 0;
    private static final int FINISH_ASKED = 1;
    private static final int FINISH_POLL_ENDED = 2;
    private volatile boolean closing;
    /** Polls in a row that threw (polling thread only): the pause before the next one grows with it. */
    private int failedPolls;
    private volatile boolean halted;
    private volatile ContextExecutor executor;
    private volatile Thread pollThread;
    private KafkaConsumer<K, V> consumer;

    // Owned by the polling thread.
    private final Map<TopicPartition, PartitionState> partitions = new HashMap<>();
    /**
     * Partitions let go (lost, or revoked past {@code closeTimeout}) whose records may still run (see {@link
     * Listener#onPartitionsLost}): if one is assigned to us again, its new router waits for them. Dropped once stopped.
     */
    private final Map<TopicPartition, PartitionState> stillRunning = new HashMap<>();
    /** Per topic: the slots of its keys, shared by the routers of its partitions (which only read the map here). */
    private final Map<String, ConcurrentHashMap<Object, Slot<K, V>>> keys = new HashMap<>();
    private long sweepAt = SWEEP_MIN;
    private long nextCommitNanos;
    private boolean waiting;
    private boolean rejectionLogged;

    // Statistics, read by any thread.
    private volatile long polled;
    private volatile Set<TopicPartition> pausedView = Set.of();
    private final Map<TopicPartition, Long> committed = new ConcurrentHashMap<>();

    private KafkaProcessor(Builder<K, V> b, Map<String, Object> config) {
        this.config = config;
        this.keyDeserializer = b.keyDeserializer;
        this.valueDeserializer = b.valueDeserializer;
        this.topics = List.copyOf(b.topics);
        this.ordering = b.ordering;
        this.givenExecutor = b.executor;
        this.maxPending = b.maxPendingPerPartition;
        this.resumeBelow = (b.maxPendingPerPartition + 1L) / 2;
        this.commitIntervalNanos = capped(b.commitInterval).toNanos();
        this.closeTimeout = capped(b.closeTimeout);
        this.groupId = String.valueOf(config.get(ConsumerConfig.GROUP_ID_CONFIG));
        this.runner = new RecordRunner<>(b.handler, b.onFailure, b.retries, capped(b.retryBackoff),
                b.ordering == Ordering.UNORDERED);
        this.pollThreadFactory = b.pollThreadFactory;
        this.consumerMaker = b.consumerMaker;
    }

    /** Makes the consumer: {@code KafkaConsumer::new}, or, in tests, a consumer that misbehaves. */
    @FunctionalInterface
    interface ConsumerMaker<K, V> {
        KafkaConsumer<K, V> make(Map<String, Object> config, Deserializer<K> keys, Deserializer<V> values);
    }

    /** About 73 years: durations are used in nanoseconds, added to clock readings, and this leaves room for that. */
    private static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE >> 2);

    /**
     * {@code d}, or {@link #LONGEST} if longer: a timeout of {@code ChronoUnit.FOREVER} is valid, and means "wait as
     * long as it takes", but its nanoseconds overflow a {@code long} (close() then threw, committed nothing and left
     * the consumer's heartbeat thread running).
     */
    static Duration capped(Duration d) {
        return d.compareTo(LONGEST) > 0 ? LONGEST : d;
    }

    /**
     * A builder over a copy of {@code consumerProperties}. They pass to the {@link KafkaConsumer} unchanged, except
     * that {@code enable.auto.commit} is set to {@code false} (the processor commits; {@code true} is an error), and
     * that the processor makes and configures the deserializers {@code key.deserializer} and
     * {@code value.deserializer} name, as the consumer would, and hands them to it wrapped: an {@link Error} one throws
     * becomes a {@link RecordDeserializationException}, so that its record reaches the {@link FailureHandler} (an
     * {@code OutOfMemoryError} only after the record was read again {@code retries} times).
     *
     * @param <K> key type
     * @param <V> value type
     * @param consumerProperties the consumer's settings, copied now: later changes to them are not seen
     * @return a new builder
     * @throws NullPointerException if {@code consumerProperties} is {@code null}
     */
    public static <K, V> Builder<K, V> builder(Properties consumerProperties) {
        Objects.requireNonNull(consumerProperties, "consumerProperties");
        // As the consumer reads Properties: a value of the table itself, of any type, before one of its defaults (a
        // String default took the place of a typed value set over it, so the consumer saw another setting than the
        // one given, and enable.auto.commit=true over a default of false passed the check).
        Map<String, Object> copy = new LinkedHashMap<>();
        consumerProperties.forEach((k, v) -> copy.put(String.valueOf(k), v));
        for (String name : consumerProperties.stringPropertyNames()) {
            copy.putIfAbsent(name, consumerProperties.getProperty(name));
        }
        return new Builder<>(copy);
    }

    /**
     * As {@link #builder(Properties)}, from a map of consumer settings.
     *
     * @param <K> key type
     * @param <V> value type
     * @param consumerProperties the consumer's settings, copied now: later changes to them are not seen
     * @return a new builder
     * @throws NullPointerException if {@code consumerProperties} is {@code null}
     */
    public static <K, V> Builder<K, V> builder(Map<String, ?> consumerProperties) {
        Objects.requireNonNull(consumerProperties, "consumerProperties");
        return new Builder<>(new LinkedHashMap<>(consumerProperties));
    }

    /**
     * Creates the consumer, subscribes on a new polling thread and starts processing. Returns at once; records are
     * handled from the first assignment on.
     *
     * <p>If the polling thread cannot be started (an {@code OutOfMemoryError}: "unable to create native thread"), what
     * making or starting it threw comes out as it is, once the consumer, its deserializers and the processor's own
     * executor are closed; the processor is then closed.
     *
     * <p>A {@code close()} from this call's own thread (by a deserializer's or an interceptor's {@code configure})
     * returns at once; this call then closes what it made and throws an {@code IllegalStateException}, as a start after
     * a close does.
     *
     * @throws IllegalStateException if already started, or closed (before this call, or by a close from its own
     *                               thread), or if the executor given to the builder was shut down since (the processor
     *                               is then closed, and nothing was made)
     * @throws KafkaException        if the consumer cannot be created from the properties (the processor is then
     *                               closed)
     */
    public void start() {
        // Under the lifecycle lock, so that a close() racing this start waits until there is a consumer, an executor
        // and a polling thread to close: a close that ran between the state's change and their making would find none
        // and return, leaving them running.
        synchronized (lifecycle) {
            if (!state.compareAndSet(NEW, RUNNING_STATE)) {
                throw new IllegalStateException(state.get() == CLOSED ? "KafkaProcessor is closed"
                        : "KafkaProcessor is already started");
            }
            if (givenExecutor != null && givenExecutor.isShutdown()) {
                // Checked before anything is made: such an executor refuses every record, which would be polled and
                // never run while the processor looked healthy.
                state.set(CLOSED);
                throw new IllegalStateException("executor: " + givenExecutor.name() + " was shut down before start()"
                        + "; it would run no record");
            }
            try {
                Deserializer<K> keys = ErrorGuardingDeserializer.of(keyDeserializer, valueDeserializer, config, true);
                Deserializer<V> values;
                try {
                    values = ErrorGuardingDeserializer.of(valueDeserializer, keyDeserializer, config, false);
                } catch (Throwable e) {
                    closeAfter(e, keys); // as the consumer closes both when its construction fails
                    throw e;
                }
                try {
                    consumer = consumerMaker.make(config, keys, values);
                } catch (Throwable e) {
                    // The consumer closes the deserializers it was given only if its construction got as far as
                    // taking them in; a failure before that (an interceptor that cannot be configured, say) left
                    // open the ones made above, which a plain consumer would not have made yet. The guards close
                    // once, so the consumer's own close of them does not count twice.
                    closeAfter(e, keys);
                    closeAfter(e, values);
                    throw e;
                }
            } catch (Throwable e) {
                state.set(CLOSED);
                // As the consumer reports a failure of its construction, which includes making and configuring the
                // deserializers it is named: those are made here, so whatever their configure throws, an Error
                // included (a class it needs that is missing, say), comes out as a KafkaException with its cause, the
                // processor closed with the deserializers made. Let out bare, an IllegalStateException of its own
                // would read as "already started or closed".
                if (e instanceof KafkaException) {
                    throw (KafkaException) e;
                }
                throw new KafkaException("Failed to construct kafka consumer", e);
            }
            try {
                if (state.get() == CLOSED) {
                    // close() from this very thread, by a deserializer's or an interceptor's configure (see close()):
                    // it found nothing to close yet and left the rest to this start, which would otherwise make an
                    // executor and a polling thread for a closed processor.
                    throw new IllegalStateException("KafkaProcessor was closed while it started");
                }
                ContextExecutor ex = givenExecutor != null ? givenExecutor
                        : GatlingExecutor.builder().name("kafka-" + groupId).build();
                executor = ex;
                runner.executor(ex);
                Thread t = pollThreadFactory.newThread(this::pollLoop);
                t.setName("kafka-" + groupId + "-poll");
                pollThread = t;
                t.start();
            } catch (Throwable e) {
                // Closed meanwhile, or no polling thread (an OutOfMemoryError "unable to create native thread", say):
                // only the polling thread closes the consumer, so whatever fails here closes it, with its
                // deserializers and the processor's own executor, and leaves the processor closed, never started.
                pollThread = null;
                state.set(CLOSED);
                try {
                    consumer.close(CloseOptions.timeout(Duration.ZERO)); // never subscribed: no group to leave
                } catch (Throwable c) {
                    suppress(e, c);
                }
                endClose();
                throw e;
            }
        }
    }

    /**
     * Closes a deserializer made for a start that failed; what its close throws, an {@link Error} included, is added
     * to that failure. Let out, an Error skipped the close of the other deserializer and came out of start() in place
     * of the failure that stopped it; the consumer, too, closes each of its parts whatever the one before threw.
     */
    private static void closeAfter(Throwable failure, Deserializer<?> d) {
        try {
            d.close();
        } catch (Throwable e) {
            suppress(failure, e);
        }
    }

    /**
     * Adds {@code more} to {@code failure} as suppressed, unless it is that very throwable: the JVM throws one
     * preallocated {@code OutOfMemoryError} when it cannot make another, and {@code addSuppressed} of a throwable to
     * itself throws an IllegalArgumentException, which would come out in place of the failure and skip what follows.
     */
    private static void suppress(Throwable failure, Throwable more) {
        if (more != failure) {
            failure.addSuppressed(more);
        }
    }

    /**
     * A snapshot of the counters; cheap, callable from any thread at any time. What finished is read before what was
     * polled: the polling thread counts records as polled before it hands them out, so {@code completed()} never
     * exceeds {@code polled()}.
     *
     * @return a new snapshot
     */
    public KafkaStatistics statistics() {
        long completed = runner.completed.sum();
        long superseded = runner.superseded.sum();
        long failed = runner.failed.sum();
        long retried = runner.retried.sum();
        return new KafkaStatistics(polled, completed, superseded, failed, retried, pausedView, committed);
    }

    /** Moves the state to CLOSED; returns the state before. Waits for a start in progress (see {@link #start}). */
    private int markClosed() {
        synchronized (lifecycle) {
            return state.getAndSet(CLOSED);
        }
    }

    /**
     * Stops polling, gives the records already handed out up to {@code closeTimeout} to finish, commits the completed
     * prefix of every partition, closes the consumer (which leaves the group, unless {@code group.instance.id} makes it
     * a static member: the group then keeps its partitions for it until its session times out, after
     * {@code session.timeout.ms} under the classic protocol, the broker's {@code group.consumer.session.timeout.ms}
     * under the consumer protocol), and closes the executor if the processor made it (interrupting handlers still
     * running past the timeout). Waits for all that; no thread of the processor is left afterwards, unless a handler
     * ignores the interrupt: the wait for the executor's end then gives up after {@code closeTimeout} (at least a
     * second) with a warning, and that handler's thread runs on until it returns. An executor given to the builder is
     * neither interrupted nor waited for past the drain: a handler still running on it then returns after this call
     * did, its record not committed and whatever it throws dropped (the partition's next owner processes that record
     * again). Each step has its own bound, so a close can take several times {@code closeTimeout}: the drain, the
     * commit (each try within {@code closeTimeout}, or 5 s when it is zero; tried again after a wake-up or an
     * interrupt), the consumer's close, and the wait for the processor's own executor; before them, a rebalance under
     * way in the last poll ends with its own waits, and a poll that failed during the close looks up the group's
     * committed offsets for up to 5 s. Idempotent, and a call made while another is under way (started from outside or
     * from a handler) waits as that one does; a processor never started just becomes closed.
     *
     * <p>Called from a handler or failure handler of this processor (to stop on a fatal error, say), it cannot wait
     * for that handler, which is still running: it starts the close (polling stops, no new record is handed out) and
     * returns at once, without interrupting its caller. The rest happens on the polling thread: its drain waits for
     * the calling handler's record as for the others (it is committed if it completed), all within the one
     * {@code closeTimeout}; then come the commit, the consumer's close, and, when the processor made its own executor,
     * its shutdown and the wait for its end, from the polling thread (a handler still running past the timeout, the
     * calling one included, is interrupted then, as on any close). Shortly after the calling handler returns, no
     * thread of the processor is left. A handler of another processor, even on the same executor, is not this
     * processor's: its call waits as any other. The same holds for a call from the polling thread (a deserializer's
     * or an interceptor's). A call from {@link #start()}'s own thread (a deserializer's or an interceptor's
     * {@code configure}) returns at once, and that start closes what it made and fails.
     */
    @Override
    public void close() {
        int previous = markClosed();
        if (previous == NEW) {
            return;
        }
        if (Thread.holdsLock(lifecycle)) {
            // Called from start()'s own thread (a deserializer's or an interceptor's configure): nothing but what start
            // is making exists yet, and start, which reads the state before it makes the executor and the polling
            // thread, closes what it made and fails on its return here.
            return;
        }
        if (runner.inHandler() || Thread.currentThread() == pollThread) {
            if (previous == RUNNING_STATE) {
                closeFromInside();
            }
            // else closed before: whoever closed first (or the polling thread for a close from inside) ends it
            return;
        }
        closing = true;
        joinPollThread();
        endClose();
    }

    /**
     * A close from a thread it would have to wait for: a handler of this processor (its drain waits for the handler's
     * record, which cannot complete while the handler waits here; and the wait for the processor's own executor to
     * end came from one of that executor's workers, after a {@code shutdownNow} that interrupted the caller itself:
     * such a call took the full closeTimeout twice, then logged that a handler ignores interrupts) or the polling
     * thread itself. It leaves the close to the polling thread, which ends it once its drain and commit are done.
     */
    private void closeFromInside() {
        if (finish.compareAndSet(FINISH_NONE, FINISH_ASKED)) {
            closing = true; // after the hand-over: a polling thread that stops for it also finds it asked
            LockSupport.unpark(pollThread); // out of a pause after failed polls
            return;
        }
        // The polling thread had already ended (it failed): nothing is left to drain or commit, and nothing here may
        // wait for the executor (the caller may be one of its workers). A plain shutdown lets it end once the running
        // tasks return; what is queued is dropped as its partition was (every partition was let go at that end).
        closing = true;
        runner.closed = true;
        runner.cancelTimers();
        ContextExecutor ex = executor;
        if (givenExecutor == null && ex != null && executorClosed.compareAndSet(false, true)) {
            ex.shutdown();
        }
    }

    /** The end of a close, once the polling thread has ended: timers, then the processor's own executor. */
    private void endClose() {
        runner.closed = true; // hand-offs refused for capacity are not tried again from here on
        runner.cancelTimers(); // written after closed: see RecordRunner#schedule
        closeOwnExecutor();
    }

    /**
     * Stops at once without committing anything more and without waiting for handlers: what a killed process leaves
     * behind, minus the session timeout. For tests of recovery.
     */
    void halt() {
        halted = true;
        if (markClosed() == NEW) {
            return;
        }
        closing = true;
        joinPollThread();
        ContextExecutor ex = executor;
        if (givenExecutor == null && ex != null && executorClosed.compareAndSet(false, true)) {
            runner.stopping = true;
            ex.shutdownNow();
        }
    }

    private void joinPollThread() {
        Thread t = pollThread;
        if (t == null || t == Thread.currentThread()) {
            return;
        }
        LockSupport.unpark(t); // out of a pause after failed polls (closing is written before)
        boolean interrupted = false;
        while (t.isAlive()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void closeOwnExecutor() {
        ContextExecutor ex = executor;
        if (givenExecutor != null || ex == null) {
            return;
        }
        if (executorClosed.compareAndSet(false, true)) {
            // The records had their closeTimeout on the polling thread already: what is left is either dropped work
            // or retry timers (which a plain shutdown would still wait for), or handlers overrunning, to be
            // interrupted.
            runner.stopping = true; // before the interrupts: see RecordRunner#tryHandle
            ex.shutdownNow();
        }
        // A close() that lost the race to shut the executor down waits as the winner does: returning at once, it left
        // a handler running on the processor's thread after its caller had been told that none was left.
        boolean interrupted = false;
        long deadline = System.nanoTime() + Math.max(closeTimeout.toNanos(), TimeUnit.SECONDS.toNanos(1));
        while (true) {
            try {
                if (ex.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    break;
                }
                LOG.log(Level.WARNING, "Executor " + ex.name() + " did not terminate: a handler ignores interrupts");
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------------------------------------ polling thread

    private void pollLoop() {
        try {
            consumer.subscribe(topics, new Listener());
            nextCommitNanos = System.nanoTime() + commitIntervalNanos;
            while (!closing) {
                pollOnce();
                if (givenExecutor != null && givenExecutor.isShutdown() && !closing) {
                    givenExecutorShutDown();
                }
            }
            if (!halted) {
                List<PartitionState> all = new ArrayList<>(partitions.values());
                drain(all, System.nanoTime() + closeTimeout.toNanos());
                for (PartitionState ps : all) {
                    ps.revoked = true;
                }
                commitSync(all);
            }
        } catch (Throwable t) {
            LOG.log(Level.ERROR, "Polling thread failed; the processor stops", t);
        } finally {
            for (PartitionState ps : partitions.values()) {
                ps.revoked = true;
            }
            partitions.clear(); // the consumer's close calls the listener: nothing more to wait for or commit
            try {
                consumer.close(CloseOptions.timeout(halted ? Duration.ZERO : closeTimeout));
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "Closing the consumer failed", e);
            } catch (Error e) {
                // Kafka wraps most of what fails in its close in a KafkaException, but not all (an OutOfMemoryError on
                // its own path, say). Let out of this finally, it skipped what follows: the end of a close from a
                // handler (the processor's own executor never shut down) and the thread's end, with the error left to
                // the thread's default handler, past this log. The consumer is as closed as it will get.
                LOG.log(Level.ERROR, "Closing the consumer failed", e);
            }
            pausedView = Set.of();
            // A close from a handler (or from this thread) returned without waiting: it is ended here, on a thread
            // that is not the executor's, once the calling handler's record is done (or its time is up). A halt
            // stops the executor itself.
            if (finish.getAndSet(FINISH_POLL_ENDED) == FINISH_ASKED && !halted) {
                endClose();
            }
        }
    }

    /**
     * Polling thread: the executor given to the builder was shut down while the processor ran. It refuses every record
     * from now on, so polling on would only fill the partitions up to their pause and hold them there, the group
     * thinking them served. The processor stops instead, as on a close from a handler: the records the executor took
     * before its shutdown get their closeTimeout (the drain ends once the executor has terminated, since nothing else
     * can complete them), the completed prefix is committed (never a record that did not run), and the group is left,
     * so that the next owner of each partition reads the rest from that commit.
     */
    private void givenExecutorShutDown() {
        LOG.log(Level.WARNING, "The executor " + givenExecutor.name() + " was shut down while the processor ran; the"
                + " processor stops: records it did not run are not committed, and the group's next owner of their"
                + " partitions reads them again");
        if (markClosed() == RUNNING_STATE) {
            closeFromInside();
        } else {
            closing = true; // a close is under way already; it waits for this thread, or this thread ends it
        }
    }

    private void pollOnce() {
        ConsumerRecords<K, V> records;
        try {
            records = consumer.poll(Duration.ofNanos(waiting ? BUSY_POLL_NANOS
                    : Math.min(IDLE_POLL_NANOS, commitIntervalNanos)));
        } catch (RecordDeserializationException e) {
            deserializationFailed(e);
            afterPoll();
            return;
        } catch (WakeupException e) {
            return;
        } catch (InterruptException e) {
            Thread.interrupted(); // nobody should interrupt this thread; polling goes on until close()
            return;
        } catch (RuntimeException | Error e) {
            // An Error too (from an interceptor, say; a deserializer's is turned into a RecordDeserializationException
            // by ErrorGuardingDeserializer): it ended the polling thread, and the processor stopped with nobody told.
            if (closing) {
                // Polling ends here, but the close's commit follows the consumer's position when nothing is in
                // flight (see catchUpPosition): without going back, it passed the records of this poll, which no
                // handler saw. (A halt commits nothing.)
                if (!halted) {
                    rewindAfterFailedPoll();
                }
            } else {
                // The pause doubles while polls keep failing: an Error that comes back with the same records (an
                // interceptor's missing class, say) holds their partitions where they are, polled again and again
                // after the rewind below, and each time every partition's fetched data is dropped by the seeks.
                failedPolls++;
                long pause = Math.min(CONSUMER_ERROR_PAUSE_NANOS << Math.min(failedPolls - 1, 16),
                        MAX_CONSUMER_ERROR_PAUSE_NANOS);
                LOG.log(Level.WARNING, "Poll failed (" + failedPolls + " in a row); polling again in "
                        + TimeUnit.NANOSECONDS.toMillis(pause) + " ms", e);
                rewindAfterFailedPoll();
                // close() unparks this thread; closing is read again at each wake-up, since something on the way here
                // (the consumer's or a logger's lock) may have taken that unpark.
                long end = System.nanoTime() + pause;
                for (long left = pause; left > 0 && !closing; left = end - System.nanoTime()) {
                    LockSupport.parkNanos(this, left);
                }
                afterPoll();
            }
            return;
        }
        if (!records.isEmpty()) {
            failedPolls = 0; // not at an empty poll: after the rewind's seeks, the next fetch may not be back yet
        }
        dispatch(records);
        afterPoll();
    }

    /**
     * A poll that threw may have moved the consumer's positions past records it fetched and never returned: an Error
     * from an interceptor's {@code onConsume} comes after the fetch was collected, and Kafka catches only exceptions
     * there. The commit, which follows the position when nothing is in flight (see {@link #catchUpPosition}), would
     * then pass records no handler saw. So each assigned partition goes back to the first offset not yet taken: the
     * one after the last record handed out (or the position caught up to); for a partition whose position the
     * processor never learned (the failed poll was its first), the group's committed offset, or, with none, the
     * start of the log when {@code auto.offset.reset} is {@code earliest}. With no committed offset and another
     * policy it stays where the poll left it: that policy put it at the log's end a moment before.
     */
    private void rewindAfterFailedPoll() {
        Set<TopicPartition> unknown = new HashSet<>();
        for (PartitionState ps : partitions.values()) {
            if (ps.nextOffset < 0) {
                unknown.add(ps.tp);
                continue;
            }
            try {
                consumer.seek(ps.tp, ps.nextOffset);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "Could not go back to offset " + ps.nextOffset + " of " + ps.tp
                        + " after a failed poll", e);
            }
        }
        if (unknown.isEmpty()) {
            return;
        }
        try {
            // Bounded apart from closeTimeout (30 s by default): the polling thread commits, pauses and answers close()
            // only once this returns.
            Map<TopicPartition, OffsetAndMetadata> groupOffsets = consumer.committed(unknown,
                    closeTimeout.isZero() || closeTimeout.compareTo(COMMITTED_LOOKUP_TIMEOUT) > 0
                            ? COMMITTED_LOOKUP_TIMEOUT : closeTimeout);
            List<TopicPartition> none = new ArrayList<>();
            for (TopicPartition tp : unknown) {
                OffsetAndMetadata at = groupOffsets.get(tp);
                if (at != null) {
                    consumer.seek(tp, at);
                } else {
                    none.add(tp);
                }
            }
            if (!none.isEmpty() && "earliest".equalsIgnoreCase(
                    String.valueOf(config.get(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG)))) {
                consumer.seekToBeginning(none);
            }
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "Could not go back to the committed offsets of " + unknown + " after a failed poll",
                    e);
        }
    }

    /**
     * Hands each partition's records to its router as the consumer's own list: the polling thread does nothing per
     * record, so that it keeps up with the consumer's fetching and decoding and the dispatch runs on the workers.
     */
    private void dispatch(ConsumerRecords<K, V> records) {
        if (records.isEmpty()) {
            return;
        }
        for (TopicPartition tp : records.partitions()) {
            PartitionState ps = partitions.get(tp);
            if (ps == null) {
                continue; // not ours (any more): its next owner reads it from the committed offset
            }
            List<ConsumerRecord<K, V>> list = records.records(tp);
            int size = list.size();
            if (size == 0) {
                continue;
            }
            long last = list.get(size - 1).offset();
            long newlyPolled = size;
            if (ps.deserialization != null && last >= ps.deserialization.offset) {
                // Read again, and this time it could be deserialized; it counted as polled when it first failed.
                ps.deserialization = null;
                newlyPolled--;
            }
            ps.dispatched += size;
            ps.sentUpTo = last + 1;
            ps.nextOffset = last + 1;
            polled += newlyPolled; // before the router may finish any of them (see statistics())
            @SuppressWarnings("unchecked")
            Router<K, V> router = (Router<K, V>) ps.router;
            router.offer(list);
            schedule(router);
        }
    }

    private void schedule(Router<?, ?> router) {
        if (!router.schedule() && !rejectionLogged) {
            rejectionLogged = true;
            LOG.log(Level.WARNING, "The executor refused records; they are offered again after each poll");
        }
    }

    private void afterPoll() {
        long now = System.nanoTime();
        if (!stillRunning.isEmpty()) {
            stillRunning.values().removeIf(PartitionState::stoppedAfterRelease);
        }
        boolean pauseChanged = false;
        boolean anyWaiting = false;
        for (PartitionState ps : partitions.values()) {
            PartitionState.DeserializationFailure df = ps.deserialization;
            if (df != null && !df.repolling) {
                checkDeserialization(ps, df, now);
            }
            Router<?, ?> router = ps.router;
            router.watch(now);
            if (ps.routedUpTo != ps.sentUpTo) {
                schedule(router); // only does something after the executor refused a run
                router.wantProgress(); // so that the commit and the statistics follow a long run
            }
            anyWaiting |= router.inCall(); // short polls, so that a long call is noticed soon
            ps.advance();
            long pending = ps.pending();
            ps.backPressure = pending >= (ps.backPressure ? resumeBelow : maxPending);
            boolean pause = ps.backPressure || (ps.deserialization != null && !ps.deserialization.repolling);
            if (pause != ps.paused) {
                ps.paused = pause;
                if (pause) {
                    consumer.pause(List.of(ps.tp));
                } else {
                    consumer.resume(List.of(ps.tp));
                }
                pauseChanged = true;
            }
            anyWaiting |= pause;
        }
        waiting = anyWaiting;
        if (pauseChanged) {
            publishPaused();
        }
        if (now - nextCommitNanos >= 0) {
            nextCommitNanos = now + commitIntervalNanos;
            commitAsync();
        }
        sweepKeys();
    }

    /**
     * Forgets keys that nobody holds and that no record named since the previous sweep, so memory follows live keys,
     * not every key ever seen. A slot is retired (it refuses claims from then on) before it leaves its map, and
     * removed only as that very slot: a router that meets a retired slot replaces it, and must not lose the new one.
     */
    private void sweepKeys() {
        long size = 0;
        for (ConcurrentHashMap<Object, Slot<K, V>> m : keys.values()) {
            size += m.mappingCount();
        }
        if (size <= sweepAt) {
            return;
        }
        size = 0;
        for (ConcurrentHashMap<Object, Slot<K, V>> m : keys.values()) {
            for (Map.Entry<Object, Slot<K, V>> e : m.entrySet()) {
                Slot<K, V> slot = e.getValue();
                if (!slot.used && slot.retire()) {
                    m.remove(e.getKey(), slot);
                } else {
                    slot.used = false;
                }
            }
            size += m.mappingCount();
        }
        sweepAt = Math.max(SWEEP_MIN, 2 * size);
    }

    private void publishPaused() {
        Set<TopicPartition> p = new HashSet<>();
        for (PartitionState ps : partitions.values()) {
            if (ps.paused) {
                p.add(ps.tp);
            }
        }
        pausedView = Set.copyOf(p);
    }

    // ----------------------------------------------------------------------------------------------- deserialization

    private void deserializationFailed(RecordDeserializationException e) {
        TopicPartition tp = e.topicPartition();
        PartitionState ps = partitions.get(tp);
        if (ps == null) {
            return;
        }
        PartitionState.DeserializationFailure df = ps.deserialization;
        if (df == null || df.offset != e.offset()) {
            df = new PartitionState.DeserializationFailure(e.offset());
            ps.deserialization = df;
            // Taken in, as the failure handler's record: completed() counts it when acknowledged, and a read that
            // succeeds later takes it back from that poll's count (see dispatch).
            polled++;
        } else {
            runner.retried.increment();
        }
        df.attempts++;
        df.repolling = false;
        df.retryAtNanos = 0;
        if (ErrorGuardingDeserializer.outOfHeap(e) && df.heapFailures++ < runner.retries()) {
            // Most likely the heap's state, not the record's: read again after a backoff, and not handed to the
            // failure handler as unreadable (a dead-letter topic would get a record that was fine), nor counted as
            // failed. Up to the configured retries: a record that runs the deserializer out of heap each time (a
            // length field read as a huge buffer size, say) is then the record's failure, as below; left to
            // retry for good, it would hold its partition with nothing in failed() and no failure handler called.
            df.outcome = FAILED;
            LOG.log(Level.WARNING, "The deserializer ran out of heap at " + tp + "@" + e.offset()
                    + "; its partition waits and reads it again after a backoff", e);
            return;
        }
        if (!df.counted) {
            df.counted = true;
            runner.failed.increment();
        }
        FailureHandler<K, V> onFailure = runner.failureHandler();
        if (onFailure == null) {
            df.outcome = FAILED;
            LOG.log(Level.WARNING, "Record " + tp + "@" + e.offset() + " cannot be deserialized and no failure handler"
                    + " is set; its partition waits and reads it again after a backoff", e);
            return;
        }
        df.error = e;
        df.outcome = WAITING;
        startFailureHandlerWhenDue(ps, df);
    }

    /**
     * The failure handler of a record that cannot be deserialized runs in the record's order, like a handler. Such a
     * record has no key: under {@code KEY} and {@code KEY_LATEST} it waits for the earlier records of its partition
     * that have no key (they share one slot), under {@code PARTITION} for every earlier record of its partition, and
     * under {@code UNORDERED} for nothing. The consumer stops at it, so nothing later is dispatched meanwhile. Looked
     * at again after each poll until due. Polling thread.
     */
    private void startFailureHandlerWhenDue(PartitionState ps, PartitionState.DeserializationFailure df) {
        if (!failureHandlerDue(ps)) {
            return;
        }
        FailureHandler<K, V> onFailure = runner.failureHandler();
        RecordDeserializationException e = df.error;
        TopicPartition tp = ps.tp;
        df.outcome = RUNNING;
        ConsumerRecord<K, V> raw = new ConsumerRecord<>(tp.topic(), tp.partition(), e.offset(), e.timestamp(),
                e.timestampType(), ConsumerRecord.NULL_SIZE, ConsumerRecord.NULL_SIZE, null, null, e.headers(),
                Optional.empty());
        runner.handOff(executor, () -> {
            if (ps.revoked) {
                // Dropped, as the partition's queued records are (RecordRunner#tryHandle): its revocation or the close
                // gave up waiting for it, and its next owner calls the handler for the record. Run here as well, that
                // was a second call after the revocation had completed, or one after close() had returned.
                df.outcome = FAILED;
                ps.failureHandlerEnded();
                return;
            }
            RecordRunner<?, ?> outer = runner.enterHandler();
            try {
                onFailure.onFailure(raw, e);
                df.outcome = ACKNOWLEDGED;
            } catch (Throwable t) {
                LOG.log(Level.WARNING, "The failure handler threw for " + tp + "@" + e.offset()
                        + ", which cannot be deserialized; it is read again after a backoff", t);
                df.outcome = FAILED;
            } finally {
                runner.leaveHandler(outer);
            }
            ps.failureHandlerEnded(); // after the outcome: a draining polling thread wakes to read it
        }, () -> df.outcome = FAILED); // given up: the executor is shutting down
    }

    private boolean failureHandlerDue(PartitionState ps) {
        switch (ordering) {
            case UNORDERED:
                return true;
            case PARTITION:
                ps.advance();
                return ps.quiet();
            default:
                // Every earlier record routed (so each one without a key has claimed the partition's null-key slot),
                // and that slot holds no claim: they are all done. A keyed record that stays failed holds nothing here
                // (but one whose key could not be looked up is in that slot: see Router#slotOfGuarded).
                return ps.routedUpTo == ps.sentUpTo && ps.router.noKeylessPending();
        }
    }

    /**
     * Once every record handed out is complete, lets the commit go up to the consumer's position rather than one past
     * the last record: the offsets between are records the consumer never returns (transaction markers, aborted
     * records under {@code read_committed}), and a commit that stopped before them left the group's lag above zero
     * for good on a transactional topic. The consumer moves its position past such batches without returning a
     * record, so the position is read at each commit tick while the partition is complete, not only when records
     * came, and also for the commits of a revocation and of {@code close()} (which may come before the next tick),
     * and for an assignment that has returned no record at all (the consumer may have moved past a batch of markers
     * before the first record, or there is none). Polling thread; a valid position is read without a request, and one
     * that is not (a reset or a validation pending) is left for the next poll: the commit then stays one past the last
     * record, as it was.
     */
    private void catchUpPosition(PartitionState ps) {
        if (ps.deserialization != null || ps.routedUpTo != ps.sentUpTo || ps.pending() != 0) {
            return;
        }
        long position;
        try {
            position = consumer.position(ps.tp, Duration.ZERO);
        } catch (InterruptException e) {
            Thread.interrupted(); // as after a poll: nobody should interrupt this thread
            return;
        } catch (RuntimeException notKnown) {
            return;
        }
        if (position > ps.nextOffset) {
            ps.nextOffset = position;
        }
    }

    private void checkDeserialization(PartitionState ps, PartitionState.DeserializationFailure df, long now) {
        int outcome = df.outcome;
        if (outcome == WAITING) {
            startFailureHandlerWhenDue(ps, df);
        } else if (outcome == ACKNOWLEDGED) {
            consumer.seek(ps.tp, df.offset + 1);
            acknowledged(ps, df);
        } else if (outcome == FAILED) {
            if (df.retryAtNanos == 0) {
                df.retryAtNanos = (now + runner.backoff(df.attempts)) | 1;
            } else if (now - df.retryAtNanos >= 0) {
                consumer.seek(ps.tp, df.offset);
                df.repolling = true; // resumed below: the next poll deserializes it again
            }
        }
    }

    /** The failure handler of a record that cannot be deserialized returned: the commit may pass the record. */
    private void acknowledged(PartitionState ps, PartitionState.DeserializationFailure df) {
        ps.nextOffset = Math.max(ps.nextOffset, df.offset + 1);
        ps.deserialization = null;
        runner.completed.increment();
    }

    // ------------------------------------------------------------------------------------------------------- commits

    private void commitAsync() {
        Map<TopicPartition, OffsetAndMetadata> offsets = null;
        for (PartitionState ps : partitions.values()) {
            catchUpPosition(ps);
            long offset = ps.advance();
            if (offset >= 0 && offset > ps.commitRequested) {
                if (offsets == null) {
                    offsets = new HashMap<>();
                }
                offsets.put(ps.tp, new OffsetAndMetadata(offset));
                ps.commitRequested = offset;
            }
        }
        if (offsets == null) {
            return;
        }
        try {
            consumer.commitAsync(offsets, (done, error) -> {
                if (error == null) {
                    done.forEach((tp, o) -> committed.put(tp, o.offset()));
                } else {
                    LOG.log(Level.DEBUG, "Commit failed; it is sent again", error);
                    done.forEach((tp, o) -> {
                        PartitionState ps = partitions.get(tp);
                        if (ps != null && ps.commitRequested == o.offset()) {
                            ps.commitRequested = -1;
                        }
                    });
                }
            });
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "Commit failed; it is sent again", e);
            for (TopicPartition tp : offsets.keySet()) {
                PartitionState ps = partitions.get(tp);
                if (ps != null) {
                    ps.commitRequested = -1;
                }
            }
        }
    }

    private void commitSync(Collection<PartitionState> states) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (PartitionState ps : states) {
            catchUpPosition(ps);
            long offset = ps.advance();
            Long done = committed.get(ps.tp);
            if (offset >= 0 && (done == null || done != offset)) {
                offsets.put(ps.tp, new OffsetAndMetadata(offset));
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                consumer.commitSync(offsets, closeTimeout.isZero() ? Duration.ofSeconds(5) : closeTimeout);
                offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
                return;
            } catch (WakeupException | InterruptException e) {
                Thread.interrupted(); // a stray wake-up or interrupt must not cost the commit: once more
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "Commit of " + offsets + " failed; the next owner re-processes from the"
                        + " previous commit", e);
                return;
            }
        }
    }

    /** Waits until every record handed out for these partitions is complete, or until the deadline. */
    private void drain(List<PartitionState> states, long deadline) {
        drain(states, deadline, PartitionState::settled);
    }

    /**
     * Waits until {@code done} holds for each of these partitions, or until the deadline:
     * {@link PartitionState#settled} for a revocation or close, {@link PartitionState#stoppedAfterRelease} for a
     * partition let go and assigned back.
     */
    private void drain(List<PartitionState> states, long deadline, Predicate<PartitionState> done) {
        for (PartitionState ps : states) {
            ps.draining = true;
        }
        boolean interrupted = false;
        try {
            while (true) {
                boolean complete = true;
                long now = System.nanoTime();
                for (PartitionState ps : states) {
                    ps.router.watch(now); // a long call must not hold up the partition's other records here either
                    if (ps.routedUpTo != ps.sentUpTo && !ps.revoked) {
                        // A run the executor refused is offered again after each poll; no poll comes while we wait
                        // here, so it is offered again at each look (else the records would wait out the deadline
                        // beside an executor with room, and be dropped).
                        schedule(ps.router);
                    }
                    ps.advance();
                    complete &= done.test(ps);
                }
                long left = deadline - System.nanoTime();
                // An executor that has terminated runs nothing more: what is still pending here never completes (an
                // executor given to the builder and shut down by its owner), and waiting on was only closeTimeout lost.
                if (complete || left <= 0 || executor.isTerminated()) {
                    // A failure handler that returned in time lets the commit that follows pass its record: left for
                    // the next poll, which never comes for these partitions, the next owner would hand it over again.
                    for (PartitionState ps : states) {
                        PartitionState.DeserializationFailure df = ps.deserialization;
                        if (df != null && df.outcome == ACKNOWLEDGED) {
                            acknowledged(ps, df);
                        }
                    }
                    return;
                }
                // A completion or routing progress of a draining partition unparks this thread; the bound guards the
                // deadline, and the watch of calls running on the spot.
                LockSupport.parkNanos(this, Math.min(left, TimeUnit.MILLISECONDS.toNanos(5)));
                interrupted |= Thread.interrupted();
            }
        } finally {
            for (PartitionState ps : states) {
                ps.draining = false;
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Runs on the polling thread, inside {@code poll}. */
    private final class Listener implements ConsumerRebalanceListener {

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            List<PartitionState> states = take(revoked);
            if (states.isEmpty()) {
                return;
            }
            drain(states, System.nanoTime() + closeTimeout.toNanos());
            for (PartitionState ps : states) {
                ps.revoked = true; // what is still queued is skipped; the new owner reads it again
            }
            commitSync(states);
            for (PartitionState ps : states) {
                if (!ps.stoppedAfterRelease()) {
                    // Let go past the timeout with a record still running: the new owner may be us (an eager
                    // rebalance revokes every partition and hands most of them back), and then, as after a loss, the
                    // new router must not start that partition's records beside it.
                    stillRunning.put(ps.tp, ps);
                }
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            for (PartitionState ps : take(lost)) {
                ps.revoked = true; // another member may own it already: no commit, nothing more runs here
                // Not waited for here: the partition is most likely someone else's by now, and rejoining waits for
                // us. But one that comes back to us must not run a record beside one of its old assignment.
                stillRunning.put(ps.tp, ps);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            Thread me = Thread.currentThread();
            List<PartitionState> back = null;
            for (TopicPartition tp : assigned) {
                PartitionState old = stillRunning.remove(tp);
                if (old != null && !old.stoppedAfterRelease()) {
                    (back == null ? back = new ArrayList<>() : back).add(old);
                }
            }
            if (back != null) {
                // It replays from its last commit, so the record that was running when it was let go comes first
                // again: under PARTITION order, or for a null key, nothing else keeps the two runs apart. Its queued
                // records are dropped as they come up, so this waits for the records running, as a revocation gives
                // them closeTimeout.
                drain(back, System.nanoTime() + closeTimeout.toNanos(), PartitionState::stoppedAfterRelease);
            }
            for (TopicPartition tp : assigned) {
                if (!partitions.containsKey(tp)) {
                    PartitionState ps = new PartitionState(tp, me, Math.max(maxPending, COMPACT_MIN));
                    ps.router = new Router<>(ps, runner, executor, ordering,
                            keys.computeIfAbsent(tp.topic(), t -> new ConcurrentHashMap<>()));
                    partitions.put(tp, ps);
                }
            }
        }

        private List<PartitionState> take(Collection<TopicPartition> tps) {
            List<PartitionState> states = new ArrayList<>();
            boolean paused = false;
            for (TopicPartition tp : tps) {
                PartitionState ps = partitions.remove(tp);
                if (ps != null) {
                    states.add(ps);
                    paused |= ps.paused;
                }
            }
            if (paused) {
                publishPaused();
            }
            return states;
        }
    }

    // ------------------------------------------------------------------------------------------------------- builder

    /**
     * Configures a {@link KafkaProcessor}. Setters throw {@link NullPointerException} for a {@code null} argument;
     * every other mistake is reported by {@link #build()}.
     *
     * @param <K> key type
     * @param <V> value type
     */
    public static final class Builder<K, V> {

        private final Map<String, Object> config;
        private final Set<String> topics = new LinkedHashSet<>();
        private Ordering ordering = Ordering.KEY;
        private RecordHandler<K, V> handler;
        private ContextExecutor executor;
        private int maxPendingPerPartition = 10_000;
        private Duration commitInterval = Duration.ofSeconds(1);
        private int retries = 3;
        private Duration retryBackoff = Duration.ofMillis(100);
        private FailureHandler<K, V> onFailure;
        private Duration closeTimeout = Duration.ofSeconds(30);
        private Deserializer<K> keyDeserializer;
        private Deserializer<V> valueDeserializer;
        private ThreadFactory pollThreadFactory = Thread::new;
        private ConsumerMaker<K, V> consumerMaker = KafkaConsumer::new;

        private Builder(Map<String, Object> config) {
            this.config = config;
        }

        /** Makes the polling thread, which the processor names; for tests (a thread whose start fails, say). */
        Builder<K, V> pollThreadFactory(ThreadFactory pollThreadFactory) {
            this.pollThreadFactory = Objects.requireNonNull(pollThreadFactory, "pollThreadFactory");
            return this;
        }

        /** Makes the consumer; for tests (a consumer whose close throws, say). */
        Builder<K, V> consumerMaker(ConsumerMaker<K, V> consumerMaker) {
            this.consumerMaker = Objects.requireNonNull(consumerMaker, "consumerMaker");
            return this;
        }

        /**
         * Topics to subscribe to (added to those given before). Each must be a legal Kafka topic name (ASCII letters,
         * digits, '.', '_' and '-', 1 to 249 characters, neither "." nor ".."), or {@link #build()} refuses it.
         *
         * @param topics the topics' names
         * @return this builder
         * @throws NullPointerException if {@code topics} or one of them is {@code null} (none is added then)
         */
        public Builder<K, V> topics(String... topics) {
            Objects.requireNonNull(topics, "topics");
            return topics(Arrays.asList(topics)); // not List.of, whose own NullPointerException names nothing
        }

        /**
         * As {@link #topics(String...)}.
         *
         * @param topics the topics' names
         * @return this builder
         * @throws NullPointerException if {@code topics} or one of them is {@code null} (none is added then)
         */
        public Builder<K, V> topics(Collection<String> topics) {
            Objects.requireNonNull(topics, "topics");
            for (String t : topics) {
                Objects.requireNonNull(t, "topic"); // all checked before any is added: a refused call adds none
            }
            this.topics.addAll(topics);
            return this;
        }

        /**
         * Which records may run at once; {@link Ordering#KEY} by default.
         *
         * @param ordering the ordering
         * @return this builder
         * @throws NullPointerException if {@code ordering} is {@code null}
         */
        public Builder<K, V> ordering(Ordering ordering) {
            this.ordering = Objects.requireNonNull(ordering, "ordering");
            return this;
        }

        /**
         * What to do with each record. Required.
         *
         * @param handler processes each record
         * @return this builder
         * @throws NullPointerException if {@code handler} is {@code null}
         */
        public Builder<K, V> handler(RecordHandler<K, V> handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /**
         * The executor that runs handlers. It is shared, not owned: {@link KafkaProcessor#close()} leaves it open.
         * By default the processor makes a {@link GatlingExecutor} with default settings and closes it.
         *
         * <p>It must stay open while the processor runs: {@link #build()} refuses one already shut down
         * ({@link IllegalArgumentException}), and {@link KafkaProcessor#start()} one shut down since
         * ({@link IllegalStateException}, before anything is made). Shut down while the processor runs, it refuses
         * every record from then on: the processor logs a warning and stops by itself, as on a {@code close()} from a
         * handler (so close the processor first, then the executor). The records the executor took before its shutdown
         * get {@code closeTimeout} to finish, the commit never passes a record that did not run, and the group is left,
         * so that the next owner of the partitions reads the rest again. A record that fails meanwhile cannot be
         * retried: it holds back its key (its partition under {@link Ordering#PARTITION}) as any failed record does
         * (under {@link Ordering#UNORDERED} the records after it run, and the commit stays behind it). A later
         * {@code close()} returns once that stop is done.
         *
         * @param executor the executor that runs handlers
         * @return this builder
         * @throws NullPointerException if {@code executor} is {@code null}
         */
        public Builder<K, V> executor(ContextExecutor executor) {
            this.executor = Objects.requireNonNull(executor, "executor");
            return this;
        }

        /**
         * Records polled and not completed at which a partition is paused; 10,000 by default; must be positive.
         *
         * @param maxPendingPerPartition the pending records at which a partition is paused
         * @return this builder
         */
        public Builder<K, V> maxPendingPerPartition(int maxPendingPerPartition) {
            this.maxPendingPerPartition = maxPendingPerPartition;
            return this;
        }

        /**
         * How often completed offsets are committed while running; 1 s by default; must be positive.
         *
         * @param commitInterval the time between two commits
         * @return this builder
         * @throws NullPointerException if {@code commitInterval} is {@code null}
         */
        public Builder<K, V> commitInterval(Duration commitInterval) {
            this.commitInterval = Objects.requireNonNull(commitInterval, "commitInterval");
            return this;
        }

        /**
         * Tries after the first failure before the failure handler is called; 3 by default; 0 or more.
         *
         * @param retries tries after the first failure
         * @return this builder
         */
        public Builder<K, V> retries(int retries) {
            this.retries = retries;
            return this;
        }

        /**
         * Wait before the first retry, doubling after each failed try up to 10 s (a wait longer than 10 s is kept as it
         * is: the cap never shortens what was asked for); 100 ms by default; positive.
         *
         * @param retryBackoff the wait before the first retry
         * @return this builder
         * @throws NullPointerException if {@code retryBackoff} is {@code null}
         */
        public Builder<K, V> retryBackoff(Duration retryBackoff) {
            this.retryBackoff = Objects.requireNonNull(retryBackoff, "retryBackoff");
            return this;
        }

        /**
         * Receives records that failed for good (see {@link FailureHandler}); none by default.
         *
         * @param onFailure receives records that failed for good
         * @return this builder
         * @throws NullPointerException if {@code onFailure} is {@code null}
         */
        public Builder<K, V> onFailure(FailureHandler<K, V> onFailure) {
            this.onFailure = Objects.requireNonNull(onFailure, "onFailure");
            return this;
        }

        /**
         * How long records already handed out may take to finish when their partition is revoked or the processor
         * closes; 30 s by default; zero means not at all (the records get no time, but a commit still gets up to 5 s a
         * try, and the wait for the processor's own executor at least a second; the consumer's close gets none, so a
         * close may not leave the group, which then waits for the session to time out); must not be negative. The waits
         * of one rebalance happen inside one {@code poll}: the revocation's, its commit's (bounded by the same
         * timeout), and, for a partition let go past the timeout and assigned back, one more for its old records. Keep
         * it well under a third of {@code max.poll.interval.ms} (300 s by default), or a rebalance makes the member
         * leave the group.
         *
         * @param closeTimeout the time records handed out get to finish
         * @return this builder
         * @throws NullPointerException if {@code closeTimeout} is {@code null}
         */
        public Builder<K, V> closeTimeout(Duration closeTimeout) {
            this.closeTimeout = Objects.requireNonNull(closeTimeout, "closeTimeout");
            return this;
        }

        /**
         * A key deserializer instance, instead of the {@code key.deserializer} property. Used as it is: as a
         * {@link KafkaConsumer} given an instance, the processor does not {@code configure} it; it closes it when its
         * consumer closes, or when a {@link KafkaProcessor#start()} fails once it has made the key deserializer. A
         * processor closed before a successful start leaves it open. An instance serves one processor.
         *
         * @param keyDeserializer the key deserializer
         * @return this builder
         * @throws NullPointerException if {@code keyDeserializer} is {@code null}
         */
        public Builder<K, V> keyDeserializer(Deserializer<K> keyDeserializer) {
            this.keyDeserializer = Objects.requireNonNull(keyDeserializer, "keyDeserializer");
            return this;
        }

        /**
         * A value deserializer instance, instead of the {@code value.deserializer} property. Used as it is: as a
         * {@link KafkaConsumer} given an instance, the processor does not {@code configure} it; it closes it when its
         * consumer closes, or when a {@link KafkaProcessor#start()} fails once it has made the key deserializer. A
         * processor closed before a successful start leaves it open. An instance serves one processor.
         *
         * @param valueDeserializer the value deserializer
         * @return this builder
         * @throws NullPointerException if {@code valueDeserializer} is {@code null}
         */
        public Builder<K, V> valueDeserializer(Deserializer<V> valueDeserializer) {
            this.valueDeserializer = Objects.requireNonNull(valueDeserializer, "valueDeserializer");
            return this;
        }

        /**
         * Checks the settings and makes the processor (which does nothing until {@link KafkaProcessor#start()}).
         *
         * @throws IllegalArgumentException naming what is wrong: no {@code bootstrap.servers}, no {@code group.id},
         *                                  no key or value deserializer, {@code enable.auto.commit=true}, no topics
         *                                  (or one whose name Kafka refuses), no handler, an executor already shut
         *                                  down, a limit or interval not positive, negative retries or close timeout
         * @return the processor, not started
         */
        public KafkaProcessor<K, V> build() {
            requireSetting(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "the brokers to connect to");
            requireSetting(ConsumerConfig.GROUP_ID_CONFIG, "the processor commits offsets for a consumer group");
            if (keyDeserializer == null) {
                requireSetting(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "or call keyDeserializer(...)");
            }
            if (valueDeserializer == null) {
                requireSetting(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "or call valueDeserializer(...)");
            }
            Object autoCommit = config.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
            if (autoCommit != null && String.valueOf(autoCommit).trim().equalsIgnoreCase("true")) {
                throw new IllegalArgumentException(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG + "=true: the processor"
                        + " commits only offsets behind completed records; leave it unset or set it to false");
            }
            if (topics.isEmpty()) {
                throw new IllegalArgumentException("topics: at least one topic is required");
            }
            for (String t : topics) {
                String wrong = illegalTopicName(t);
                if (wrong != null) {
                    throw new IllegalArgumentException("topics: '" + t + "' is not a legal topic name (" + wrong
                            + ")");
                }
            }
            if (handler == null) {
                throw new IllegalArgumentException("handler: a RecordHandler is required");
            }
            if (executor != null && executor.isShutdown()) {
                throw new IllegalArgumentException("executor: " + executor.name() + " is shut down; it would run no"
                        + " record");
            }
            if (maxPendingPerPartition <= 0) {
                throw new IllegalArgumentException("maxPendingPerPartition must be positive: "
                        + maxPendingPerPartition);
            }
            if (commitInterval.isNegative() || commitInterval.isZero()) {
                throw new IllegalArgumentException("commitInterval must be positive: " + commitInterval);
            }
            if (retries < 0) {
                throw new IllegalArgumentException("retries must not be negative: " + retries);
            }
            if (retryBackoff.isNegative() || retryBackoff.isZero()) {
                throw new IllegalArgumentException("retryBackoff must be positive: " + retryBackoff);
            }
            if (closeTimeout.isNegative()) {
                throw new IllegalArgumentException("closeTimeout must not be negative: " + closeTimeout);
            }
            Map<String, Object> c = new LinkedHashMap<>(config);
            c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            return new KafkaProcessor<>(this, c);
        }

        /** The longest topic name Kafka accepts (its file names take the partition number after it). */
        private static final int MAX_TOPIC_NAME_LENGTH = 249;

        /**
         * Why Kafka refuses {@code t} as a topic name, or null if it is legal: ASCII letters, digits, '.', '_' and '-',
         * 1 to 249 characters, neither "." nor "..". Such a name passed to {@code subscribe} fails every poll, which
         * the processor logs and tries again for good; checked here, the mistake is reported by the call that made it.
         */
        static String illegalTopicName(String t) {
            if (t.isEmpty()) {
                return "empty";
            }
            if (t.equals(".") || t.equals("..")) {
                return "\".\" and \"..\" are reserved";
            }
            if (t.length() > MAX_TOPIC_NAME_LENGTH) {
                return t.length() + " characters, more than " + MAX_TOPIC_NAME_LENGTH;
            }
            for (int i = 0; i < t.length(); i++) {
                char c = t.charAt(i);
                boolean legal = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || c == '.' || c == '_' || c == '-';
                if (!legal) {
                    return String.format("character U+%04X at index %d; only ASCII letters, digits, '.', '_' and '-'"
                            + " are allowed", (int) c, i);
                }
            }
            return null;
        }

        private void requireSetting(String name, String why) {
            Object v = config.get(name);
            // A list value (the consumer accepts one for bootstrap.servers) counts as missing when it names nothing.
            boolean empty = v instanceof java.util.Collection
                    ? ((java.util.Collection<?>) v).stream().allMatch(e -> e == null || String.valueOf(e).isBlank())
                    : v == null || String.valueOf(v).isBlank();
            if (empty) {
                throw new IllegalArgumentException(name + " is required in the consumer properties (" + why + ")");
            }
        }
    }
}
