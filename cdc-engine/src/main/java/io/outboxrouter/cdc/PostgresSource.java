package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.change.SourcePositions;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SnapshotMode;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.io.IOException;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Postgres through {@code pgoutput}: a named replication slot and a publication of only the outbox tables. */
final class PostgresSource implements Source {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresSource.class);
    private static final ObjectMapper JSON = new ObjectMapper();

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
        checks.addAll(Retention.checks(config, outboxSql));
        return checks;
    }

    @Override
    public void prepare() {
        Retention.refuseUnless(Retention.checks(config, outboxSql));
        shardFilters = PostgresPreflight.run(config.name(), config.source(), ConnectorProperties.outboxColumns(config),
                ConnectorProperties.readColumns(config), config.outbox().columns().aggregateId());
        failoverSlots = SlotFailover.ensure(config.source().connection(), java.util.List.of(config.source().postgres().slot()));
    }

    @Override
    public void afterPositionCheck() {
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
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
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
    public Drain newDrain(EngineProgress progress) {
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
        var pg = config.source().postgres();
        String confirmed = null;
        boolean slotExists;
        boolean synced = false;
        String current;
        try (var c = config.source().connection().open()) {
            // synced (Postgres 17): the slot is a copy a standby kept of its primary's, read without naming the column
            try (var ps = c.prepareStatement("SELECT confirmed_flush_lsn::text, coalesce((to_jsonb(s) ->> 'synced')::boolean, false) "
                    + "FROM pg_replication_slots s WHERE slot_name = ?")) {
                ps.setString(1, pg.slot());
                try (var rs = ps.executeQuery()) {
                    slotExists = rs.next();
                    if (slotExists) {
                        confirmed = rs.getString(1);
                        synced = rs.getBoolean(2);
                    }
                }
            }
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_current_wal_lsn()::text")) {
                rs.next();
                current = rs.getString(1);
            }
        }
        String table = config.offsets().table();
        if (!slotExists && stored.isEmpty() && !stored.storedBefore() && pg.shard() != null) {
            // The first start of a layout creates every shard's slot: a shard without one, beside others that have theirs,
            // lost it (dropped), and a slot created now would begin later than the others did.
            var siblings = siblingSlots();
            if (!siblings.isEmpty()) {
                return Optional.of(new Drift("replication slot " + pg.slot() + " of " + pg.shard() + " does not exist, while "
                        + String.join(", ", siblings) + " of the other shards do: it was dropped (or its creation did not finish), "
                        + "and the events of this shard committed since the others began are in no slot",
                        "create it at the current WAL position " + current + ": this shard's events committed before are not "
                                + "published (publish the rows still in the outbox table again with `replay`)"));
            }
        }
        if (!slotExists && (!stored.isEmpty() || stored.storedBefore())) {
            String at = storedLsn(stored) == null ? null : formatLsn(storedLsn(stored));
            return Optional.of(new Drift("replication slot " + pg.slot() + " does not exist, but router " + config.name()
                    + (at == null ? " stored a position in " + table + " before" : " stored position " + at + " in " + table)
                    + ": the slot was dropped while the router was stopped, or this server is a replica or a restore without it "
                    + "(a failover to a standby that kept no copy of the slot). Where the server keeps commit times "
                    + "(track_commit_timestamp = on), `offsets recover` publishes again the outbox rows committed since the "
                    + "router's last published transaction and creates the slot where they end (--dry-run shows them)",
                    "start from a new slot at the current WAL position " + current + ": the events committed "
                            + (at == null ? "since the router last ran" : "between " + at + " and " + current)
                            + " are not published (publish the rows still in the outbox table again with `replay`)"));
        }
        Long storedAt = storedLsn(stored);
        // LSNs are unsigned 64-bit numbers.
        if (storedAt != null && Long.compareUnsigned(storedAt, parseLsn(current)) > 0) {
            // Resuming there would skip what this server writes up to it: its history is not the one the position came from.
            return Optional.of(new Drift("router " + config.name() + "'s stored position " + formatLsn(storedAt) + " in " + table
                    + " is ahead of this server's WAL, which ends at " + current + ": the position comes from another history (a "
                    + "standby promoted before it received what the router had read from the former primary, or a database "
                    + "restored to an earlier point), and resuming there would skip this server's transactions up to it",
                    "forget the stored position and go on from the slot: events published from the former primary for "
                            + "transactions this server does not have stay published"));
        }
        if (slotExists && storedAt != null && confirmed != null && Long.compareUnsigned(parseLsn(confirmed), storedAt) > 0) {
            // The slot is only ever confirmed up to a position stored here first: a slot ahead of it was created again
            // (dropped and re-created by hand, another tool's slot of the same name) or the offsets table was restored.
            return Optional.of(new Drift("replication slot " + pg.slot() + " is at " + confirmed + ", ahead of router "
                    + config.name() + "'s stored position " + formatLsn(storedAt) + " in " + table + ". Either the slot was "
                    + "dropped and created again (the changes between the two are gone from it and were never published), or "
                    + table + " was restored from an older backup (they were published already)"
                    + (synced ? ". The slot is a copy synchronized from a former primary: if this server is a standby promoted "
                    + "before its copy of " + table + " caught up with the slot's (asynchronous replication), the events in "
                    + "between were published from the former primary, and nothing is lost" : ""),
                    "resume from the slot at " + confirmed + ": after a re-created slot, the events committed between "
                            + formatLsn(storedAt) + " and " + confirmed + " are not published (publish the rows still in the "
                            + "outbox table again with `replay`); after restored offsets, nothing is lost"));
        }
        if (slotExists && stored.catalog().isPresent()) {
            try (var c = config.source().connection().open()) {
                var changed = SlotMonitor.changedWhileStopped(c, config.source(), ConnectorProperties.outboxColumns(config),
                        stored.catalog().get());
                if (changed.isPresent()) {
                    return changed;
                }
            }
        }
        firstStart = !slotExists && stored.isEmpty() && !stored.storedBefore();
        if (slotExists && stored.isEmpty() && pg.shard() != null && !stored.storedBefore()) {
            LOG.info("Router {} starts from its slot {} at {}, created with the other shards' slots", config.name(), pg.slot(), confirmed);
        } else if (slotExists && stored.isEmpty()) {
            // Not a loss: without a stored position the connector streams from the slot's confirmed position, which the
            // slot only moves after a position was stored here; events after it may be published again, none skipped.
            // An initial snapshot now would stream from its own later position instead, past rows deleted meanwhile.
            // Unless the slot is the first start's, stopped before its snapshot stored anything: that snapshot is taken again.
            resumeFromSlot = config.source().snapshot() == SnapshotMode.INITIAL && !stored.firstStartUnderWay();
            LOG.warn("Router {} has no stored position in {}{}; resuming from its slot {} at {}: events after it may be published "
                    + "again, none is skipped{}", config.name(), table, stored.storedBefore() ? " (its rows were deleted or the table "
                    + "truncated)" : "", pg.slot(), confirmed, resumeFromSlot ? ". The initial snapshot (source.snapshot) is not "
                    + "taken: the slot holds the changes since it was last confirmed, which a snapshot would go past; to publish "
                    + "the rows in the table again, use replay" : "");
        }
        return Optional.empty();
    }

    /** The slots of this shard's siblings (the same layout) that exist; waits while another process sets the layout up. */
    private List<String> siblingSlots() throws SQLException {
        var layout = PostgresShards.Layout.of(config.source(), config.name());
        try (var c = config.source().connection().open(); var lock = layout.lock(c)) {
            var found = new ArrayList<>(layout.existingSlots(c));
            found.remove(config.source().postgres().slot());
            return found;
        }
    }

    /**
     * The furthest LSN of a stored Debezium Postgres offset ({@code lsn}, {@code lsn_proc}, {@code lsn_commit}): the slot is
     * confirmed to {@code lsn_commit} (or {@code lsn_proc}) after the offset is stored, never beyond. Null when unreadable.
     */
    private static Long storedLsn(StoredPosition stored) {
        if (stored.value() == null) {
            return null;
        }
        try {
            var offset = JSON.readTree(stored.value());
            Long max = null;
            for (String key : List.of("lsn", "lsn_proc", "lsn_commit")) {
                var lsn = offset.path(key);
                if (lsn.canConvertToLong() && (max == null || Long.compareUnsigned(lsn.asLong(), max) > 0)) {
                    max = lsn.asLong();
                }
            }
            return max;
        } catch (IOException e) {
            return null;
        }
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
