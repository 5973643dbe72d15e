package io.outboxrouter.cdc;

import io.outboxrouter.offsets.OffsetTable;
import java.sql.SQLException;
import java.util.Map;

/** How an operator moves a source's stored position ({@code offsets set}, {@code offsets reset}, {@code run --accept-gap}). */
public interface PositionControl {

    /**
     * The offset entries to store so that the next start reads again from {@code position} (a record's
     * {@code source.position} header).
     *
     * @param stored the router's stored entries, key to value
     * @throws IllegalArgumentException when this source cannot go back there; the message says why and what to do instead
     */
    Map<String, String> offsetsAt(String position, Map<String, String> stored) throws SQLException;

    /**
     * Forgets the router's position on purpose ({@code offsets reset}, {@code run --accept-gap}): the next start begins
     * afresh, as {@code source.snapshot} says, and is not refused for the missing position. The table says it is the
     * authoritative copy, so that an exactly-once start corrects its offsets topic rather than take the forgotten position back.
     */
    default void resetPosition(OffsetTable table, String routerName) {
        table.delete(routerName);
        // The table is then the position: an exactly-once router's offsets topic still holds the forgotten one.
        // The events between the old position and the new one may be replayed from the outbox rows: retention keeps them.
        table.write(routerName, Map.of(OffsetTable.STATE_KEY, OffsetTable.RESET, OffsetTable.AUTHORITY_KEY, OffsetTable.TABLE,
                OffsetTable.RETENTION_HOLD_KEY, OffsetTable.retentionHoldFromNow()));
    }
}
