package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The kernel's view of a thread ({@link OsThreads}), which the checker reads for a worker stuck outside Java code:
 * runnable for a thread on a core or waiting for one, asleep for one blocked in native I/O or parked.
 */
class OsThreadsTest {

    @Test
    void theStateIsReadAfterTheThreadsNameWhateverTheNameHolds() {
        assertEquals(OsThreads.RUNNABLE, OsThreads.stateOf("4242 (core-1) R 1 2 3"));
        assertEquals(OsThreads.ASLEEP, OsThreads.stateOf("4242 (a) R (b) S 1 2 3"), "a name with ') R ' in it");
        assertEquals(OsThreads.ASLEEP, OsThreads.stateOf("4242 (io) D 1"));
        assertEquals(OsThreads.UNKNOWN, OsThreads.stateOf("4242 (traced) t 1"));
        assertEquals(OsThreads.UNKNOWN, OsThreads.stateOf("4242 (cut"));
        assertEquals(OsThreads.UNKNOWN, OsThreads.stateOf("4242 (cut)"));
        assertEquals(OsThreads.UNKNOWN, OsThreads.state(0), "an unknown id");
        assertEquals(OsThreads.UNKNOWN, OsThreads.state(Integer.MAX_VALUE), "no such thread");
    }

    @Test
    void aSpinningThreadIsRunnableAndOneBlockedInNativeIoOrParkedIsAsleep() throws Exception {
        assumeTrue(OsThreads.currentId() > 0, "the kernel's view of a thread is read through /proc (Linux)");
        assertEquals(OsThreads.RUNNABLE, OsThreads.state(OsThreads.currentId()), "the reading thread itself runs");

        AtomicBoolean stop = new AtomicBoolean();
        Started spinner = start("spinning (R) x", () -> {
            while (!stop.get()) {
                Thread.onSpinWait();
            }
        });
        // Waited for, not read once: until it spins, the new thread may still sleep a moment (a class to load).
        TestSupport.waitUntil("the spinning thread to read as runnable",
                () -> OsThreads.state(spinner.id) == OsThreads.RUNNABLE);
        stop.set(true);
        spinner.thread.join();

        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Started accepting = start("accepting", () -> {
                try {
                    server.accept().close();
                } catch (IOException closed) {
                    // the socket is closed at the end of the test
                }
            });
            TestSupport.waitUntil("the thread to block in accept",
                    () -> OsThreads.state(accepting.id) == OsThreads.ASLEEP);
            server.close();
            accepting.thread.join();
        }

        CountDownLatch gate = new CountDownLatch(1);
        Started parked = start("parked", () -> TestSupport.blockQuietly(gate));
        // Java reads WAITING a moment before the thread sleeps in the kernel: waited for, as the other two.
        TestSupport.waitUntil("the parked thread to read as asleep",
                () -> OsThreads.state(parked.id) == OsThreads.ASLEEP);
        gate.countDown();
        parked.thread.join();
    }

    /** A thread started by {@link #start}, with its kernel id. */
    private static final class Started {
        final Thread thread;
        final int id;

        Started(Thread thread, int id) {
            this.thread = thread;
            this.id = id;
        }
    }

    /** Starts a thread that records its kernel id, then runs {@code body}; returns once the id is known. */
    private static Started start(String name, Runnable body) throws InterruptedException {
        AtomicInteger id = new AtomicInteger();
        CountDownLatch known = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            id.set(OsThreads.currentId());
            known.countDown();
            body.run();
        }, name);
        t.setDaemon(true);
        t.start();
        known.await();
        assertTrue(id.get() > 0, "the thread's id: " + id.get());
        return new Started(t, id.get());
    }
}
