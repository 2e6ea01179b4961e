/**
 * Per-context ordered, coalescing and unordered execution on one small elastic pool of threads.
 *
 * <p>Start from {@link io.github.gatlingexecutor.GatlingExecutor#builder()}. {@link
 * io.github.gatlingexecutor.ContextExecutor} states what each kind of task guarantees: tasks submitted through
 * {@code sequential(context)} (or as a {@link io.github.gatlingexecutor.SequentialRunnable}) run one at a time in
 * submission order per context; through {@code coalescing(context)} (or as a {@link
 * io.github.gatlingexecutor.CoalescingRunnable}) only the latest waiting task of a context runs; any other
 * {@code Runnable} runs unordered. {@link io.github.gatlingexecutor.ExecutorStatistics} and {@link
 * io.github.gatlingexecutor.ContextStatistics} are snapshots of the counters.
 */
package io.github.gatlingexecutor;

/*
 * Conventions of the package-private engine (not part of the API).
 *
 * Memory access. A field that other threads read or write is accessed through a VarHandle named after it in upper
 * case (STATE for state), or is declared volatile. A method that reads or writes such a field for another class is
 * named for its access mode:
 *   - no suffix:                 a volatile access (parkState(), parkState(int)), or an owner-only plain one;
 *   - ...Opaque:                 opaque: untorn, eventually visible, no ordering (counters and hints read by
 *                                statistics and the checker: startedCountOpaque(), isBusyOpaque());
 *   - ...Acquire / ...Release:   acquire load / release store (idleLaneAcquire(i): the entry's lane fully built);
 *   - cas...:                    compareAndSet (casParkState).
 * Two kinds of shared state have no accessor of their own: plain fields handed from one thread to another by a
 * volatile or CAS access made after them (SequentialLane#producerChunk, Worker#currentLane; the field's comment names
 * that access), and the counters of Admission, kept in atomic arrays for their padding. A read whose mode differs
 * between implementations of one method (Lane#executedCount) says so on the method.
 * Every access weaker than volatile carries a comment saying why the weaker mode is enough; a volatile access chosen
 * for its StoreLoad order says which store and which load it orders (Worker#beginTake; the idle hand-shake in
 * WorkerPool).
 *
 * Where things are. The lane state machines: SequentialLane, CoalescingLane (Lane is their common contract). The
 * worker loop: Worker. The pool's decisions: PoolPolicy; its mechanism (slots, starts, parking): WorkerPool. The
 * observer of stuck and blocked workers: Checker. Delayed tasks: TaskTimer. The one waiting strategy: Waiting. How
 * statistics are read while tasks flow: Snapshots.
 * docs/architecture.md follows a task from execute to run through these.
 */
