package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outboxrouter.change.SourcePositions;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SnapshotMode;
import io.outboxrouter.config.SourceKind;
import io.outboxrouter.offsets.JdbcSchemaHistory;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.SchemaHistoryTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.apache.kafka.connect.data.Struct;

/** MySQL and MariaDB through the row binlog, with the schema history in a JDBC table beside the offsets. */
final class BinlogSource implements Source {
    /** A record's source.position header: MariaDB's GTID is domain-server-sequence, MySQL's server_uuid:transaction. */
    private static final Pattern POSITION = Pattern.compile(
            "binlog:([^:,]+):(\\d+)(?:,gtid:(?:(\\d+)-(\\d+)-(\\d+)|(\\p{XDigit}{8}(?:-\\p{XDigit}{4}){3}-\\p{XDigit}{12}(?::[A-Za-z_]\\w*)?:\\d+)))?");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How often the stored position follows the binlog when no outbox event moves it; debezium.heartbeat.interval.ms overrides. */
    static final Duration BINLOG_HEARTBEAT = Duration.ofSeconds(30);

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(BinlogSource.class);
    private final RouterConfig config;
    /**
     * A stored position without a schema history, set by {@code offsets set} for a router that never ran (as when it takes
     * over from another relay): the history is read from the tables' current shapes, then the binlog from that position.
     */
    private volatile boolean recoverHistory;

    private final BinlogOutboxSql outboxSql;

    BinlogSource(RouterConfig config) {
        this.config = config;
        this.outboxSql = new BinlogOutboxSql(config);
    }

    @Override
    public OutboxSql outboxSql() {
        return outboxSql;
    }

    @Override
    public List<Check> checks() {
        var checks = new java.util.ArrayList<>(BinlogPreflight.checks(config.source(), ConnectorProperties.outboxColumns(config)));
        checks.addAll(Retention.checks(config, outboxSql));
        return checks;
    }

    @Override
    public void prepare() {
        Retention.refuseUnless(Retention.checks(config, outboxSql));
        BinlogPreflight.run(config.source(), ConnectorProperties.outboxColumns(config));
    }

    @Override
    public void addConnectorProperties(Properties p) {
        var source = config.source();
        p.setProperty("connector.class", source.kind() == SourceKind.MARIADB
                ? "io.debezium.connector.mariadb.MariaDbConnector" : "io.debezium.connector.mysql.MySqlConnector");
        p.setProperty("database.server.id", Long.toString(source.binlog().serverId()));
        p.setProperty("database.include.list", String.join(",", source.tables().stream()
                .map(t -> ConnectorProperties.regex(t.substring(0, t.indexOf('.')))).distinct().toList()));
        // Only the outbox tables' shapes are needed; keep the history small and out of Kafka.
        p.setProperty("schema.history.internal", JdbcSchemaHistory.class.getName());
        p.setProperty("schema.history.internal.store.only.captured.tables.ddl", "true");
        p.setProperty("schema.history.internal.store.only.captured.databases.ddl", "true");
        OffsetTableSettings.schemaHistory(config).toProperties(OffsetTableSettings.SCHEMA_HISTORY_PREFIX).forEach(p::setProperty);
        p.setProperty("include.schema.changes", "false");
        // The schema snapshot's global read lock would block our own writes of the schema history to this same
        // server (a deadlock until timeout). Without it, only DDL on the outbox tables during the first start's
        // schema read could be missed; override with debezium.snapshot.locking.mode when that is a concern.
        p.setProperty("snapshot.locking.mode", "none");
        p.setProperty("snapshot.mode", recoverHistory ? "recovery" : source.snapshot() == SnapshotMode.INITIAL ? "initial" : "no_data");
        p.setProperty("connect.keep.alive", "true");
        // A quiet outbox on a busy server: without a heartbeat the stored position moves only with outbox events, and a
        // restart after binlog retention has passed since the last one fails. Heartbeats carry the reader's position.
        p.setProperty("heartbeat.interval.ms", Long.toString(BINLOG_HEARTBEAT.toMillis()));
        if (source.kind() == SourceKind.MARIADB) {
            // Its check refuses the former primary's GTIDs on a promoted replica that holds them; drift() checks instead,
            // before every engine start. So no error may restart the connector inside the engine, past that check.
            p.setProperty("internal.log.position.check.enable", "false");
            p.setProperty("errors.max.retries", "0");
        }
    }

    @Override
    public String metricsDomain() {
        return config.source().kind() == SourceKind.MARIADB ? "debezium.mariadb" : "debezium.mysql";
    }

