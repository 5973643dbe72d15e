package io.outboxrouter.audit;

import io.outboxrouter.audit.AuditReads.Bound;
import io.outboxrouter.audit.AuditReads.Window;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * The ranges of outbox tables whose deliveries this process cannot know, matched with the records in Kafka instead: the
 * rows an earlier process delivered after what its audit proved (before this stream began), and those the audit could not
 * match while it was too far behind the stream.
 */
final class AuditGaps {
    /** Rows of a table dated after {@code lower} and through {@code upper}. */
    record Gap(Bound lower, Bound upper, String why) {
    }

    /** A gap's rows with no record in Kafka. */
    record Unpublished(Window window, LongSet ids, String why) {
    }

    private final AuditReads reads;
    private final SelfAudit.RecordedIds recorded;
    private final DeliveredIds delivered;
    private final Map<String, Gap> gaps = new LinkedHashMap<>();

    AuditGaps(AuditReads reads, SelfAudit.RecordedIds recorded, DeliveredIds delivered) {
        this.reads = reads;
        this.recorded = recorded;
        this.delivered = delivered;
    }

    /** Adds a range of a table, joined with one it already has. */
    void add(String table, Bound lower, Bound upper, String why) {
        var earlier = gaps.get(table);
        if (earlier != null && earlier.lower().micros() < lower.micros()) {
            lower = earlier.lower();
        }
        gaps.put(table, new Gap(lower, upper, why));
    }

    /** The lower of {@code b} and the start of the table's gap. */
    Bound lowest(String table, Bound b) {
        var gap = gaps.get(table);
        return gap != null && gap.lower().micros() < b.micros() ? gap.lower() : b;
    }

    void clear() {
        gaps.clear();
    }

    /**
     * Matches every gap's rows with the records in Kafka (and what this stream delivered so far), and forgets the gap. The
     * rows without a record are returned to wait like any others: some committed after the stored position, and this
     * stream delivers them.
     *
     * @param skewMillis the router's clock minus the database's
     * @param matched    told how many rows were matched
     */
    List<Unpublished> prove(Connection c, long skewMillis, LongConsumer matched) throws SQLException {
        var out = new ArrayList<Unpublished>();
        for (Iterator<Map.Entry<String, Gap>> it = gaps.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            var gap = e.getValue();
            var window = reads.window(c, e.getKey(), gap.lower(), gap.upper());
            if (!window.ids().isEmpty()) {
                var seen = seen(window.ids().size(), Instant.ofEpochMilli(gap.lower().micros() / 1000 + skewMillis)
                        .minus(AuditLosses.CLOCK_MARGIN), gap);
                var missing = window.ids().filter(h -> !seen.contains(h) && !delivered.contains(h));
                matched.accept(window.ids().size() - missing.size());
                if (!missing.isEmpty()) {
                    out.add(new Unpublished(window, missing, gap.why()));
                }
            }
            it.remove();
        }
        return out;
    }

    private LongSet seen(int expected, Instant from, Gap gap) {
        var seen = new LongSet(expected);
        try {
            recorded.forEach(from, id -> seen.add(DeliveredIds.hash(id)));
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the router's topics", ex);
        } catch (Exception ex) {
            throw new IllegalStateException("could not read the router's topics to match the rows " + gap.why() + ": " + ex.getMessage(), ex);
        }
        return seen;
    }
}
