package io.github.gatlingexecutor;

/**
 * Waiting for another thread that is between two instructions of a lock-free protocol (a submitter that has swung a
 * tail but not yet linked it). Spins first, then yields, so a descheduled submitter gets the core back.
 */
final class Backoff {
    private static final int SPINS = 64;

    private Backoff() {
    }

    /** Waits once; returns the updated wait count to pass to the next call. */
    static int pause(int waits) {
        if (waits < SPINS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
        return waits + 1;
    }
}
