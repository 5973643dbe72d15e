package io.outboxrouter.audit;

import io.outboxrouter.audit.AuditReads.Row;
import io.outboxrouter.audit.AuditReads.Window;
import io.outboxrouter.config.RouterConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Names the rows the self-audit found lost: how many, the first of them, their range, and how to publish them again. */
final class AuditLosses {
    /** Records are stamped when they are sent, after their row's time: Kafka is read from this long before. */
    static final Duration CLOCK_MARGIN = Duration.ofMinutes(1);
    /** Ids read back to publish again or name; more are counted, and the fix names their range. */
    static final int MOST_READ = 100_000;

    /** Lost rows: {@code count} in all, the ids read back per table, and their range by the time column. */
    record Found(RouterConfig config, long count, Map<String, List<String>> idsByTable, List<Row> first, Instant from, Instant through) {
        String report(String how) {
            return "the self-audit found " + count + " outbox row(s) that " + how + ": " + first
                    + (count > first.size() ? " and " + (count - first.size()) + " more" : "")
                    + (from == null ? "" : ", dated " + from + " to " + through) + ". Something kept them out of the replication stream "
                    + "(a table or session the log does not carry: UNLOGGED, sql_log_bin = 0; a publication, its row filter or the "
                    + "binlog format changed; a position moved past them); the events after them were published.";
        }

        String fix() {
            String range = from == null ? "" : " --since " + from + " --until " + through.plusNanos(1000);
            return "Publish them again with `java -jar outbox-router.jar audit --config <file>" + range + " --repair` (only the rows "
                    + "with no record in Kafka, header replayed=true), find and undo what kept them out, then start the router with "
                    + "--accept-gap.";
        }
    }

    private final RouterConfig config;

    AuditLosses(RouterConfig config) {
        this.config = config;
    }

    Found name(Connection c, AuditReads reads, List<Window> windows, List<LongSet> remaining) throws SQLException {
        long count = 0;
        var ids = new LinkedHashMap<String, List<String>>();
        var first = new ArrayList<Row>();
        Instant from = null;
        Instant through = null;
        for (int i = 0; i < windows.size(); i++) {
            var w = windows.get(i);
            count += remaining.get(i).size();
            for (var row : reads.rows(c, w, remaining.get(i), MOST_READ)) {
                ids.computeIfAbsent(w.table(), t -> new ArrayList<>()).add(row.id());
                if (first.size() < SelfAudit.NAMED) {
                    first.add(row);
                }
                from = from == null || row.instant().isBefore(from) ? row.instant() : from;
                through = through == null || row.instant().isAfter(through) ? row.instant() : through;
            }
        }
        return new Found(config, count, ids, first, from, through);
    }
}
