package io.outboxrouter.cdc;

import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * "Everything committed before now is published and its position stored": how {@code run --once} knows it is done.
 * Each source kind finds the end its own way ({@link Source#newDrain}); the engine tells it about every batch.
 */
abstract class Drain {
    private final CompletableFuture<Void> done = new CompletableFuture<>();

    /** Completes when the drain is complete; exceptionally when it cannot be. */
    final CompletableFuture<Void> done() {
        return done;
    }

    /** Marks the end on the source (or reads where it is) and starts watching for it. */
    abstract void start() throws SQLException;

    /** Called for every record of a batch, in order, before it is handled; returns whether it is this drain's end marker. */
    boolean isMarker(SourceRecord record) {
        return false;
    }

    /**
     * After a batch was handled and its position stored.
     *
     * @param markerIndex the marker's index in this batch, or -1
     * @param safeIndex   the last index of this batch whose position was stored, or -1
     */
    void batchStored(int markerIndex, int safeIndex) {
    }

    /**
     * Whether the engine must store the position of every batch at once while this drain runs, instead of at most every
     * few seconds when a batch holds no outbox event: only a drain that waits for a stored position needs it.
     */
    boolean needsPromptStore() {
        return false;
    }

    /** Stops watching (the engine stopped). */
    void cancel() {
    }
}