    /** A binlog coordinate: {@code binlog:mysql-bin.000003:1234}, with the GTID when the server has one. */
    @Override
    public String position(Struct source) {
        return SourcePositions.binlog(source);
    }

    @Override
    public Drain newDrain(EngineProgress progress) {
        return new BinlogDrain(config.source().connection(), streamingMetrics(config.name()), progress, config.name());
    }

    @Override
    public String describe() {
        return "binlog";
    }

    /**
     * The connector starts reading at exactly this file and position (no skip counters); MariaDB resumes by GTID, so the
     * GTID state is set to just before this transaction in its domain, other domains as stored.
     *
     * @throws IllegalArgumentException when the position is malformed
     * @throws IllegalStateException    when the server no longer retains it
     */
    @Override
    public Map<String, String> offsetsAt(String position, Map<String, String> stored) throws SQLException {
        var m = POSITION.matcher(position.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("--position must look like binlog:mariadb-bin.000003:1234 (was \"" + position + "\")");
        }
        try (var c = config.source().connection().open()) {
            return offsetsAt(c, m, stored);
        }
    }

    private Map<String, String> offsetsAt(Connection c, java.util.regex.Matcher m, Map<String, String> stored) throws SQLException {
        String file = m.group(1);
        long pos = Long.parseLong(m.group(2));
        checkRetained(c, file, pos);
        String key = offsetKey();
        String previous = stored.get(key);
        if (config.source().kind() == SourceKind.MARIADB && m.group(6) != null) {
            throw new IllegalArgumentException("--position carries a MySQL GTID (" + m.group(6) + "), and this router reads MariaDB, whose "
                    + "GTIDs look like 0-1-42: give a source.position header of this server's records");
        }
        if (config.source().kind() == SourceKind.MARIADB && m.group(3) == null && (previous == null || !previous.contains("\"gtids\""))) {
            // Debezium's MariaDB connector resumes by GTID: a position without one fails at start.
            throw new IllegalArgumentException("MariaDB resumes by GTID: give the GTID of the transaction to start at too, --position "
                    + "binlog:" + file + ":" + pos + ",gtid:D-S-N (a record's source.position header has it; from Debezium Server's "
                    + "stored offset, take its gtids and add 1 to the sequence number)");
        }
        try {
            var value = JSON.createObjectNode();
            if (previous != null && JSON.readTree(previous) instanceof ObjectNode old && old.has("server_id")) {
                value.set("server_id", old.get("server_id"));
            }
            value.put("file", file).put("pos", pos);
            // MySQL with GTIDs resumes from the set executed before the position (the event's own GTID is not that set).
            if (config.source().kind() == SourceKind.MYSQL) {
                var before = MySqlGtids.executedBefore(c, file, pos);
                if (before.isPresent() && m.group(6) != null && before.get().transactionAt().isPresent()
                        && !before.get().transactionAt().get().equalsIgnoreCase(m.group(6))) {
                    // Another server's file of the same name (after a failover, say): its GTIDs would skip events.
                    throw new IllegalArgumentException("--position names transaction " + m.group(6) + ", but at " + file + ":" + pos
                            + " this server's binlog has " + before.get().transactionAt().get() + ": the header comes from "
                            + "another server's binlog. Give a position of this server's (a record it published, or SHOW "
                            + "BINARY LOG STATUS)");
                }
                before.ifPresent(g -> value.put("gtids", g.executed()));
            }
            if (m.group(3) != null && config.source().kind() == SourceKind.MARIADB) {
                String restart = m.group(3) + "-" + m.group(4) + "-" + (Long.parseLong(m.group(5)) - 1);
                value.put("gtids", mergeGtid(previous, m.group(3), restart));
            }
            var entries = new LinkedHashMap<String, String>();
            entries.put(key, value.toString());
            return entries;
        } catch (IOException e) {
            throw new UncheckedIOException("the stored offset of router " + config.name() + " is not JSON: " + previous, e);
        }
    }

    /** The key the engine stores the position under: {@code ["<name>",{"server":"<name>"}]}. */
    private String offsetKey() {
        return JSON.createArrayNode().add(config.name()).add(JSON.createObjectNode().put("server", config.name())).toString();
    }

    /** The stored GTID state with the entry of {@code domain} replaced by {@code restart}. */
    private static String mergeGtid(String previous, String domain, String restart) throws IOException {
        var parts = new ArrayList<String>();
        if (previous != null && JSON.readTree(previous).hasNonNull("gtids")) {
            for (String g : JSON.readTree(previous).get("gtids").asText().split(",")) {
                if (!g.isBlank() && !g.trim().startsWith(domain + "-")) {
                    parts.add(g.trim());
                }
            }
        }
        parts.add(restart);
        return String.join(",", parts);
    }

