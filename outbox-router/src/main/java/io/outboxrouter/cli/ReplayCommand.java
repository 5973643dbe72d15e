package io.outboxrouter.cli;

import io.outboxrouter.cdc.ChangeEvent;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.routing.OutboxRouting;
import io.outboxrouter.routing.RoutingResult;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Publishes again the outbox rows still in the table, by filter, in the order of a time column, through the same routing
 * as the stream, each marked with a {@code replayed} header. This is how Postgres users replay: a slot cannot rewind.
 */
@Command(name = "replay", mixinStandardHelpOptions = true,
        description = {"Publishes again the outbox rows still in the table that match the filters, oldest first, "
                + "each with the header replayed=true. Rows deleted after publishing cannot be replayed.",
                "--dry-run counts and lists them without publishing."})
final class ReplayCommand implements Callable<Integer> {
    private static final Pattern COLUMN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final int CHUNK = 1000;

    @Mixin
    ConfigOption config;

    @Option(names = "--since", paramLabel = "INSTANT", description = "Only rows whose time column is at or after this (ISO-8601).")
    Instant since;

    @Option(names = "--until", paramLabel = "INSTANT", description = "Only rows whose time column is before this (ISO-8601).")
    Instant until;

    @Option(names = "--aggregate-type", paramLabel = "TYPE", description = "Only this aggregate type.")
    String aggregateType;

    @Option(names = "--aggregate-id", paramLabel = "ID", description = "Only this aggregate id.")
    String aggregateId;

    @Option(names = "--id", paramLabel = "ID", description = "Only this event id.")
    String id;

    @Option(names = "--time-column", paramLabel = "COLUMN", defaultValue = "created_at",
            description = "The column that orders and filters by time (default: ${DEFAULT-VALUE}).")
    String timeColumn;

    @Option(names = "--dry-run", description = "Count and list the rows; publish nothing.")
    boolean dryRun;

    @Override
    public Integer call() throws Exception {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        if (!COLUMN.matcher(timeColumn).matches()) {
            System.err.println("outbox-router: --time-column must be a column name (was \"" + timeColumn + "\")");
            return Main.EXIT_USAGE;
        }
        for (String table : c.source().tables()) {
            if (!hasColumn(c, table, timeColumn) && (since != null || until != null)) {
                System.err.println("outbox-router: table " + table + " has no column " + timeColumn
                        + " to filter by time; name another with --time-column");
                return Main.EXIT_USAGE;
            }
        }
        var routing = new OutboxRouting(c.source().tables(), c.outbox(), c.routing().topic());
        var records = new ArrayList<ProducerRecord<byte[], byte[]>>();
        int rejected = 0;
        String replayedAt = Instant.now().toString();
        for (String table : c.source().tables()) {
            for (var row : rows(c, table)) {
                var result = routing.route(new ChangeEvent(table, ChangeEvent.Operation.INSERT, row, "replay", null));
                if (result instanceof RoutingResult.Publish p) {
                    p.record().headers().add(new RecordHeader("replayed", "true".getBytes(StandardCharsets.UTF_8)));
                    p.record().headers().add(new RecordHeader("replayed.at", replayedAt.getBytes(StandardCharsets.UTF_8)));
                    records.add(p.record());
                } else if (result instanceof RoutingResult.Reject r) {
                    rejected++;
                    System.err.println("outbox-router: not replayable: row " + row.get(c.outbox().columns().id()) + " of " + table + ": " + r.reason());
                }
            }
        }
        if (dryRun) {
            records.stream().limit(50).forEach(r -> System.out.println(header(r, "id") + "  " + r.topic() + "  key "
                    + new String(r.key(), StandardCharsets.UTF_8) + "  " + header(r, "type")));
            System.out.println(records.size() + " row(s) would be published again" + (records.size() > 50 ? " (first 50 listed)" : "")
                    + (rejected > 0 ? "; " + rejected + " cannot be routed" : "") + ". Nothing was published (--dry-run).");
            return 0;
        }
        try (var publisher = new KafkaPublisher(c.kafka(), c.name() + "-replay", Duration.ofMillis(200))) {
            for (int i = 0; i < records.size(); i += CHUNK) {
                var refused = publisher.publish(records.subList(i, Math.min(records.size(), i + CHUNK)));
                if (!refused.isEmpty()) {
                    System.err.println("outbox-router: Kafka refused " + refused.size() + " record(s): " + refused.get(0).error().getMessage());
                    return Main.EXIT_FAILED;
                }
            }
        }
        System.out.println(records.size() + " event(s) published again" + (rejected > 0 ? "; " + rejected + " cannot be routed" : "") + ".");
        return rejected > 0 ? Main.EXIT_FAILED : 0;
    }

    private List<Map<String, Object>> rows(RouterConfig c, String table) throws SQLException {
        var cols = c.outbox().columns();
        var where = new ArrayList<String>();
        var params = new ArrayList<Object>();
        if (since != null) {
            where.add(timeColumn + " >= ?");
            params.add(Timestamp.from(since));
        }
        if (until != null) {
            where.add(timeColumn + " < ?");
            params.add(Timestamp.from(until));
        }
        if (aggregateType != null) {
            where.add(cols.aggregateType() + " = ?");
            params.add(aggregateType);
        }
        if (aggregateId != null) {
            where.add(cols.aggregateId() + " = ?");
            params.add(aggregateId);
        }
        if (id != null) {
            where.add("CAST(" + cols.id() + " AS " + (c.source().kind().isBinlog() ? "CHAR" : "text") + ") = ?");
            params.add(id);
        }
        boolean ordered = hasColumn(c, table, timeColumn);
        if (!ordered) {
            System.err.println("outbox-router: table " + table + " has no column " + timeColumn + "; its rows are replayed in table order");
        }
        String sql = "SELECT * FROM " + table + (where.isEmpty() ? "" : " WHERE " + String.join(" AND ", where))
                + (ordered ? " ORDER BY " + timeColumn : "");
        var conn = c.source().connection();
        var out = new ArrayList<Map<String, Object>>();
        try (var jdbc = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal());
             var ps = jdbc.prepareStatement(sql)) {
            for (int i = 0; i < params.size(); i++) {
                ps.setObject(i + 1, params.get(i));
            }
            try (ResultSet rs = ps.executeQuery()) {
                var meta = rs.getMetaData();
                while (rs.next()) {
                    var row = new LinkedHashMap<String, Object>();
                    for (int i = 1; i <= meta.getColumnCount(); i++) {
                        int type = meta.getColumnType(i);
                        boolean binary = type == Types.BINARY || type == Types.VARBINARY || type == Types.LONGVARBINARY || type == Types.BLOB;
                        row.put(meta.getColumnLabel(i), binary ? rs.getBytes(i) : rs.getString(i));
                    }
                    out.add(row);
                }
            }
        }
        return out;
    }

    private static boolean hasColumn(RouterConfig c, String table, String column) throws SQLException {
        var conn = c.source().connection();
        int dot = table.indexOf('.');
        try (var jdbc = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal())) {
            var meta = jdbc.getMetaData();
            boolean binlog = c.source().kind().isBinlog();
            try (var rs = meta.getColumns(binlog ? table.substring(0, dot) : null, binlog ? null : table.substring(0, dot),
                    table.substring(dot + 1), column)) {
                return rs.next();
            }
        }
    }

    private static String header(ProducerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? "-" : new String(h.value(), StandardCharsets.UTF_8);
    }
}
