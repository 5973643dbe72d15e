package io.outboxrouter.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.OffsetsTopic;
import io.outboxrouter.offsets.EngineOffsets;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code offsets show|set|reset|recover}: the stored source position of one router. */
@Command(name = "offsets", mixinStandardHelpOptions = true,
        description = "Shows, sets, resets or recovers the router's stored source position (all but show refuse while the router runs).",
        subcommands = {OffsetsCommand.Show.class, OffsetsCommand.Set.class, OffsetsCommand.Reset.class, OffsetsRecoverCommand.class})
final class OffsetsCommand {
    private static final ObjectMapper JSON = new ObjectMapper();

    static OffsetTable open(RouterConfig c) {
        return OffsetTable.open(OffsetTableSettings.offsets(c));
    }

    /**
     * Takes the router's lock for the duration of a change, so that the change cannot race a running router.
     *
     * @return null, with the reason on stderr, when a router with that name is running
     */
    static RouterLock lockOrReport(RouterConfig c) throws SQLException {
        var settings = OffsetTableSettings.offsets(c);
        var lock = RouterLock.tryAcquire(settings);
        if (lock.isEmpty()) {
            System.err.println("outbox-router: " + RouterLock.describe(settings) + " is running (or standing by); "
                    + "stop it first, then change its offsets");
            return null;
        }
        return lock.get();
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Prints the stored position.")
    static final class Show implements Callable<Integer> {
        @Mixin
        ConfigOption config;

        @Option(names = "--json", description = "One JSON object, for scripts.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            var c = config.loadOrReport();
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            try (var table = open(c)) {
                table.createIfMissing();
                // A sharded router's position is one per shard, stored under each shard's name.
                var rows = new ArrayList<OffsetTable.Row>();
                for (var stream : c.shardConfigs()) {
                    rows.addAll(table.rows(Optional.of(stream.name())));
                }
                if (json) {
                    var out = JSON.createObjectNode().put("router", c.name()).put("table", c.offsets().table());
                    var entries = out.putArray("offsets");
                    for (var r : rows) {
                        entries.addObject().put("router", r.routerName()).put("key", r.key()).set("value", JSON.readTree(r.value()));
                        ((ObjectNode) entries.get(entries.size() - 1)).put("updated_at", r.updatedAt().toString());
                    }
                    System.out.println(out);
                } else if (rows.isEmpty()) {
                    System.out.println("router " + c.name() + ": no stored position in " + c.offsets().table()
                            + " (the next start begins as source.snapshot says)");
                } else {
                    rows.forEach(r -> System.out.println("router " + r.routerName() + "  updated " + r.updatedAt()
                            + "\n  key   " + r.key() + "\n  value " + r.value()));
                }
                if (c.kafka().exactlyOnce() && !json) {
                    showCommitted(c, rows);
                }
                return 0;
            }
        }
    }

    /** Exactly-once: the positions committed to the offsets topic, which the next start resumes from, against the table's. */
    static void showCommitted(RouterConfig c, List<OffsetTable.Row> rows) {
        var topic = new OffsetsTopic(c.kafka());
        for (var stream : c.shardConfigs()) {
            Map<String, String> committed;
            try {
                committed = topic.readStream(stream.name(), shardIndex(stream));
            } catch (RuntimeException e) {
                System.out.println("router " + stream.name() + ": cannot read the offsets topic " + topic.name() + ": " + e.getMessage());
                continue;
            }
            if (committed.isEmpty()) {
                System.out.println("router " + stream.name() + ": no position committed to the offsets topic " + topic.name() + " yet");
            }
            committed.forEach((key, value) -> {
                var inTable = rows.stream().filter(r -> r.routerName().equals(stream.name()) && r.key().equals(key)).findFirst();
                boolean same = inTable.isPresent() && EngineOffsets.samePosition(value, inTable.get().value());
                System.out.println("router " + stream.name() + "  committed to " + topic.name() + (same ? " (the table agrees)"
                        : " (the table differs: the next start resumes from this one and corrects the table)")
                        + "\n  key   " + key + "\n  value " + value);
            });
        }
    }

    private static int shardIndex(RouterConfig stream) {
        return io.outboxrouter.app.StoredPositions.shardIndex(stream);
    }

    /** {@link io.outboxrouter.app.StoredPositions#writeCommitted}, saying so when the offsets topic was written too. */
    static void writeCommitted(RouterConfig stream, Map<String, String> entries) throws Exception {
        if (io.outboxrouter.app.StoredPositions.writeCommitted(stream, entries)) {
            System.out.println("router " + stream.name() + ": written to the offsets topic " + stream.kafka().offsetsTopic() + " too");
        }
    }

    @Command(name = "set", mixinStandardHelpOptions = true,
            description = {"Sets the stored position, so that the next start publishes again from there.",
                    "MySQL/MariaDB: --position binlog:FILE:POS[,gtid:D-S-N], as in a record's source.position header; the "
                            + "server must still retain that binlog. Postgres cannot rewind a slot: use the outbox rows still in the table instead."})
    static final class Set implements Callable<Integer> {
        @Mixin
        ConfigOption config;

        @Option(names = "--position", required = true, paramLabel = "POSITION", description = "binlog:FILE:POS[,gtid:D-S-N]")
        String position;

        @Override
        public Integer call() throws Exception {
            var c = config.loadOrReport();
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            var lock = lockOrReport(c);
            if (lock == null) {
                return Main.EXIT_FAILED;
            }
            try (lock; var table = open(c)) {
                table.createIfMissing();
                table.nextFence(c.name()); // a process that held the router before cannot write over this position
                var stored = table.read(c.name());
                Map<String, String> entries;
                try {
                    entries = Source.of(c).offsetsAt(position, stored);
                } catch (IllegalArgumentException e) {
                    System.err.println("outbox-router: " + e.getMessage());
                    return Main.EXIT_USAGE;
                } catch (IllegalStateException e) {
                    System.err.println("outbox-router: " + e.getMessage());
                    return Main.EXIT_FAILED;
                }
                writeCommitted(c, entries);
                var withAuthority = new LinkedHashMap<>(entries);
                withAuthority.put(OffsetTable.AUTHORITY_KEY, OffsetTable.TABLE); // the next start resumes from this table
                withAuthority.put(OffsetTable.RETENTION_HOLD_KEY, OffsetTable.retentionHoldFromNow()); // rows to replay are kept
                withAuthority.put(OffsetTable.TIMELINE_KEY, null); // a position given by hand is of the server as it is now
                table.write(c.name(), withAuthority);
                entries.forEach((key, value) -> System.out.println("router " + c.name() + ": position set to " + value
                        + (stored.containsKey(key) ? " (was " + stored.get(key) + ")" : "") + "; the next start publishes again from there"));
                return 0;
            }
        }
    }

    @Command(name = "reset", mixinStandardHelpOptions = true,
            description = "Deletes the stored position; the next start begins as source.snapshot says. Needs --yes.")
    static final class Reset implements Callable<Integer> {
        @Mixin
        ConfigOption config;

        @Option(names = "--yes", description = "Confirms: without a stored position, events may be published again or skipped.")
        boolean yes;

        @Override
        public Integer call() throws Exception {
            var c = config.loadOrReport();
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            if (!yes) {
                System.err.println("outbox-router: offsets reset deletes router " + c.name() + "'s stored position; "
                        + "run it again with --yes to confirm");
                return Main.EXIT_USAGE;
            }
            // A sharded router: every shard's, each under its own lock, all taken before anything is deleted.
            var locks = new ArrayList<RouterLock>();
            try {
                for (var stream : c.shardConfigs()) {
                    var lock = lockOrReport(stream);
                    if (lock == null) {
                        return Main.EXIT_FAILED;
                    }
                    locks.add(lock);
                }
                try (var table = open(c)) {
                    table.createIfMissing();
                    for (var stream : c.shardConfigs()) {
                        table.nextFence(stream.name()); // a process that held the router before cannot write a position back
                        var forgotten = new java.util.HashMap<String, String>();
                        table.read(stream.name()).keySet().forEach(k -> forgotten.put(k, null));
                        int stored = forgotten.size();
                        if (stream.kafka().exactlyOnce()) {
                            new OffsetsTopic(stream.kafka()).readStream(stream.name(), shardIndex(stream)).keySet()
                                    .forEach(k -> forgotten.put(k, null));
                        }
                        writeCommitted(stream, forgotten);
                        Source.of(stream).resetPosition(table, stream.name());
                        table.write(stream.name(), Map.of(OffsetTable.AUTHORITY_KEY, OffsetTable.TABLE));
                        System.out.println("router " + stream.name() + ": deleted " + stored + " stored position(s); the next start "
                                + "begins as source.snapshot says");
                    }
                }
                return 0;
            } finally {
                locks.forEach(RouterLock::close);
            }
        }
    }

    private OffsetsCommand() {
    }
}
