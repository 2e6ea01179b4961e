package io.github.gatlingexecutor;

/**
 * A task for which only the latest submission of its {@linkplain #context() context} matters.
 *
 * <p>Given to {@link ContextExecutor#execute(Runnable)} (or {@code submit}, {@code invoke*}, {@code schedule*}), it
 * behaves exactly as if it had been given to {@code executor.coalescing(task.context())}: if an earlier task of the
 * same context has not started yet, this one replaces it.
 */
public interface CoalescingRunnable extends Runnable {
    /**
     * The context this task coalesces within, compared with {@code equals}/{@code hashCode}. It is read once, on the
     * submitting thread, when the task is submitted; it must not be {@code null}.
     *
     * @return this task's context, never {@code null}
     */
    Object context();
}
