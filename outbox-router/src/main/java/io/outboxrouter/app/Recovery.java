package io.outboxrouter.app;

import io.outboxrouter.cdc.SlotRecovery;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.routing.DeadLetters;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * {@code offsets recover}'s work, for a Postgres router whose replication slot was lost while a position is stored: the
 * outbox rows committed since its last published transaction are published again, a new slot is created where they end,
 * and that position is stored, so that the next start streams from there with nothing in between lost. The command
 * parses and prints; this decides and does. The caller holds the router's lock throughout.
 */
public final class Recovery {
    private final RouterConfig config;
    private final OffsetTable table;
    private final SlotRecovery.Plan plan;
    private final Instant since;
    private final Replay replay;

    private Recovery(RouterConfig config, OffsetTable table, SlotRecovery.Plan plan, Duration reachBack) {
        this.config = config;
        this.table = table;
        this.plan = plan;
        this.since = plan.since(reachBack);
        this.replay = new Replay(config);
    }

    /** Routers this way of recovering does not serve; the command says what each does instead. */
    public enum Unsupported {
        /** MySQL and MariaDB resume by GTID on a replica. */
        BINLOG,
        /** Logical decoding messages leave no rows to publish again. */
        MESSAGES_ONLY,
        /** One slot per shard. */
        SHARDED
    }

    /** Why this router is not recovered this way, or empty when it is. */
    public static Optional<Unsupported> unsupported(RouterConfig c) {
        if (!c.source().kind().hasSlots()) {
            return Optional.of(Unsupported.BINLOG);
        }
        if (c.source().tables().isEmpty()) {
            return Optional.of(Unsupported.MESSAGES_ONLY);
        }
        if (c.source().postgres().shards() > 1) {
            return Optional.of(Unsupported.SHARDED);
        }
        return Optional.empty();
    }

    /**
     * What would be published again, from the stored position and the server.
     *
     * @param reachBack how long before the last published transaction's commit the rows are taken too
     * @throws IllegalStateException with the reason when there is nothing to recover (the slot exists, no position)
     */
    public static Recovery plan(RouterConfig c, OffsetTable table, Duration reachBack) throws java.sql.SQLException {
        table.createIfMissing();
        return new Recovery(c, table, SlotRecovery.plan(c, table.read(c.name())), reachBack);
    }

    public SlotRecovery.Plan lost() {
        return plan;
    }

    /** The commit time from which rows are published again. */
    public Instant since() {
        return since;
    }

    /** Per outbox table, in what order and from where its rows are read again. */
    public Map<String, String> tables() throws java.sql.SQLException {
        var tables = new LinkedHashMap<String, String>();
        for (String t : config.source().tables()) {
            tables.put(t, replay.order(t, filter(null)).description());
        }
        return tables;
    }

    /** The routed records that would be published again, to {@code each}; nothing is sent or changed. */
    public Replay.Result dryRun(Consumer<ProducerRecord<byte[], byte[]>> each, Consumer<String> rejected) throws Exception {
        return replay.run(Optional.empty(), each, rejected, filter(null));
    }

    /** What the recovery did. */
    public record Recovered(Replay.Result result, boolean deadLettered) {
    }

    /** Told each step as it is done, so that an operator sees how far it got if a later one fails. */
    public interface Progress {
        /** The new slot exists, at this position. */
        void slotCreated(String consistentPoint);

        /** Exactly-once: the new position is in the offsets topic (the offsets table follows). */
        void offsetsTopicWritten();
    }

    /** The recovery stopped before anything was stored; {@code notDropped} says why the new slot is still there, if it is. */
    public static final class Stopped extends Exception {
        private final transient Optional<String> notDropped;

        Stopped(String reason, Optional<String> notDropped) {
            super(reason);
            this.notDropped = notDropped;
        }

        public Optional<String> notDropped() {
            return notDropped;
        }
    }

    /**
     * Publishes the rows again (under a new fencing token, so that a process that held the router before cannot write over
     * what follows), creates the slot where they end, and stores its position. Rows that cannot be routed go where the
     * stream would send them: dead letters, or a stop before anything is stored.
     */
    public Recovered apply(Consumer<String> rejected, Progress progress) throws Exception {
        var policy = config.routing().deadLetters().policy();
        table.nextFence(config.name());
        var deadLetters = policy == DeadLetterPolicy.DEAD_LETTER || policy == DeadLetterPolicy.PARK_AGGREGATE // it parks nothing
                ? Optional.of(new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns()))
                : Optional.<DeadLetters>empty();
        Replay.Result result;
        Map<String, String> entries;
        try (var slot = SlotRecovery.create(config)) {
            String stopped = null;
            result = null;
            try (var sink = Replay.sink(config)) {
                result = replay.run(Optional.of(sink), r -> { }, rejected, filter(slot.snapshot()), deadLetters);
                if (result.rejected() > 0 && policy == DeadLetterPolicy.FAIL) {
                    stopped = result.rejected() + " row(s) cannot be routed, and routing.dead-letters.policy is fail: fix them "
                            + "(see above), then run it again";
                }
            } catch (Exception e) {
                stopped = String.valueOf(e.getMessage());
            }
            if (stopped != null) {
                throw new Stopped(stopped, slot.drop());
            }
            entries = slot.offsets(plan);
            progress.slotCreated(slot.consistentPoint());
        }
        if (StoredPositions.writeCommitted(config, entries)) {
            progress.offsetsTopicWritten();
        }
        var withAuthority = new LinkedHashMap<>(entries);
        withAuthority.put(OffsetTable.AUTHORITY_KEY, OffsetTable.TABLE);
        withAuthority.put(OffsetTable.GAP_KEY, null);
        withAuthority.put(OffsetTable.TIMELINE_KEY, null); // the new slot's position is of the server as it is now
        table.write(config.name(), withAuthority);
        return new Recovered(result, deadLetters.isPresent());
    }

    private ReplayFilter filter(String snapshot) {
        return new ReplayFilter(null, null, null, null, null, "created_at", List.of(), null,
                new ReplayFilter.Recovery(since, plan.publishedXid(), snapshot));
    }
}
