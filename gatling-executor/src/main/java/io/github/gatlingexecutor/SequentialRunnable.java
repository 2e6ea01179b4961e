package io.github.gatlingexecutor;

/**
 * A task that runs in order with every other {@code SequentialRunnable} of an equal {@linkplain #context() context}.
 *
 * <p>Given to {@link ContextExecutor#execute(Runnable)} (or {@code submit}, {@code invoke*}, {@code schedule*}), it
 * behaves exactly as if it had been given to {@code executor.sequential(task.context())}. A task that implements both
 * this interface and {@link CoalescingRunnable} is treated as sequential.
 */
public interface SequentialRunnable extends Runnable {
    /**
     * The context whose order this task belongs to, compared with {@code equals}/{@code hashCode}. It is read once,
     * on the submitting thread, when the task is submitted; it must not be {@code null}.
     *
     * @return this task's context, never {@code null}
     */
    Object context();
}
