package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SnapshotMode;
import io.outboxrouter.config.SourceKind;
import io.outboxrouter.offsets.JdbcOffsetBackingStore;
import io.outboxrouter.offsets.JdbcSchemaHistory;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.util.Properties;

/** The Debezium engine and connector properties for a router configuration. */
final class ConnectorProperties {
    private ConnectorProperties() {
    }

    static Properties of(RouterConfig config) {
        var source = config.source();
        var p = new Properties();
        p.setProperty("name", config.name());
        p.setProperty("topic.prefix", config.name());

        // Offsets: our JDBC store, written after every batch the handler made durable, at transaction boundaries.
        p.setProperty("offset.storage", JdbcOffsetBackingStore.class.getName());
        OffsetTableSettings.offsets(config).toProperties(OffsetTableSettings.OFFSETS_PREFIX).forEach(p::setProperty);
        p.setProperty("offset.flush.interval.ms", "0");
        p.setProperty("offset.flush.timeout.ms", "60000");
        p.setProperty("provide.transaction.metadata", "true");

        var address = source.address();
        p.setProperty("database.hostname", address.host());
        p.setProperty("database.port", Integer.toString(address.port()));
        p.setProperty("database.user", source.connection().user());
        p.setProperty("database.password", source.connection().password().reveal());
        p.setProperty("table.include.list", String.join(",", source.tables().stream().map(ConnectorProperties::regex).toList()));
        p.setProperty("column.include.list", columnIncludeList(config));
        if (source.kind().isBinlog()) {
            binlog(config, p);
        } else {
            postgres(config, p);
        }
        p.setProperty("poll.interval.ms", Long.toString(source.pollInterval().toMillis()));
        p.setProperty("max.batch.size", Integer.toString(source.maxBatchSize()));
        p.setProperty("max.queue.size", Integer.toString(source.maxBatchSize() * 4));
        p.setProperty("tombstones.on.delete", "false");
        p.setProperty("decimal.handling.mode", "string");
        p.setProperty("binary.handling.mode", "bytes");
        p.setProperty("include.unknown.datatypes", "true");
        config.debezium().forEach(p::setProperty);
        return p;
    }

    private static void postgres(RouterConfig config, Properties p) {
        var source = config.source();
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("database.dbname", source.address().database());
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", source.postgres().slot());
        p.setProperty("publication.name", source.postgres().publication());
        p.setProperty("publication.autocreate.mode", "disabled"); // PostgresPreflight creates it, with only our tables
        p.setProperty("snapshot.mode", source.snapshot() == SnapshotMode.INITIAL ? "initial" : "no_data");
        // A restarted router takes its slot over quickly once the old walsender is gone (after a crash, seconds).
        p.setProperty("slot.retry.delay.ms", "1000");
        p.setProperty("slot.max.retries", "60");
        var pg = source.postgres();
        if (pg.heartbeat()) {
            // The heartbeat row is written through the replication stream like any change, so the slot's confirmed
            // position moves with it; the router routes only outbox tables, so it publishes nothing.
            p.setProperty("heartbeat.interval.ms", Long.toString(pg.heartbeatInterval().toMillis()));
            p.setProperty("heartbeat.action.query", "INSERT INTO " + pg.heartbeatTable() + " (router_name, beat_at) VALUES ('"
                    + config.name() + "', now()) ON CONFLICT (router_name) DO UPDATE SET beat_at = EXCLUDED.beat_at");
            p.setProperty("table.include.list", p.getProperty("table.include.list") + "," + regex(pg.heartbeatTable()));
            p.setProperty("column.include.list", p.getProperty("column.include.list") + "," + regex(pg.heartbeatTable()) + "\\..+");
        }
    }

    private static void binlog(RouterConfig config, Properties p) {
        var source = config.source();
        p.setProperty("connector.class", source.kind() == SourceKind.MARIADB
                ? "io.debezium.connector.mariadb.MariaDbConnector" : "io.debezium.connector.mysql.MySqlConnector");
        p.setProperty("database.server.id", Long.toString(source.binlog().serverId()));
        p.setProperty("database.include.list", String.join(",", source.tables().stream()
                .map(t -> regex(t.substring(0, t.indexOf('.')))).distinct().toList()));
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
        p.setProperty("snapshot.mode", source.snapshot() == SnapshotMode.INITIAL ? "initial" : "no_data");
        p.setProperty("connect.keep.alive", "true");
    }

    /**
     * Only the columns the router reads (the outbox columns and those mapped to headers) are decoded and carried:
     * a timestamp or any other column it does not use costs the connector a parse per row (about 10% of its CPU
     * per event on a table like the README's, with {@code created_at}).
     */
    static String columnIncludeList(RouterConfig config) {
        var c = config.outbox().columns();
        var names = new java.util.LinkedHashSet<>(java.util.List.of(c.id(), c.aggregateType(), c.aggregateId(), c.type(), c.payload()));
        names.addAll(config.outbox().headers().keySet());
        String alternatives = String.join("|", names.stream().map(java.util.regex.Pattern::quote).toList());
        return String.join(",", config.source().tables().stream().map(t -> regex(t) + "\\.(" + alternatives + ")").toList());
    }

    /** table.include.list takes regular expressions: quote the dot. */
    private static String regex(String table) {
        return table.replace(".", "\\.");
    }
}
