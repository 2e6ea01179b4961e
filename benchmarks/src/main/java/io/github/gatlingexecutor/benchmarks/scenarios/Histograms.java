package io.github.gatlingexecutor.benchmarks.scenarios;

import org.HdrHistogram.Recorder;

/**
 * Latency recorders that never resize. An auto-resizing HdrHistogram {@link Recorder} grows under a reader lock the
 * first time a value falls outside its range, and a task recording its own latency then waits on that lock while
 * another copies the counts: a worker of the executor under test blocked inside its task for as long as the copy
 * takes, which an elastic pool rightly answers with another thread. The probe must not block, so the range is fixed
 * up front and values beyond it are clamped.
 */
final class Histograms {
    /** One minute in nanoseconds: beyond any wait these scenarios can see. */
    static final long MAX_NANOS = 60_000_000_000L;

    private Histograms() {
    }

    static Recorder recorder() {
        return new Recorder(MAX_NANOS, 3);
    }

    static void record(Recorder recorder, long nanos) {
        recorder.recordValue(Math.min(MAX_NANOS, Math.max(0, nanos)));
    }
}
