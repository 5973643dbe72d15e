package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.SnapshotMode;
import java.io.IOException;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What changed behind a stopped Postgres router: its slot, the WAL it reads, and its tables' shapes compared with its
 * stored position ({@link SourcePreflight#drift}).
 */
final class PostgresDrift {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresDrift.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private PostgresDrift() {
    }

    /**
     * @param drift          what changed, with the choice to accept it
     * @param resumeFromSlot no drift, a slot and no stored position: stream from the slot without the initial snapshot
     * @param firstStart     no drift, no slot and no stored position: this is the router's first start
     */
    record Found(Optional<Drift> drift, boolean resumeFromSlot, boolean firstStart) {
        static Found of(Drift drift) {
            return new Found(Optional.of(drift), false, false);
        }
    }

    /** The server's history, for the check of a stored position's timeline; empty (and logged) when it cannot be read. */
    static Optional<PostgresHistory> history(RouterConfig config) {
        try {
            return Optional.of(PostgresHistory.read(config.source().connection()));
        } catch (SQLException | RuntimeException e) {
            LOG.warn("Router {}: cannot read the server's timeline history ({}): a stored position read from a former primary "
                    + "that this server never had is not told apart", config.name(), e.getMessage());
            return Optional.empty();
        }
    }

    /** The drift of a stored position that was not reset by the operator. */
    static Found find(RouterConfig config, StoredPosition stored) throws SQLException {
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
            var siblings = siblingSlots(config);
            if (!siblings.isEmpty()) {
                return Found.of(new Drift("replication slot " + pg.slot() + " of " + pg.shard() + " does not exist, while "
                        + String.join(", ", siblings) + " of the other shards do: it was dropped (or its creation did not finish), "
                        + "and the events of this shard committed since the others began are in no slot",
                        "create it at the current WAL position " + current + ": this shard's events committed before are not "
                                + "published (publish the rows still in the outbox table again with `replay`)"));
            }
        }
        if (!slotExists && (!stored.isEmpty() || stored.storedBefore())) {
            String at = storedLsn(stored) == null ? null : PostgresSource.formatLsn(storedLsn(stored));
            return Found.of(new Drift("replication slot " + pg.slot() + " does not exist, but router " + config.name()
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
        var forked = storedAt == null ? Optional.<Drift>empty() : forked(config, stored, storedAt, confirmed);
        if (forked.isPresent()) {
            return Found.of(forked.get());
        }
        // LSNs are unsigned 64-bit numbers.
        if (storedAt != null && Long.compareUnsigned(storedAt, PostgresSource.parseLsn(current)) > 0) {
            // Resuming there would skip what this server writes up to it: its history is not the one the position came from.
            return Found.of(new Drift("router " + config.name() + "'s stored position " + PostgresSource.formatLsn(storedAt) + " in " + table
                    + " is ahead of this server's WAL, which ends at " + current + ": the position comes from another history (a "
                    + "standby promoted before it received what the router had read from the former primary, or a database "
                    + "restored to an earlier point), and resuming there would skip this server's transactions up to it",
                    "forget the stored position and go on from the slot: events published from the former primary for "
                            + "transactions this server does not have stay published"));
        }
        if (slotExists && storedAt != null && confirmed != null && Long.compareUnsigned(PostgresSource.parseLsn(confirmed), storedAt) > 0) {
            // The slot is only ever confirmed up to a position stored here first: a slot ahead of it was created again
            // (dropped and re-created by hand, another tool's slot of the same name) or the offsets table was restored.
            return Found.of(new Drift("replication slot " + pg.slot() + " is at " + confirmed + ", ahead of router "
                    + config.name() + "'s stored position " + PostgresSource.formatLsn(storedAt) + " in " + table + ". Either the slot was "
                    + "dropped and created again (the changes between the two are gone from it and were never published), or "
                    + table + " was restored from an older backup (they were published already)"
                    + (synced ? ". The slot is a copy synchronized from a former primary: if this server is a standby promoted "
                    + "before its copy of " + table + " caught up with the slot's (asynchronous replication), the events in "
                    + "between were published from the former primary, and nothing is lost" : ""),
                    "resume from the slot at " + confirmed + ": after a re-created slot, the events committed between "
                            + PostgresSource.formatLsn(storedAt) + " and " + confirmed + " are not published (publish the rows still in the "
                            + "outbox table again with `replay`); after restored offsets, nothing is lost"));
        }
        if (slotExists && stored.catalog().isPresent()) {
            try (var c = config.source().connection().open()) {
                var changed = SlotMonitor.changedWhileStopped(c, config.source(), ConnectorProperties.outboxColumns(config),
                        stored.catalog().get());
                if (changed.isPresent()) {
                    return new Found(changed, false, false);
                }
            }
        }
        boolean firstStart = !slotExists && stored.isEmpty() && !stored.storedBefore();
        boolean resumeFromSlot = false;
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
        return new Found(Optional.empty(), resumeFromSlot, firstStart);
    }

    /**
     * A stored position read on a timeline this server's history left before it: the former primary's transactions from
     * the branch point on are not here, and this server's own, written at the same LSNs since its promotion, would be
     * skipped by a resume there (its WAL may long have passed the position).
     */
    private static Optional<Drift> forked(RouterConfig config, StoredPosition stored, long storedAt, String confirmed) {
        var stamp = stored.timeline().flatMap(PostgresHistory.Stamp::of);
        var history = history(config);
        if (history.isEmpty()) {
            return Optional.empty();
        }
        if (stamp.isEmpty()) {
            Long promoted = history.get().lastSwitch();
            if (promoted != null && Long.compareUnsigned(storedAt, promoted) >= 0) {
                LOG.warn("Router {}: the stored position {} keeps no timeline (written by an earlier build, or by offsets set), and this "
                        + "server's timeline {} began at {}: the router takes the position to be of this timeline. If it was read "
                        + "from the former primary after that point, the self-audit reports the rows this server wrote in between",
                        config.name(), PostgresSource.formatLsn(storedAt), history.get().timeline(), PostgresSource.formatLsn(promoted));
            }
            return Optional.empty();
        }
        var why = history.get().missing(stamp.get(), storedAt);
        if (why.isEmpty()) {
            return Optional.empty();
        }
        var pg = config.source().postgres();
        String at = PostgresSource.formatLsn(storedAt);
        return Optional.of(new Drift("router " + config.name() + "'s stored position " + at + " in " + config.offsets().table()
                + " is not in this server's history: " + why.get() + ". The events published for those transactions are of "
                + "transactions this server does not have, and resuming at " + at + " would skip the transactions this server "
                + "wrote up to it since (the standby was promoted without synchronized_standby_slots, or the offsets were kept "
                + "in the offsets topic or on another database, which the standby's copy did not hold back)",
                "forget the stored position and go on from slot " + pg.slot() + (confirmed == null ? "" : " at " + confirmed)
                        + ": this server's events from there are published (some again); those published from the former primary "
                        + "stay published"));
    }

    /** The slots of this shard's siblings (the same layout) that exist; waits while another process sets the layout up. */
    private static List<String> siblingSlots(RouterConfig config) throws SQLException {
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
}
