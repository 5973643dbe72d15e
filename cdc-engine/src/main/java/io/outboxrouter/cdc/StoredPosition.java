package io.outboxrouter.cdc;

import io.outboxrouter.offsets.OffsetTable;
import java.util.Map;
import java.util.Optional;

/**
 * What the offsets table says about a router: its stored offsets and its state row.
 *
 * @param offsets the engine's entries, key to value (empty when none is stored)
 * @param state   {@link OffsetTable#STORED} once it stored a position, {@link OffsetTable#RESET} after an operator reset; empty
 *                before either
 * @param catalog the catalog the router last streamed with ({@link OffsetTable#CATALOG_KEY}); empty when none is kept
 * @param firstStartUnderWay the first start's initial snapshot has not stored a position yet ({@link OffsetTable#FIRST_START_KEY})
 * @param timeline the history the router last streamed from ({@link OffsetTable#TIMELINE_KEY}); empty when none is kept
 */
record StoredPosition(Map<String, String> offsets, Optional<String> state, Optional<String> catalog, boolean firstStartUnderWay,
                      Optional<String> timeline) {

    StoredPosition(Map<String, String> offsets, Optional<String> state) {
        this(offsets, state, Optional.empty(), false, Optional.empty());
    }

    boolean isEmpty() {
        return offsets.isEmpty();
    }

    /** Whether this router stored a position here before (so finding none now means it was lost). */
    boolean storedBefore() {
        return state.filter(OffsetTable.STORED::equals).isPresent();
    }

    /** Whether an operator reset the position on purpose: the next start begins afresh. */
    boolean reset() {
        return state.filter(OffsetTable.RESET::equals).isPresent();
    }

    /** The first stored value, as JSON text; null when none. */
    String value() {
        return offsets.values().stream().findFirst().orElse(null);
    }
}
