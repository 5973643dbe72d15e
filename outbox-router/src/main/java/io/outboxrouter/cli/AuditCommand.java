package io.outboxrouter.cli;

import io.outboxrouter.app.Audit;
import io.outboxrouter.app.Replay;
import io.outboxrouter.app.ReplayFilter;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code audit}: did every outbox row still in the table reach Kafka, once and in order per aggregate? */
@Command(name = "audit", mixinStandardHelpOptions = true,
        description = {"Checks that every outbox row still in the table reached Kafka: reads the rows in commit order and the "
                + "router's topics and dead-letter topic, matches them by event id, and reports the rows with no record, the "
                + "records beyond the first of a row, and the events of an aggregate that reached Kafka in another order than "
                + "they committed.",
                "Exit 0 when nothing is missing or out of order (duplicates are what at-least-once delivery allows), 1 when "
                        + "something is. --repair publishes the missing ones again (header replayed=true), in commit order; they "
                        + "arrive after the later events of their aggregates. Large ranges are read in passes, each holding a "
                        + "share of the aggregates."})
final class AuditCommand implements Callable<Integer> {
    private static final int LISTED = 20;

    @Mixin
    ConfigOption config;

    @Option(names = "--since", paramLabel = "INSTANT", description = "Only rows committed at or after this (ISO-8601), as replay's "
            + "--since: by commit time where the server keeps it, else by the time column.")
    Instant since;

    @Option(names = "--until", paramLabel = "INSTANT", description = "Only rows committed before this (ISO-8601). Default: 30 s "
            + "ago, so that the rows a running router has not published yet are not reported missing.")
    Instant until;

    @Option(names = "--time-column", paramLabel = "COLUMN", defaultValue = "created_at",
            description = "With --since and no commit times: the column to compare (default: ${DEFAULT-VALUE}).")
    String timeColumn;

    @Option(names = "--repair", description = "Publish the missing events again, in commit order.")
    boolean repair;

    @Override
    public Integer call() throws Exception {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        if (c.source().tables().isEmpty()) {
            System.err.println("outbox-router: router " + c.name() + " has no outbox table to audit: logical decoding messages leave "
                    + "no rows to compare with Kafka");
            return Main.EXIT_USAGE;
        }
        if (c.routing().eventRouter() != null) {
            System.err.println("outbox-router: audit reads the router's own records (event id in the id header); with "
                    + "routing.event-router the records are Debezium's EventRouter's, which it does not read yet");
            return Main.EXIT_USAGE;
        }
        var untimed = new Replay(c).tablesWithoutTimeColumn(new ReplayFilter(null, null, null, null, null, timeColumn, List.of()));
        if ((since != null || until != null) && !untimed.isEmpty()) {
            System.err.println("outbox-router: table " + untimed.get(0) + " has no column " + timeColumn
                    + " to filter by time; name another with --time-column");
            return Main.EXIT_USAGE;
        }
        Instant before = until;
        if (before == null && untimed.isEmpty()) {
            before = Instant.now().minusSeconds(30);
        } else if (before == null) {
            System.out.println("note: table " + untimed.get(0) + " has no column " + timeColumn + ", so the newest rows are audited "
                    + "too: while the router runs, those it has not published yet are reported missing");
        }
        var filter = new ReplayFilter(since, before, null, null, null, timeColumn, List.of());
        var audit = new Audit(c, earlierTopics(c));
        System.out.println("audit of router " + c.name() + ": " + c.source().tables() + (since == null ? ", rows" : ", rows committed "
                + "since " + since) + (before == null ? "" : " committed before " + before) + ", against " + audit.topics());
        var report = audit.run(filter, line -> System.out.println("  " + line));
        System.out.println(report.rows() + " row(s), " + report.records() + " record(s) read: " + report.published() + " published, "
                + report.deadLettered() + " dead-lettered, " + report.onlyReplayed() + " present only as replayed copies, "
                + (report.held() > 0 ? report.held() + " held (their aggregates are parked: parked list), " : "")
                + (report.dropped() > 0 ? report.dropped() + " dropped (held by a park that `parked drop` ended: not published; "
                + "replay --id publishes one), " : "")
                + report.missingCount() + " missing; " + report.duplicates() + " duplicate record(s) and " + report.replayedCopies()
                + " replayed copies; " + (report.orderChecked() ? report.outOfOrderCount() + " event(s) out of order."
                : "order not checked: the server keeps no order of commits (Postgres: track_commit_timestamp = on)."));
        if (report.missingCount() > 0) {
            System.out.println("Missing" + (report.missingCount() > LISTED ? " (first " + LISTED + ")" : "") + ":");
            report.missing().stream().limit(LISTED).forEach(m -> System.out.println("  " + m.id() + "  " + m.aggregateType() + " "
                    + m.aggregateId() + "  (" + m.table() + ")"));
        }
        if (report.outOfOrderCount() > 0) {
            System.out.println("Out of order" + (report.outOfOrderCount() > LISTED ? " (first " + LISTED + ")" : "") + ":");
            report.outOfOrder().stream().limit(LISTED).forEach(o -> System.out.println("  " + o.aggregateType() + " "
                    + o.aggregateId() + ": " + o.committedSecond() + " committed after " + o.committedFirst() + " but reached "
                    + o.partition() + " before it"));
        }
        if (!repair || report.missingCount() == 0) {
            if (report.missingCount() > 0) {
                System.out.println("Publish them again with: java -jar outbox-router.jar audit --config <file>"
                        + (since == null ? "" : " --since " + since) + (before == null ? "" : " --until " + before) + " --repair");
            }
            return report.clean() ? 0 : Main.EXIT_FAILED;
        }
        if (report.missing().size() < report.missingCount()) {
            System.out.println("Publishing the first " + report.missing().size() + " again; run it again for the rest.");
        }
        // A query per few hundred events, each in commit order; the report lists an aggregate's missing rows together, in
        // commit order, so the batches keep each aggregate's order.
        long published = Replay.republish(c, report.missing().stream().map(Audit.Missing::id).toList(), timeColumn,
                reason -> System.err.println("outbox-router: not routable: " + reason));
        System.out.println(published + " missing event(s) published again, each with the header replayed=true.");
        return report.outOfOrderCount() == 0 && published == report.missingCount() ? 0 : Main.EXIT_FAILED;
    }

    /** The topics earlier runs published to under another routing, as the self-audit keeps them; none when unreadable. */
    private static List<String> earlierTopics(io.outboxrouter.config.RouterConfig c) {
        try (var table = io.outboxrouter.offsets.OffsetTable.open(io.outboxrouter.offsets.OffsetTableSettings.offsets(c))) {
            return io.outboxrouter.audit.AuditedThrough.topics(table.audited(c.name()).orElse(null));
        } catch (RuntimeException e) {
            return List.of(); // no offsets table yet, or not reachable: the router's own topics only
        }
    }
}
