package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SourceKind;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.SchemaHistoryTable;
import java.io.IOException;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What changed behind a stopped MySQL or MariaDB router: its stored binlog file or GTIDs against what the server keeps,
 * and its schema history ({@link SourcePreflight#drift}).
 */
final class BinlogDrift {
    private static final Logger LOG = LoggerFactory.getLogger(BinlogDrift.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private BinlogDrift() {
    }

    /**
     * @param drift          what changed, with the choice to accept it
     * @param recoverHistory no drift, a stored position and no schema history (set by {@code offsets set} for a router that
     *                       never ran): the tables' shapes are read as they are now, then the binlog from that position
     */
    record Found(Optional<Drift> drift, boolean recoverHistory) {
        static Found of(Drift drift) {
            return new Found(Optional.of(drift), false);
        }
    }

    /** The drift of a stored position that was not reset by the operator. */
    static Found find(RouterConfig config, StoredPosition stored) throws SQLException {
        String table = config.offsets().table();
        String fromNow = "start from the current end of the binlog: the events committed ";
        String replay = " are not published (publish the rows still in the outbox table again with `replay`)";
        if (!stored.isEmpty()) {
            String file = storedField(stored, "file");
            String gtids = storedField(stored, "gtids");
            var byGtid = gtids == null || gtids.isBlank() ? Optional.<Optional<Drift>>empty() : gtidDrift(config, gtids, fromNow, replay);
            if (byGtid.isPresent() && byGtid.get().isPresent()) {
                return new Found(byGtid.get(), false);
            }
            var retained = retainedBinlogs(config);
            // Resumed by GTID, the file and position are the former primary's after a failover: only the GTIDs tell.
            if (byGtid.isEmpty() && file != null && !retained.containsKey(file)) {
                return Found.of(new Drift("binlog file " + file + " of router " + config.name() + "'s stored position is no longer on the "
                        + "server (it keeps " + String.join(", ", retained.keySet()) + "): binlog retention passed while the router was "
                        + "stopped or behind", fromNow + "since " + file + replay));
            }
            // Only for a router that never stored a position itself: one whose history went missing later keeps
            // Debezium's refusal, since the binlog since then may not read right with today's shapes.
            var history = OffsetTableSettings.schemaHistory(config);
            boolean recoverHistory = !stored.storedBefore() && SchemaHistoryTable.count(history) == 0;
            if (recoverHistory) {
                LOG.warn("Router {} has a stored binlog position ({}) but no schema history in {}: the outbox tables' shapes are read "
                        + "as they are now, then the binlog from that position. A change of their columns between that position and "
                        + "now would be read with today's columns", config.name(), file, history.table());
            }
            return new Found(Optional.empty(), recoverHistory);
        }
        if (stored.storedBefore()) {
            return Found.of(new Drift("router " + config.name() + "'s stored binlog position is gone from " + table
                    + " (its rows were deleted or the table truncated)", fromNow + "since the router last ran" + replay));
        }
        var history = OffsetTableSettings.schemaHistory(config);
        long records = SchemaHistoryTable.count(history);
        if (records > 0) {
            return Found.of(new Drift("router " + config.name() + " has no stored position in " + table + ", yet its schema history in "
                    + history.table() + " has " + records + " records: the offsets table was dropped or truncated while the router was "
                    + "stopped, or its first run stopped before it stored a position. To publish from a known position instead, "
                    + "run `offsets set --position <a source.position header>`",
                    fromNow + "since the router last ran" + replay));
        }
        return new Found(Optional.empty(), false);
    }

    /**
     * Whether the server can resume after the stored GTIDs (the connector resumes by them, not by file and position); empty
     * when it cannot tell (MySQL without GTIDs), else the drift found, if any.
     */
    private static Optional<Optional<Drift>> gtidDrift(RouterConfig config, String gtids, String fromNow, String replay) throws SQLException {
        String name = config.name();
        String anotherHistory = "the position comes from another history (a replica promoted before it received what the router "
                + "had read from the former primary, a replica that did not log what it applied, a server that was not a replica "
                + "of it, binary logs reset, or a database restored to an earlier point), and resuming there would skip or fail on "
                + "this server's transactions";
        String forget = "forget the stored position and " + fromNow + "on this server since it took over" + replay
                + "; events published from the former primary for transactions this server does not have stay published";
        try (var c = config.source().connection().open()) {
            if (config.source().kind() == SourceKind.MARIADB) {
                var server = MariaDbGtids.read(c);
                var problem = server.judgePosition(gtids);
                if (problem.isEmpty()) {
                    return Optional.of(recordedElsewhere(config, server, anotherHistory, forget));
                }
                var p = problem.get();
                return Optional.of(Optional.of(switch (p.reason()) {
                    case PURGED -> new Drift("the binlogs holding the transactions after router " + name + "'s stored GTID " + p.stored()
                            + " are purged (the oldest binlog the server keeps starts after " + p.evidence() + "): binlog retention "
                            + "passed while the router was stopped or behind", fromNow + "after " + p.stored() + replay);
                    case AHEAD -> new Drift("router " + name + "'s stored GTID " + p.stored() + " is ahead of this server's binlog, whose "
                            + "newest transaction in domain " + p.stored().domain() + " is " + p.evidence() + ": " + anotherHistory, forget);
                    case OTHER_HISTORY -> new Drift("router " + name + "'s stored GTID " + p.stored() + " is not in this server's binlog ("
                            + (p.evidence() == null ? "it has no transaction of server " + p.stored().server() + " in domain "
                            + p.stored().domain() : "the newest of server " + p.stored().server() + " in domain " + p.stored().domain()
                            + " is " + p.evidence()) + "): " + anotherHistory, forget);
                }));
            }
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT @@GLOBAL.gtid_mode")) {
                if (!rs.next() || !"ON".equalsIgnoreCase(rs.getString(1))) {
                    return Optional.empty();
                }
            }
            try (var ps = c.prepareStatement("SELECT GTID_SUBTRACT(?, @@GLOBAL.gtid_executed), GTID_SUBTRACT(@@GLOBAL.gtid_purged, ?)")) {
                ps.setString(1, gtids);
                ps.setString(2, gtids);
                try (var rs = ps.executeQuery()) {
                    rs.next();
                    String notExecuted = rs.getString(1).replace("\n", "");
                    String purgedUnread = rs.getString(2).replace("\n", "");
                    if (!notExecuted.isBlank()) {
                        return Optional.of(Optional.of(new Drift("router " + name + "'s stored GTID set names transactions this server "
                                + "has not executed (" + notExecuted + "): " + anotherHistory, forget)));
                    }
                    if (!purgedUnread.isBlank()) {
                        return Optional.of(Optional.of(new Drift("the server has purged transactions router " + name + " has not read ("
                                + purgedUnread + "): binlog retention passed while the router was stopped or behind, or this is a "
                                + "promoted replica that did not log what it applied (log_replica_updates = OFF)",
                                fromNow + "after its stored GTID set" + replay)));
                    }
                    return Optional.of(Optional.empty());
                }
            }
        }
    }

    /**
     * A schema history record (a change of an outbox table's shape) read at a GTID this server never logged: read from a
     * former primary just before a failover to a replica that missed it. Recovered by sequence number within its domain
     * ({@code MariaDbGtidOrder}), it would give the router a table shape this server's tables never had.
     */
    private static Optional<Drift> recordedElsewhere(RouterConfig config, MariaDbGtids.ServerState server, String anotherHistory,
                                                     String forget) {
        var history = OffsetTableSettings.schemaHistory(config);
        for (String record : SchemaHistoryTable.records(history)) {
            String recorded;
            try {
                var gtids = JSON.readTree(record).path("position").path("gtids");
                recorded = gtids.isTextual() ? gtids.asText() : null;
            } catch (IOException e) {
                continue; // Debezium refuses an unreadable record itself
            }
            if (recorded == null || recorded.isBlank() || !recorded.matches("[\\d\\s,-]+")) {
                continue;
            }
            var problem = server.judgeRecorded(recorded);
            if (problem.isPresent()) {
                return Optional.of(new Drift("router " + config.name() + "'s schema history in " + history.table() + " holds a "
                        + "change of its tables' shape read at GTID " + problem.get().stored() + ", which this server's binlog does "
                        + "not hold: " + anotherHistory, forget));
            }
        }
        return Optional.empty();
    }

    /** A text field of the stored Debezium binlog offset ({@code file}, {@code gtids}); null when absent or unreadable. */
    private static String storedField(StoredPosition stored, String field) {
        try {
            var value = JSON.readTree(stored.value()).path(field);
            return value.isTextual() ? value.asText() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** The binlog files the server keeps, with their sizes. */
    private static Map<String, Long> retainedBinlogs(RouterConfig config) throws SQLException {
        try (var c = config.source().connection().open()) {
            return BinlogPosition.retained(c);
        }
    }
}
