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
            var layouts = PostgresPreflight.otherLayouts(c, config.source().postgres());
            if (layouts.size() > 1) {
                throw new SourceSetupException("slots of " + layouts.size() + " other shard layouts exist (" + layouts + "): hand over "
                        + "from one at a time, or drop the slots of those that hold nothing to publish");
            }
            return layouts.keySet().stream().findFirst();
        } catch (SQLException e) {
            throw new SourceSetupException("cannot look for another shard layout's slots: " + e.getMessage(), e);
        }
    }

    /** Creates the configured layout's publications and slots (a sharded layout's from one point) while another streams. */
    public static void createLayout(RouterConfig config) {
        var pg = config.source().postgres();
        String aggregateId = config.outbox().columns().aggregateId();
        if (pg.sharded()) {
            var first = config.forShard(new Shard(0, pg.shards()));
            PostgresPreflight.create(first.name(), first.source(), aggregateId);
            PostgresPreflight.createLayoutSlots(first.name(), first.source(), name -> false);
            return;
        }
        PostgresPreflight.create(config.name(), config.source(), aggregateId);
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
             var slot = c.prepareStatement("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ?");
             var st = c.createStatement();
             var table = OffsetTable.open(OffsetTableSettings.offsets(earlier))) {
            for (var stream : earlier.shardConfigs()) {
                var spg = stream.source().postgres();
                slot.setString(1, spg.slot());
                slot.execute();
                dropped.add("slot " + spg.slot());
                if (pg.sharded()) {
                    st.execute("DROP PUBLICATION IF EXISTS " + spg.publication());
                    dropped.add("publication " + spg.publication());
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
}
