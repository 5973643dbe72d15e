package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SnapshotMode;
import java.sql.SQLException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.connect.data.Struct;

/** Postgres through {@code pgoutput}: a named replication slot and a publication of only the outbox tables. */
final class PostgresSource implements Source {

    private final RouterConfig config;

    PostgresSource(RouterConfig config) {
        this.config = config;
    }

    @Override
    public List<Check> checks() {
        return PostgresPreflight.checks(config.source());
    }

    @Override
    public void prepare() {
        PostgresPreflight.run(config.source());
    }

    @Override
    public void addConnectorProperties(Properties p) {
        var source = config.source();
        var pg = source.postgres();
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("database.dbname", source.address().database());
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", pg.slot());
        p.setProperty("publication.name", pg.publication());
        p.setProperty("publication.autocreate.mode", "disabled"); // prepare() creates it, with only our tables
        p.setProperty("snapshot.mode", source.snapshot() == SnapshotMode.INITIAL ? "initial" : "no_data");
        // A restarted router takes its slot over quickly once the old walsender is gone (after a crash, seconds).
        p.setProperty("slot.retry.delay.ms", "1000");
        p.setProperty("slot.max.retries", "60");
        if (pg.heartbeat()) {
            // The heartbeat row is written through the replication stream like any change, so the slot's confirmed
            // position moves with it; the router routes only outbox tables, so it publishes nothing.
            p.setProperty("heartbeat.interval.ms", Long.toString(pg.heartbeatInterval().toMillis()));
            p.setProperty("heartbeat.action.query", PostgresDdl.heartbeat(pg.heartbeatTable(), config.name()));
            String table = ConnectorProperties.regex(pg.heartbeatTable());
            p.setProperty("table.include.list", p.getProperty("table.include.list") + "," + table);
            p.setProperty("column.include.list", p.getProperty("column.include.list") + "," + table + "\\..+");
        }
    }

    @Override
    public String metricsDomain() {
        return "debezium.postgres";
    }

    /** Postgres LSNs the way Postgres prints them: {@code lsn:0/16B3748}. */
    @Override
    public String position(Struct source) {
        Long lsn = source.getInt64("lsn");
        return lsn == null ? "lsn:unknown" : "lsn:" + Long.toHexString(lsn >>> 32).toUpperCase() + "/"
                + Long.toHexString(lsn & 0xFFFFFFFFL).toUpperCase();
    }

    @Override
    public Drain newDrain(EngineProgress progress) {
        return new PostgresDrain(config.source().connection());
    }

    @Override
    public String describe() {
        return "slot " + config.source().postgres().slot();
    }

    @Override
    public Map<String, String> offsetsAt(String position, Map<String, String> stored) {
        throw new IllegalArgumentException("a Postgres replication slot cannot be moved back to an earlier LSN; "
                + "to publish events again, replay the outbox rows still in the table");
    }

    @Override
    public Optional<SlotMonitor> monitor() {
        return Optional.of(new SlotMonitor(config.source(), config.name()));
    }

    @Override
    public Set<String> columns(String table) throws SQLException {
        var columns = new LinkedHashSet<String>();
        try (var c = config.source().connection().open();
             var ps = c.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(?) AND attnum > 0 "
                     + "AND NOT attisdropped ORDER BY attnum")) {
            ps.setString(1, table);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        }
        return columns;
    }

    @Override
    public String asText(String column) {
        return "CAST(" + column + " AS text)";
    }
}
