package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.Shard;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moving a Postgres router from one shard layout to another while writers go on writing ({@code reshard}): the new
 * layout's slots are created first, from one point; the earlier layout then runs until it has published everything
 * committed before that point; then its slots, its shard publications and its stored positions go. Events committed
 * between the new slots' start and the earlier layout's last one are published by both (consumers drop them by id);
 * none is in neither.
 */
public final class LayoutHandover {
    private static final Logger LOG = LoggerFactory.getLogger(LayoutHandover.class);

    private LayoutHandover() {
    }

    /**
     * The number of shards of the layout whose slots exist beside the configured one (1: unsharded); empty when there is none.
     *
     * @throws SourceSetupException when slots of more than one other layout exist: which to drain is the operator's call
     */
    public static Optional<Integer> earlierLayout(RouterConfig config) {
        try (var c = config.source().connection().open()) {
            var layouts = PostgresShards.otherLayouts(c, config.source().postgres());
            if (layouts.size() > 1) {
                throw new SourceSetupException("slots of " + layouts.size() + " other shard layouts exist (" + layouts + "): hand over "
                        + "from one at a time, or drop the slots of those that hold nothing to publish");
            }
            return layouts.keySet().stream().findFirst();
        } catch (SQLException e) {
            throw new SourceSetupException("cannot look for another shard layout's slots: " + e.getMessage(), e);
        }
    }

    /**
     * Whether slots of the configured layout exist already, beside the earlier one's: a handover that failed or was stopped
     * before the earlier layout was dropped. Its slots hold nothing the earlier ones lack, and may be incomplete: they are
     * dropped and made again.
     */
    public static boolean layoutStarted(RouterConfig config) {
        try (var c = config.source().connection().open(); var ps = c.prepareStatement(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name = ANY (?)")) {
            ps.setArray(1, c.createArrayOf("text", config.shardConfigs().stream().map(s -> s.source().postgres().slot()).toArray()));
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getInt(1) > 0;
            }
        } catch (SQLException e) {
            throw new SourceSetupException("cannot look for the new layout's slots: " + e.getMessage(), e);
        }
    }

    /**
     * Every prerequisite of the configured layout but the one a handover breaks on purpose (another layout's slots), so
     * that a layout that could not start is found before the earlier one, which holds the events meanwhile, is dropped.
     *
     * @throws SourceSetupException naming every failed prerequisite with its fix
     */
    public static void check(RouterConfig config) {
        var failed = new ArrayList<String>();
        for (var stream : config.shardConfigs()) {
            Source.of(stream).checks().stream().filter(k -> !k.ok() && !k.name().endsWith("shard layout") && !k.name().endsWith("replication slot"))
                    .map(k -> (stream.shard().map(s -> s + ": ").orElse("")) + k.problem()).forEach(failed::add);
        }
        if (!failed.isEmpty()) {
            throw new SourceSetupException("the new layout could not start: " + String.join("; ", failed) + ". Nothing was dropped; "
                    + "fix it and run reshard again");
        }
    }

    /** Creates the configured layout's publications and slots (a sharded layout's from one point) while another streams. */
    public static void createLayout(RouterConfig config) {
        var pg = config.source().postgres();
        String aggregateId = config.outbox().columns().aggregateId();
        if (pg.sharded()) {
            var first = config.forShard(new Shard(0, pg.shards()));
            PostgresPreflight.create(first.name(), first.source(), ConnectorProperties.readColumns(config), aggregateId);
            PostgresShards.createLayoutSlots(first.name(), first.source(), name -> false);
            return;
        }
        PostgresPreflight.create(config.name(), config.source(), ConnectorProperties.readColumns(config), aggregateId);
        try (var c = config.source().connection().open()) {
            PostgresPreflight.createSlot(c, pg.slot());
        } catch (SQLException e) {
            throw new SourceSetupException("cannot create replication slot " + pg.slot() + ": " + e.getMessage(), e);
        }
    }

    /**
     * Drops an earlier layout once drained: its slots, its shard publications (an unsharded layout's publication may be
     * the operator's own, and is left), and its stored positions.
     *
     * @return what was dropped, for the operator
     */
    public static List<String> dropLayout(RouterConfig earlier) {
        var pg = earlier.source().postgres();
        var dropped = new ArrayList<String>();
        try (var c = earlier.source().connection().open();
             var slot = c.prepareStatement("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ? "
                     + "AND NOT active");
             var active = c.prepareStatement("SELECT count(*) FROM pg_replication_slots WHERE slot_name = ? AND active");
             var st = c.createStatement();
             var table = OffsetTable.open(OffsetTableSettings.offsets(earlier))) {
            // Slots first, each once the walsender of the router that read it has let it go; positions only after all.
            for (var stream : earlier.shardConfigs()) {
                var spg = stream.source().postgres();
                awaitInactive(active, spg.slot());
                slot.setString(1, spg.slot());
                slot.execute();
                dropped.add("slot " + spg.slot());
            }
            for (var stream : earlier.shardConfigs()) {
                if (pg.sharded()) {
                    st.execute("DROP PUBLICATION IF EXISTS " + stream.source().postgres().publication());
                    dropped.add("publication " + stream.source().postgres().publication());
                }
                table.delete(stream.name());
                dropped.add("stored position of " + stream.name());
            }
        } catch (SQLException e) {
            throw new SourceSetupException("cannot drop the earlier layout: " + e.getMessage(), e);
        }
        LOG.info("Dropped the earlier shard layout of router {}: {}", earlier.name(), String.join(", ", dropped));
        return dropped;
    }

    private static void awaitInactive(java.sql.PreparedStatement active, String slot) throws SQLException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (true) {
            active.setString(1, slot);
            try (var rs = active.executeQuery()) {
                if (!rs.next() || rs.getInt(1) == 0) {
                    return;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new SourceSetupException("replication slot " + slot + " is still read by another session after 60 s");
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SourceSetupException("interrupted while waiting for slot " + slot + " to be released");
            }
        }
    }
}
