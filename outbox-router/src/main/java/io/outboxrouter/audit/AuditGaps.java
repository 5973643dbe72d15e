package io.outboxrouter.audit;

import io.outboxrouter.audit.AuditReads.Bound;
import io.outboxrouter.audit.AuditReads.Window;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.LinkedHashMap;
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

    /**
     * Rows of a table dated after {@code lower} and through {@code upper}.
     *
     * @param accepted the operator accepted a gap at this start ({@code --accept-gap}): what has no record is logged
     */
    record Gap(Bound lower, Bound upper, String why, boolean accepted) {
    }

    /** Told about a gap's rows with no record in Kafka, which then wait like the rows of any window. */
    interface Unpublished {
        void waitFor(Window window, LongSet ids, String why, boolean accepted);
    }

    private final String router;
    private final AuditReads reads;
    private final RecordedIds recorded;
    private final DeliveredIds delivered;
    private final Map<String, Gap> gaps = new LinkedHashMap<>();
    private java.util.List<String> earlierTopics = java.util.List.of();

    AuditGaps(String router, AuditReads reads, RecordedIds recorded, DeliveredIds delivered) {
        this.router = router;
        this.reads = reads;
        this.recorded = recorded;
        this.delivered = delivered;
    }

    /** Adds a range of a table, joined with one it already has (the widest of both; accepted only if both are). */
    void add(String table, Gap gap) {
        var earlier = gaps.get(table);
        if (earlier != null) {
            gap = new Gap(earlier.lower().micros() < gap.lower().micros() ? earlier.lower() : gap.lower(),
                    earlier.upper().micros() > gap.upper().micros() ? earlier.upper() : gap.upper(), gap.why(),
                    earlier.accepted() && gap.accepted());
        }
        gaps.put(table, gap);
    }

    /** The lower of {@code b} and the start of the table's gap. */
    Bound lowest(String table, Bound b) {
        var gap = gaps.get(table);
        return gap != null && gap.lower().micros() < b.micros() ? gap.lower() : b;
    }

    void clear() {
        gaps.clear();
    }

    /** Topic patterns earlier runs published to under another routing: their records are matched too. */
    void earlierTopics(java.util.List<String> patterns) {
        this.earlierTopics = java.util.List.copyOf(patterns);
    }

    /**
     * Matches the rows of every gap dated before {@code readable} (the lag: their transactions have committed) with the
     * records in Kafka and what this stream delivered so far; the rows without either wait, told to {@code unpublished}
     * before the gap is forgotten: some committed after the stored position, and this stream delivers them. A gap that
     * cannot be read now (Kafka unreachable, a topic not readable) is kept for the next look; the others go on.
     *
     * @param matched told how many rows were matched
     */
    void prove(Connection c, Bound readable, LongConsumer matched, Unpublished unpublished) throws SQLException {
        for (var it = gaps.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            var gap = e.getValue();
            if (gap.upper().micros() > readable.micros()) {
                continue; // transactions that wrote rows dated in it may still be open
            }
            var window = reads.window(c, e.getKey(), gap.lower(), gap.upper());
            if (!window.ids().isEmpty()) {
                LongSet seen;
                try {
                    seen = seen(window, Instant.ofEpochMilli(gap.lower().micros() / 1000 + window.skewMillis()).minus(AuditLosses.CLOCK_MARGIN));
                } catch (RuntimeException ex) {
                    LOG.warn("Router {}: the self-audit could not read the router's topics to match the rows of {} {} (tried again at the "
                            + "next look): {}", router, e.getKey(), gap.why(), ex.getMessage());
                    continue;
                }
                var missing = window.ids().filter(h -> !seen.contains(h) && !delivered.contains(h));
                matched.accept(window.ids().size() - missing.size());
                if (!missing.isEmpty()) {
                    unpublished.waitFor(window, missing, gap.why(), gap.accepted());
                }
            }
            it.remove();
        }
    }

    /** The ids of the window that a record in the router's topics (or an earlier routing's) carries. */
    private LongSet seen(Window window, Instant from) {
        var seen = new LongSet(1024);
        try {
            recorded.forEach(from, earlierTopics, id -> {
                long h = DeliveredIds.hash(id);
                if (window.ids().contains(h)) {
                    seen.add(h);
                }
            });
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the router's topics", ex);
        } catch (Exception ex) {
            throw new IllegalStateException(ex.getMessage(), ex);
        }
        return seen;
    }
}