    private static void checkRetained(Connection c, String file, long pos) throws SQLException {
        var retained = BinlogPosition.retained(c);
        Long size = retained.get(file);
        if (size == null) {
            throw new IllegalStateException("the server no longer retains " + file + " (it has " + String.join(", ", retained.keySet()) + ")");
        }
        if (pos > size) {
            throw new IllegalStateException(file + " is only " + size + " bytes long; position " + pos + " is past its end");
        }
    }

    @Override
    public Optional<Drift> drift(StoredPosition stored) throws SQLException {
        if (stored.reset()) {
            return Optional.empty();
        }
        String table = config.offsets().table();
        String fromNow = "start from the current end of the binlog: the events committed ";
        String replay = " are not published (publish the rows still in the outbox table again with `replay`)";
        if (!stored.isEmpty()) {
            String file = storedFile(stored);
            String gtids = storedGtids(stored);
            var byGtid = gtids == null || gtids.isBlank() ? Optional.<Optional<Drift>>empty() : gtidDrift(gtids, fromNow, replay);
            if (byGtid.isPresent() && byGtid.get().isPresent()) {
                return byGtid.get();
            }
            var retained = retainedBinlogs();
            // Resumed by GTID, the file and position are the former primary's after a failover: only the GTIDs tell.
            if (byGtid.isEmpty() && file != null && !retained.containsKey(file)) {
                return Optional.of(new Drift("binlog file " + file + " of router " + config.name() + "'s stored position is no longer on the "
                        + "server (it keeps " + String.join(", ", retained.keySet()) + "): binlog retention passed while the router was "
                        + "stopped or behind", fromNow + "since " + file + replay));
            }
            // Only for a router that never stored a position itself: one whose history went missing later keeps
            // Debezium's refusal, since the binlog since then may not read right with today's shapes.
            var history = OffsetTableSettings.schemaHistory(config);
            recoverHistory = !stored.storedBefore() && SchemaHistoryTable.count(history) == 0;
            if (recoverHistory) {
                LOG.warn("Router {} has a stored binlog position ({}) but no schema history in {}: the outbox tables' shapes are read "
                        + "as they are now, then the binlog from that position. A change of their columns between that position and "
                        + "now would be read with today's columns", config.name(), file, history.table());
            }
            return Optional.empty();
        }
        if (stored.storedBefore()) {
            return Optional.of(new Drift("router " + config.name() + "'s stored binlog position is gone from " + table
                    + " (its rows were deleted or the table truncated)", fromNow + "since the router last ran" + replay));
        }
        var history = OffsetTableSettings.schemaHistory(config);
        long records = SchemaHistoryTable.count(history);
        if (records > 0) {
            return Optional.of(new Drift("router " + config.name() + " has no stored position in " + table + ", yet its schema history in "
                    + history.table() + " has " + records + " records: the offsets table was dropped or truncated while the router was "
                    + "stopped, or its first run stopped before it stored a position. To publish from a known position instead, "
                    + "run `offsets set --position <a source.position header>`",
                    fromNow + "since the router last ran" + replay));
        }
        return Optional.empty();
    }

    /**
     * Whether the server can resume after the stored GTIDs (the connector resumes by them, not by file and position); empty
     * when it cannot tell (MySQL without GTIDs), else the drift found, if any.
     */
    private Optional<Optional<Drift>> gtidDrift(String gtids, String fromNow, String replay) throws SQLException {
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
                    return Optional.of(recordedElsewhere(server, anotherHistory, forget));
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
    private Optional<Drift> recordedElsewhere(MariaDbGtids.ServerState server, String anotherHistory, String forget) {
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

    /** Also forgets the schema history, which belongs to the forgotten position; the next start reads the tables' shapes again. */
    @Override
    public void resetPosition(OffsetTable table, String routerName) {
        Source.super.resetPosition(table, routerName);
        SchemaHistoryTable.delete(OffsetTableSettings.schemaHistory(config));
    }

    private static String storedGtids(StoredPosition stored) {
        try {
            var gtids = JSON.readTree(stored.value()).path("gtids");
            return gtids.isTextual() ? gtids.asText() : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static String storedFile(StoredPosition stored) {
        try {
            var file = JSON.readTree(stored.value()).path("file");
            return file.isTextual() ? file.asText() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** The binlog files the server keeps, with their sizes. */
    private Map<String, Long> retainedBinlogs() throws SQLException {
        try (var c = config.source().connection().open()) {
            return BinlogPosition.retained(c);
        }
    }

    @Override
    public Optional<SlotMonitor> monitor(Consumer<SourceSetupException> drift) {
        return Optional.empty();
    }
}
