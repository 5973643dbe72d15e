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
        return checks;
    }

    @Override
    public void prepare() {
        BinlogPreflight.run(config.source(), ConnectorProperties.outboxColumns(config));
    }

    @Override
    public void addConnectorProperties(Properties p) {
        var source = config.source();
        p.setProperty("connector.class", (source.kind() == SourceKind.MARIADB
                ? QuietConnectors.MariaDb.class : QuietConnectors.MySql.class).getName());
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
    public Drain newDrain(EngineProgress progress, javax.management.ObjectName streamingMetrics) {
        return new BinlogDrain(config.source().connection(), streamingMetrics, progress, config.name());
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
        recoverHistory = false;
        if (stored.reset()) {
            return Optional.empty();
        }
        var found = BinlogDrift.find(config, stored);
        recoverHistory = found.recoverHistory();
        return found.drift();
    }

    /** Also forgets the schema history, which belongs to the forgotten position; the next start reads the tables' shapes again. */
    @Override
    public void resetPosition(OffsetTable table, String routerName) {
        Source.super.resetPosition(table, routerName);
        SchemaHistoryTable.delete(OffsetTableSettings.schemaHistory(config));
    }

    @Override
    public Optional<SlotMonitor> monitor(Consumer<SourceSetupException> drift) {
        return Optional.empty();
    }
}
