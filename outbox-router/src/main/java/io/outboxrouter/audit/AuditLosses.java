package io.outboxrouter.audit;

import io.outboxrouter.audit.AuditReads.Row;
import io.outboxrouter.audit.AuditReads.Window;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RouterConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rows the self-audit found lost: named (how many, the first of them, their range, how to publish them again), then
 * published again or the router stopped, as {@code outbox.audit.on-loss} says.
 */
final class AuditLosses {
    private static final Logger LOG = LoggerFactory.getLogger(AuditLosses.class);
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
    private final Republish republish;
    private final java.util.function.Consumer<String> stop;
    private final AtomicLong lost = new AtomicLong();
    private final AtomicLong replayed = new AtomicLong();

    /** @param stop told the reason, when a loss stops the router */
    AuditLosses(RouterConfig config, Republish republish, java.util.function.Consumer<String> stop) {
        this.config = config;
        this.republish = republish;
        this.stop = stop;
    }

    long lost() {
        return lost.get();
    }

    long replayed() {
        return replayed.get();
    }

    /**
     * Rows found lost: published again ({@code on-loss: replay}), or the router stopped with their ids and the fix.
     *
     * @return whether the router goes on (they were published again)
     */
    boolean handle(Connection c, AuditReads reads, List<Window> windows, List<LongSet> ids, String how) throws SQLException {
        var found = name(c, reads, windows, ids);
        lost.addAndGet(found.count());
        if (config.outbox().audit().onLoss() == OutboxConfig.OnLoss.STOP) {
            stop.accept(found.report(how) + " " + found.fix());
            return false;
        }
        long published = 0;
        try {
            for (var e : found.idsByTable().entrySet()) {
                published += republish.republish(e.getKey(), e.getValue());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop.accept(found.report(how) + " Interrupted while publishing them again: " + found.fix());
            return false;
        } catch (Exception e) {
            stop.accept(found.report(how) + " Publishing them again failed (" + e.getMessage() + "): " + found.fix());
            return false;
        }
        replayed.addAndGet(published);
        if (published < found.count()) {
            // Rows read back beyond the limit, deleted since, or that cannot be routed: not all are published again.
            stop.accept(found.report(how) + " Only " + published + " of them could be published again: " + found.fix());
            return false;
        }
        LOG.error("Router {}: {} Published again ({} record(s), header replayed=true).", config.name(), found.report(how), published);
        return true;
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
