package io.outboxrouter.cdc;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Batches the engine started and finished handing over (together with the reader's position, whether it is idle), and
 * when a batch last started or finished.
 */
record EngineProgress(AtomicLong batchesStarted, AtomicLong batchesFinished, AtomicLong lastActiveNanos) {
    EngineProgress() {
        this(new AtomicLong(), new AtomicLong(), new AtomicLong());
    }

    boolean idle() {
        return batchesStarted.get() == batchesFinished.get();
    }
}
