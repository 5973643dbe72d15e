package io.outboxrouter.cdc;

import io.outboxrouter.change.SourcePositions;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SnapshotMode;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.kafka.connect.data.Struct;

/** Postgres through {@code pgoutput}: a named replication slot and a publication of only the outbox tables. */
final class PostgresSource implements Source {

    private final RouterConfig config;
    /** A shard's row filter per outbox table, found by {@link #prepare()}: its snapshot reads only its rows. */
    private volatile Map<String, String> shardFilters = Map.of();
    /**
     * Found by {@link #drift}: the slot exists but no position is stored, so the stream resumes from the slot without an
     * initial snapshot (Debezium would stream from the snapshot's position and skip what the slot holds before it).
     */
    private volatile boolean resumeFromSlot;
    /** Found by {@link #drift}: whether this start begins without a slot and without a stored position (a first start). */
    private volatile boolean firstStart;
    /** Found by {@link #drift}: a position is stored and the first start's mark is still there, to be removed. */
    private volatile boolean firstStartDone;
    /** Found by {@link #prepare()}: Postgres 17 or later, whose slots the connector creates as failover slots. */
    private volatile boolean failoverSlots;

    /**
     * How often, while nothing is read, the connector emits a heartbeat record when it runs without transaction metadata:
     * about the longest a quiet spell leaves the last transaction's position unstored (a crash then sends it again). A
     * heartbeat record costs next to nothing; with a heartbeat row, each also runs the row's statement, which writes only
     * once the row is {@code heartbeat-interval} old (a no-op otherwise).
     */
    static final Duration TRANSACTION_END_HEARTBEAT = Duration.ofMillis(250);

    private final PostgresOutboxSql outboxSql;

    PostgresSource(RouterConfig config) {
        this.config = config;
        this.outboxSql = new PostgresOutboxSql(config, () -> shardFilters);
    }

    @Override
    public OutboxSql outboxSql() {
        return outboxSql;
    }

    @Override
    public List<Check> checks() {
        var checks = new ArrayList<>(PostgresPreflight.checks(config.name(), config.source(), ConnectorProperties.outboxColumns(config),
                ConnectorProperties.readColumns(config), config.outbox().columns().aggregateId()));
        return checks;
    }

    @Override
    public void prepare() {
        shardFilters = PostgresPreflight.run(config.name(), config.source(), ConnectorProperties.outboxColumns(config),
                ConnectorProperties.readColumns(config), config.outbox().columns().aggregateId());
        failoverSlots = SlotFailover.ensure(config.source().connection(), java.util.List.of(config.source().postgres().slot()));
    }

