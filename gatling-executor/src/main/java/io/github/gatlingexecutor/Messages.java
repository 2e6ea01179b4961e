package io.github.gatlingexecutor;

/** How exception messages and events name the caller's objects. */
final class Messages {

    private Messages() {
    }

    /**
     * {@code String.valueOf(o)}, or the class and identity of {@code o} when its {@code toString} throws. A message
     * names the caller's task or context; a {@code toString} that fails (a lazy field not loaded, say) must not turn a
     * {@code RejectedExecutionException} into its own exception, nor break a worker or the checker that reports it.
     * A {@code VirtualMachineError} other than a stack overflow still propagates: there is no naming our way past it.
     */
    static String describe(Object o) {
        try {
            return String.valueOf(o);
        } catch (RuntimeException | Error toStringFailed) {
            if (toStringFailed instanceof VirtualMachineError && !(toStringFailed instanceof StackOverflowError)) {
                throw toStringFailed;
            }
            return o.getClass().getName() + "@" + Integer.toHexString(System.identityHashCode(o));
        }
    }
}
