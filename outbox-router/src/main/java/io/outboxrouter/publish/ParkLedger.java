package io.outboxrouter.publish;

import java.util.List;

/**
 * Where a stream keeps its parks beside its position (the offsets table's {@code outbox-router.parks} row), written once
 * their markers are acknowledged: a parking topic that lost them (deleted, or its records, while the router was stopped)
 * is found at the next start, and so is a start under another dead-letter policy while aggregates are parked.
 */
public interface ParkLedger {
    /** Keeps nothing: for the commands and tests that run a handler without an offsets table. */
    ParkLedger NONE = new ParkLedger() {
        @Override
        public List<ParkedAggregates.Kept> read() {
            return List.of();
        }

        @Override
        public void write(List<ParkedAggregates.Kept> parks) {
        }
    };

    /** The parks kept, oldest first; empty when none. */
    List<ParkedAggregates.Kept> read();

    /** Replaces the parks kept (an empty list removes the row). */
    void write(List<ParkedAggregates.Kept> parks);
}