    @Override
    public void afterPositionCheck() {
        stampTimeline();
        if (config.source().postgres().shard() == null) {
            markFirstStart();
            return;
        }
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            PostgresShards.createLayoutSlots(config.name(), config.source(),
                    name -> !table.read(name).isEmpty() || table.state(name).isPresent());
        }
    }

    /**
     * The history the stream reads from now, kept before any position read there is stored: a later start on a server
     * that left this timeline before the stored position refuses it ({@link PostgresHistory#missing}).
     */
    private void stampTimeline() {
        var history = PostgresDrift.history(config);
        if (history.isEmpty()) {
            return;
        }
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            String stamp = history.get().stamp().json();
            if (!table.timeline(config.name()).filter(stamp::equals).isPresent()) {
                table.write(config.name(), java.util.Map.of(OffsetTable.TIMELINE_KEY, stamp));
            }
        }
    }

    /**
     * An initial snapshot's first start leaves a mark until a position is stored, so that a slot found later without a
     * position is told apart: the first start's (snapshot again) or one whose offsets were lost (resume from it).
     */
    private void markFirstStart() {
        if (config.source().snapshot() != SnapshotMode.INITIAL || (!firstStart && !firstStartDone)) {
            return;
        }
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            var entry = new java.util.HashMap<String, String>();
            entry.put(OffsetTable.FIRST_START_KEY, firstStart ? "{\"since\":\"" + java.time.Instant.now() + "\"}" : null);
            table.write(config.name(), entry);
        }
    }

    @Override
    public void addConnectorProperties(Properties p) {
        var source = config.source();
        var pg = source.postgres();
        p.setProperty("connector.class", QuietConnectors.Postgres.class.getName());
        p.setProperty("database.dbname", source.address().database());
        if (source.address().multiHost()) {
            // The connector takes one host: the primary among the URL's, found again at every start (after a failover too).
            var primary = primaryHost();
            p.setProperty("database.hostname", primary.host());
            p.setProperty("database.port", Integer.toString(primary.port()));
        }
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", pg.slot());
        if (failoverSlots) {
            p.setProperty("slot.failover", "true"); // a standby with sync_replication_slots keeps it through a promotion
        }
        p.setProperty("publication.name", pg.publication());
        p.setProperty("publication.autocreate.mode", "disabled"); // prepare() creates it, with only our tables
        p.setProperty("snapshot.mode", source.snapshot() == SnapshotMode.INITIAL && !resumeFromSlot ? "initial" : "no_data");
        // A restarted router takes its slot over quickly once the old walsender is gone (after a crash, seconds).
        p.setProperty("slot.retry.delay.ms", "1000");
        p.setProperty("slot.max.retries", "60");
        // Logical decoding messages: run --once's end marker and the slot monitor's heartbeat always, the outbox's when
        // configured; other programs' are dropped by the connector.
        String drain = PostgresDrain.MESSAGE_PREFIX.replace(".", "\\.") + "," + SlotMonitor.HEARTBEAT_PREFIX.replace(".", "\\.");
        p.setProperty("message.prefix.include.list", pg.messages() ? pg.messagePrefix().replace(".", "\\.") + "," + drain : drain);
        if (pg.messages() && source.tables().isEmpty()) {
            p.setProperty("snapshot.mode", "no_data"); // messages live in the WAL only: there is nothing to snapshot of them
        }
        // The connector's heartbeat record tells the end of the last transaction before a quiet spell (without transaction
        // metadata, nothing else follows it). It is emitted while no message is read and after a COMMIT, at most once per
        // tick: four small records a second under load (with a heartbeat row, four statements that change nothing).
        Duration tick = boundaries() == TransactionBoundaries.Mode.POSTGRES ? TRANSACTION_END_HEARTBEAT : null;
        if (pg.heartbeat()) {
            // The heartbeat row is written through the replication stream like any change, so the slot's confirmed
            // position moves with it; the router routes only outbox tables, so it publishes nothing. With a shorter tick
            // the statement writes only once the row is as old as the configured interval.
            tick = tick == null || pg.heartbeatInterval().compareTo(tick) < 0 ? pg.heartbeatInterval() : tick;
            p.setProperty("heartbeat.action.query", pg.shard() == null
                    ? PostgresDdl.heartbeat(pg.heartbeatTable(), config.name(), pg.heartbeatInterval(), tick)
                    : PostgresDdl.shardHeartbeat(pg.heartbeatTable(), config.name(), pg.heartbeatInterval(), tick));
            String table = ConnectorProperties.regex(pg.heartbeatTable());
            if (source.tables().isEmpty()) {
                p.setProperty("table.include.list", table);
                p.setProperty("column.include.list", table + "\\..+");
            } else {
                p.setProperty("table.include.list", p.getProperty("table.include.list") + "," + table);
                p.setProperty("column.include.list", p.getProperty("column.include.list") + "," + table + "\\..+");
            }
        }
        if (tick != null) {
            p.setProperty("heartbeat.interval.ms", Long.toString(tick.toMillis()));
        }
        if (!shardFilters.isEmpty()) {
            // A snapshot reads the table itself, not the publication: each shard reads only its rows.
            p.setProperty("snapshot.select.statement.overrides", String.join(",", shardFilters.keySet()));
            shardFilters.forEach((table, filter) -> p.setProperty("snapshot.select.statement.overrides." + table,
                    "SELECT * FROM " + table + " WHERE " + filter));
        }
    }

    /**
     * Without Debezium's transaction metadata, except under exactly-once delivery: there each transaction end commits a
     * Kafka transaction, which must not wait for the next transaction or a heartbeat to be read.
     */
    @Override
    public TransactionBoundaries.Mode boundaries() {
        return config.kafka().exactlyOnce() ? TransactionBoundaries.Mode.POSTGRES_MARKERS : TransactionBoundaries.Mode.POSTGRES;
    }

    @Override
    public String metricsDomain() {
        return "debezium.postgres";
    }

    /** Postgres LSNs the way Postgres prints them: {@code lsn:0/16B3748}. */
    @Override
    public String position(Struct source) {
        return SourcePositions.postgres(source);
    }

    @Override
    public Drain newDrain(EngineProgress progress, javax.management.ObjectName streamingMetrics) {
        return new PostgresDrain(config.source().connection());
    }

    @Override
    public String describe() {
        var pg = config.source().postgres();
        return "slot " + pg.slot() + (pg.shard() == null ? "" : ", " + pg.shard());
    }

    @Override
    public Map<String, String> offsetsAt(String position, Map<String, String> stored) {
        throw new IllegalArgumentException("a Postgres replication slot cannot be moved back to an earlier LSN; "
                + "to publish events again, replay the outbox rows still in the table");
    }

    /**
     * The first of the URL's hosts that takes writes (not in recovery), as the driver's targetServerType=primary picks it;
     * asked again for a while, since a standby may be on its way to primary.
     */
    private io.outboxrouter.config.JdbcUrl.Host primaryHost() {
        long deadline = System.nanoTime() + java.time.Duration.ofSeconds(60).toNanos();
        while (true) {
            var tried = new ArrayList<String>();
            var found = primaryHost(tried);
            if (found != null) {
                return found;
            }
            if (System.nanoTime() > deadline) {
                throw new SourceSetupException("none of the hosts of source.url is a primary (" + String.join("; ", tried) + ")");
            }
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SourceSetupException("interrupted while looking for the primary among the hosts of source.url");
            }
        }
    }

    private io.outboxrouter.config.JdbcUrl.Host primaryHost(List<String> tried) {
        var address = config.source().address();
        var timeouts = new Properties();
        timeouts.setProperty("connectTimeout", "10");
        timeouts.setProperty("socketTimeout", "30");
        for (var host : address.hosts()) {
            var one = new io.outboxrouter.config.JdbcConnection(address.withOnly(host), config.source().connection().user(),
                    config.source().connection().password());
            try (var c = one.open(timeouts); var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_is_in_recovery()")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return host;
                }
                tried.add(host + " is a standby");
            } catch (SQLException e) {
                tried.add(host + ": " + e.getMessage());
            }
        }
        return null;
    }

    @Override
    public Optional<Drift> drift(StoredPosition stored) throws SQLException {
        resumeFromSlot = false;
        firstStart = false;
        firstStartDone = !stored.isEmpty() && stored.firstStartUnderWay();
        if (stored.reset()) {
            return Optional.empty();
        }
        var found = PostgresDrift.find(config, stored);
        resumeFromSlot = found.resumeFromSlot();
        firstStart = found.firstStart();
        return found.drift();
    }

    /** An LSN as Postgres prints it, {@code 0/16B3748}. */
    static String formatLsn(long lsn) {
        return SourcePositions.formatLsn(lsn);
    }

    /** An LSN as Postgres prints it, read back. */
    static long parseLsn(String text) {
        int slash = text.indexOf('/');
        return (Long.parseLong(text.substring(0, slash), 16) << 32) | Long.parseLong(text.substring(slash + 1), 16);
    }

    @Override
    public void awaitStreamFree(String routerName, BooleanSupplier stopping) throws InterruptedException {
        SlotRelease.await(config.source(), routerName, stopping);
    }

    @Override
    public Optional<SlotMonitor> monitor(Consumer<SourceSetupException> drift) {
        return Optional.of(new SlotMonitor(config.source(), config.name(), ConnectorProperties.outboxColumns(config), drift,
                OffsetTableSettings.offsets(config)));
    }
}
