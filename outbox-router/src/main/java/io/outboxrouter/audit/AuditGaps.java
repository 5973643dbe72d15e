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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ranges of outbox tables whose deliveries this process cannot know, matched with the records in Kafka instead: the
 * rows an earlier process delivered after what its audit proved (before this stream began), and those the audit could not
 * match while it was too far behind the stream.
 */
final class AuditGaps {
    private static final Logger LOG = LoggerFactory.getLogger(AuditGaps.class);

    /** Rows of a table dated after {@code lower} and through {@code upper}. */
    record Gap(Bound lower, Bound upper, String why) {
    }

    /** A gap's rows with no record in Kafka. */
    record Unpublished(Window window, LongSet ids, String why) {
    }

    private final String router;
    private final AuditReads reads;
    private final SelfAudit.RecordedIds recorded;
    private final DeliveredIds delivered;
    private final Map<String, Gap> gaps = new LinkedHashMap<>();

    AuditGaps(String router, AuditReads reads, SelfAudit.RecordedIds recorded, DeliveredIds delivered) {
        this.router = router;
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
     * Matches every gap's rows with the records in Kafka (and what this stream delivered), and forgets the gap.
     *
     * @param accept     the operator accepted a gap at this start: what has no record is logged, not returned
     * @param skewMillis the router's clock minus the database's
     * @param matched    told how many rows were matched
     * @return the rows with no record
     */
    List<Unpublished> prove(Connection c, boolean accept, long skewMillis, LongConsumer matched) throws SQLException {
        var out = new ArrayList<Unpublished>();
        for (Iterator<Map.Entry<String, Gap>> it = gaps.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            String table = e.getKey();
            var gap = e.getValue();
            var ids = reads.ids(c, table, gap.lower(), gap.upper());
            if (!ids.isEmpty()) {
                var seen = seen(ids.size(), Instant.ofEpochMilli(gap.lower().micros() / 1000 + skewMillis).minus(AuditLosses.CLOCK_MARGIN), gap);
                var missing = ids.filter(h -> !seen.contains(h) && !delivered.contains(h));
                matched.accept(ids.size() - missing.size());
                var window = new Window(table, gap.lower(), gap.upper(), null, ids, skewMillis);
                if (!missing.isEmpty() && accept) {
                    LOG.warn("Router {}: {} row(s) of {} {} have no record in Kafka; the gap was accepted at this start (--accept-gap): "
                            + "not published. First: {}", router, missing.size(), table, gap.why(), reads.rows(c, window, missing, SelfAudit.NAMED));
                } else if (!missing.isEmpty()) {
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
