package io.outboxrouter.cli;

import io.outboxrouter.app.Replay;
import io.outboxrouter.app.ReplayFilter;
import io.outboxrouter.kafka.EventSink;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerRecord;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Publishes again the outbox rows still in the table, by filter, in the order of a time column, through the same routing
 * as the stream, each marked with a {@code replayed} header. This is how Postgres users replay: a slot cannot rewind.
 */
@Command(name = "replay", mixinStandardHelpOptions = true,
        description = {"Publishes again the outbox rows still in the table that match the filters, "
                + "each with the header replayed=true. Rows deleted after publishing cannot be replayed.",
                "Order, table by table: the --order-by columns when given; else the order of commit where the server "
                        + "keeps it (Postgres with track_commit_timestamp = on), rows of one transaction by the time column; "
                        + "else by the time column (--time-column), which is commit order only for transactions that do not "
                        + "overlap; event id last. The order used is printed. Read and sent in chunks of 1,000 rows.",
                "--dry-run counts and lists them without publishing."})
final class ReplayCommand implements Callable<Integer> {
    private static final Pattern COLUMN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final int LISTED = 50;

    @Mixin
    ConfigOption config;

    @Option(names = "--since", paramLabel = "INSTANT", description = "Only rows committed at or after this (ISO-8601), where the "
            + "server keeps commit times (Postgres with track_commit_timestamp = on); else rows whose time column is.")
    Instant since;

    @Option(names = "--until", paramLabel = "INSTANT", description = "Only rows committed before this (ISO-8601), as --since.")
    Instant until;

    @Option(names = "--aggregate-type", paramLabel = "TYPE", description = "Only this aggregate type.")
    String aggregateType;

    @Option(names = "--aggregate-id", paramLabel = "ID", description = "Only this aggregate id.")
    String aggregateId;

    @Option(names = "--id", paramLabel = "ID", description = "Only this event id.")
    String id;

    @Option(names = "--from-xid", paramLabel = "XID", description = "Postgres: only rows written by transaction XID or a later one "
            + "(the range a router names when it stops because the database changed under it).")
    Long fromXid;

    @Option(names = "--time-column", paramLabel = "COLUMN", defaultValue = "created_at",
            description = "The column that orders and filters by time (default: ${DEFAULT-VALUE}).")
    String timeColumn;

    @Option(names = "--order-by", paramLabel = "COLUMN", split = ",",
            description = "Order by these columns (then event id) instead: a column that grows with each insert (bigserial, "
                    + "AUTO_INCREMENT) gives commit order per aggregate when writes to one aggregate are serialized.")
    List<String> orderBy = List.of();

    @Option(names = "--dry-run", description = "Count and list the rows; publish nothing.")
    boolean dryRun;

    @Override
    public Integer call() throws Exception {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        if (c.source().tables().isEmpty()) {
            System.err.println("outbox-router: router " + c.name() + " has no outbox table to replay from: logical decoding "
                    + "messages (source.postgres.messages.prefix) live only in the WAL and leave nothing to replay");
            return Main.EXIT_USAGE;
        }
        for (String column : concat(timeColumn, orderBy)) {
            if (!COLUMN.matcher(column).matches()) {
                System.err.println("outbox-router: " + (column.equals(timeColumn) ? "--time-column" : "--order-by")
                        + " must be a column name (was \"" + column + "\")");
                return Main.EXIT_USAGE;
            }
        }
        if (fromXid != null && !c.source().kind().hasTransactionIds()) {
            System.err.println("outbox-router: --from-xid is for Postgres (transaction ids); on " + c.source().kind().name().toLowerCase(java.util.Locale.ROOT)
                    + " use --since, --id or --aggregate-id");
            return Main.EXIT_USAGE;
        }
        if (fromXid != null && fromXid < 3) {
            System.err.println("outbox-router: --from-xid must be a transaction id, 3 or more (was " + fromXid + ")");
            return Main.EXIT_USAGE;
        }
        var filter = new ReplayFilter(since, until, aggregateType, aggregateId, id, timeColumn, orderBy, fromXid);
        var replay = new Replay(c);
        for (String table : c.source().tables()) {
            var missing = replay.missingOrderColumns(table, filter);
            if (!missing.isEmpty()) {
                System.err.println("outbox-router: table " + table + " has no column " + String.join(", ", missing) + " to order by (--order-by)");
                return Main.EXIT_USAGE;
            }
        }
        for (String table : replay.tablesWithoutTimeColumn(filter)) {
            if (since != null || until != null) {
                System.err.println("outbox-router: table " + table + " has no column " + timeColumn
                        + " to filter by time; name another with --time-column");
                return Main.EXIT_USAGE;
            }
        }
        for (String table : c.source().tables()) {
            System.err.println("outbox-router: " + table + " is replayed " + replay.order(table, filter).description());
        }
        if (since != null || until != null) {
            System.err.println("outbox-router: --since and --until filter " + replay.timeFilter(filter));
        }
        Consumer<String> rejected = reason -> System.err.println("outbox-router: not replayable: " + reason);
        if (dryRun) {
            var listed = new AtomicInteger();
            var result = replay.run(Optional.empty(), r -> {
                if (listed.getAndIncrement() < LISTED) {
                    System.out.println(header(r, "id") + "  " + r.topic() + "  key " + new String(r.key(), StandardCharsets.UTF_8) + "  "
                            + header(r, "type"));
                }
            }, rejected, filter);
            System.out.println(result.published() + " row(s) would be published again" + (result.published() > LISTED ? " (first 50 listed)" : "")
                    + (result.rejected() > 0 ? "; " + result.rejected() + " cannot be routed" : "") + ". Nothing was published (--dry-run).");
            return 0;
        }
        Replay.Result result;
        try (EventSink sink = sink(c)) {
            result = replay.run(Optional.of(sink), r -> { }, rejected, filter);
        } catch (IllegalStateException e) {
            System.err.println("outbox-router: " + e.getMessage());
            return Main.EXIT_FAILED;
        }
        System.out.println(result.published() + " event(s) published again"
                + (result.rejected() > 0 ? "; " + result.rejected() + " cannot be routed" : "") + ".");
        return result.rejected() > 0 ? Main.EXIT_FAILED : 0;
    }

    static EventSink sink(io.outboxrouter.config.RouterConfig c) throws io.outboxrouter.retry.Retry.GaveUpException, InterruptedException {
        return Replay.sink(c);
    }

    private static List<String> concat(String first, List<String> rest) {
        var all = new ArrayList<String>(rest);
        all.add(0, first);
        return all;
    }

    static String header(ProducerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? "-" : new String(h.value(), StandardCharsets.UTF_8);
    }
}
