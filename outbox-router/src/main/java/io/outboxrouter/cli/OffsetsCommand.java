package io.outboxrouter.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code offsets show|set|reset}: the stored source position of one router. */
@Command(name = "offsets", mixinStandardHelpOptions = true,
        description = "Shows, sets or resets the router's stored source position (set and reset refuse while the router runs).",
        subcommands = {OffsetsCommand.Show.class, OffsetsCommand.Set.class, OffsetsCommand.Reset.class})
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

    /** The key the engine stores the position under: {@code ["<name>",{"server":"<name>"}]}. */
    static String offsetKey(RouterConfig c) {
        return JSON.createArrayNode().add(c.name()).add(JSON.createObjectNode().put("server", c.name())).toString();
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
                var rows = table.rows(Optional.of(c.name()));
                if (json) {
                    var out = JSON.createObjectNode().put("router", c.name()).put("table", c.offsets().table());
                    var entries = out.putArray("offsets");
                    for (var r : rows) {
                        entries.addObject().put("key", r.key()).set("value", JSON.readTree(r.value()));
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
                return 0;
            }
        }
    }

    @Command(name = "set", mixinStandardHelpOptions = true,
            description = {"Sets the stored position, so that the next start publishes again from there.",
                    "MySQL/MariaDB: --position binlog:FILE:POS[,gtid:D-S-N], as in a record's source.position header; the "
                            + "server must still retain that binlog. Postgres cannot rewind a slot: use the outbox rows still in the table instead."})
    static final class Set implements Callable<Integer> {
        private static final Pattern BINLOG = Pattern.compile("binlog:([^:,]+):(\\d+)(?:,gtid:(\\d+)-(\\d+)-(\\d+))?");

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
            if (!c.source().kind().isBinlog()) {
                System.err.println("outbox-router: a Postgres replication slot cannot be moved back to an earlier LSN; "
                        + "to publish events again, replay the outbox rows still in the table");
                return Main.EXIT_USAGE;
            }
            var m = BINLOG.matcher(position.trim());
            if (!m.matches()) {
                System.err.println("outbox-router: --position must look like binlog:mariadb-bin.000003:1234 (was \"" + position + "\")");
                return Main.EXIT_USAGE;
            }
            String file = m.group(1);
            long pos = Long.parseLong(m.group(2));
            Optional<String> notRetained = checkRetained(c, file, pos);
            if (notRetained.isPresent()) {
                System.err.println("outbox-router: " + notRetained.get());
                return Main.EXIT_FAILED;
            }
            var lock = lockOrReport(c);
            if (lock == null) {
                return Main.EXIT_FAILED;
            }
            try (lock; var table = open(c)) {
                table.createIfMissing();
                String key = offsetKey(c);
                var value = JSON.createObjectNode();
                String previous = table.read(c.name()).get(key);
                if (previous != null && JSON.readTree(previous) instanceof ObjectNode old && old.has("server_id")) {
                    value.set("server_id", old.get("server_id"));
                }
                // No skip counters: the connector starts reading at exactly this file and position.
                value.put("file", file).put("pos", pos);
                if (m.group(3) != null) {
                    // MariaDB resumes by GTID: the state just before this transaction, in its domain; other domains as stored.
                    String restart = m.group(3) + "-" + m.group(4) + "-" + (Long.parseLong(m.group(5)) - 1);
                    value.put("gtids", mergeGtid(previous, m.group(3), restart));
                }
                var entries = new LinkedHashMap<String, String>();
                entries.put(key, value.toString());
                table.write(c.name(), entries);
                System.out.println("router " + c.name() + ": position set to " + file + ":" + pos
                        + (previous == null ? "" : " (was " + previous + ")") + "; the next start publishes again from there");
                return 0;
            }
        }

        /** The stored GTID state with the entry of {@code domain} replaced by {@code restart}. */
        private static String mergeGtid(String previous, String domain, String restart) throws Exception {
            var parts = new java.util.ArrayList<String>();
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

        /** Empty when the server still has the binlog file and the position lies within it; else the reason. */
        private static Optional<String> checkRetained(RouterConfig c, String file, long pos) throws SQLException {
            var conn = c.source().connection();
            var retained = new LinkedHashMap<String, Long>();
            try (var jdbc = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal());
                 var st = jdbc.createStatement(); var rs = st.executeQuery("SHOW BINARY LOGS")) {
                while (rs.next()) {
                    retained.put(rs.getString(1), rs.getLong(2));
                }
            }
            Long size = retained.get(file);
            if (size == null) {
                return Optional.of("the server no longer retains " + file + " (it has " + String.join(", ", retained.keySet()) + ")");
            }
            return pos > size ? Optional.of(file + " is only " + size + " bytes long; position " + pos + " is past its end")
                    : Optional.empty();
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
        public Integer call() throws SQLException {
            var c = config.loadOrReport();
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            if (!yes) {
                System.err.println("outbox-router: offsets reset deletes router " + c.name() + "'s stored position; "
                        + "run it again with --yes to confirm");
                return Main.EXIT_USAGE;
            }
            var lock = lockOrReport(c);
            if (lock == null) {
                return Main.EXIT_FAILED;
            }
            try (lock; var table = open(c)) {
                table.createIfMissing();
                int deleted = table.delete(c.name());
                System.out.println("router " + c.name() + ": deleted " + deleted + " stored position(s)");
                return 0;
            }
        }
    }

    private OffsetsCommand() {
    }
}
