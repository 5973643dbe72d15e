package io.outboxrouter.app;

import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.EventSink;
import io.outboxrouter.publish.Routings;
import io.outboxrouter.retry.Retry;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.Routing;
import io.outboxrouter.routing.RoutingResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * Publishes again the outbox rows still in the table that match a filter, through the same routing as the stream, each
 * marked with a {@code replayed} header; the way Postgres users replay, since a slot cannot rewind. Rows are read with
 * a cursor and sent in chunks, so a large table is never held in memory. Order, table by table ({@link #order}): the
 * {@code --order-by} columns when given; else the order of commit where the server keeps it (Postgres with
 * {@code track_commit_timestamp}), then the time column; else the time column; event id last.
 */
public final class Replay {
    private static final int CHUNK = 1000;
    /** Event ids looked up per query when rows are published again by id. */
    static final int IDS_PER_QUERY = 500;
    /** MySQL Connector/J reads a whole result set into memory unless told to use a server-side cursor. */
    private static final Properties CURSOR = new Properties();

    static {
        CURSOR.setProperty("useCursorFetch", "true");
    }

    /** How one table's rows are ordered: the SQL, and the same for the operator. */
    public record Order(List<String> sql, String description) {
    }

    /** What a replay did: records published (or that would be, on a dry run), and rows that cannot be routed. */
    public record Result(long published, long rejected) {
    }

    private final RouterConfig config;
    private final OutboxSql source;
    private final Routing routing;

    public Replay(RouterConfig config) {
        this.config = config;
        this.source = Source.of(config).outboxSql();
        this.routing = Routings.of(config);
    }

    /** The outbox tables a time range cannot be applied to: they lack the filter's time column and the server keeps no commit times. */
    public List<String> tablesWithoutTimeColumn(ReplayFilter filter) throws SQLException {
        boolean commitTimes;
        try (var c = config.source().connection().open()) {
            commitTimes = source.commitTime(c).isPresent();
        }
        var without = new ArrayList<String>();
        for (String table : config.source().tables()) {
            if (!commitTimes && !source.columns(table).contains(filter.timeColumn())) {
                without.add(table);
            }
        }
        return without;
    }

    /** The order a table's rows are replayed in; see the class comment. */
    public Order order(String table, ReplayFilter filter) throws SQLException {
        try (var c = config.source().connection().open()) {
            return order(c, table, filter);
        }
    }

    private Order order(Connection c, String table, ReplayFilter filter) throws SQLException {
        String id = config.outbox().columns().id();
        if (!filter.orderBy().isEmpty()) {
            var sql = new ArrayList<>(filter.orderBy());
            sql.add(id);
            return new Order(sql, "by " + String.join(", ", filter.orderBy()) + " (--order-by), then " + id);
        }
        boolean timed = source.columns(table).contains(filter.timeColumn());
        var sql = new ArrayList<>(source.commitOrder(c));
        if (timed) {
            sql.add(filter.timeColumn());
        }
        sql.add(id);
        String then = (timed ? filter.timeColumn() + ", then " : "") + id;
        if (sql.size() > (timed ? 2 : 1)) {
            return new Order(sql, "in commit order (by track_commit_timestamp's commit times), rows of one transaction by " + then);
        }
        return new Order(sql, "by " + then + ": the order of commit only for transactions that do not overlap; for commit "
                + "order" + (config.source().kind().canKeepCommitTimes() ? " turn track_commit_timestamp on, or" : "")
                + " pass --order-by with a column that grows with each insert (bigserial, AUTO_INCREMENT)");
    }

    /** The columns of {@code orderBy} that a table lacks. */
    public List<String> missingOrderColumns(String table, ReplayFilter filter) throws SQLException {
        var columns = source.columns(table);
        return filter.orderBy().stream().filter(col -> !columns.contains(col)).toList();
    }

    /**
     * Publishes the matching rows to {@code sink}, or with no sink only counts them (a dry run).
     *
     * @param each     told about every routable record, in order
     * @param rejected told about every row that cannot be routed, with the reason
     */
    public Result run(Optional<EventSink> sink, Consumer<ProducerRecord<byte[], byte[]>> each, Consumer<String> rejected, ReplayFilter filter)
            throws SQLException, Retry.GaveUpException, InterruptedException {
        return run(sink, each, rejected, filter, Optional.empty());
    }

    /** @param deadLetters where a row that cannot be routed goes, in its place among the others; empty: only told */
    public Result run(Optional<EventSink> sink, Consumer<ProducerRecord<byte[], byte[]>> each, Consumer<String> rejected, ReplayFilter filter,
                      Optional<DeadLetters> deadLetters) throws SQLException, Retry.GaveUpException, InterruptedException {
        String replayedAt = Instant.now().toString();
        long published = 0;
        long refusals = 0;
        var chunk = new ArrayList<ProducerRecord<byte[], byte[]>>(CHUNK);
        for (String table : config.source().tables()) {
            var connection = config.source().connection();
            try (var c = connection.url().startsWith("jdbc:mysql:") ? connection.open(CURSOR) : connection.open()) {
                c.setAutoCommit(false); // a Postgres cursor streams only inside a transaction
                if (filter.recovery() != null && filter.recovery().snapshot() != null) {
                    try (var st = c.createStatement()) {
                        st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                        st.execute("SET TRANSACTION SNAPSHOT '" + filter.recovery().snapshot().replace("'", "''") + "'");
                    }
                }
                try (var ps = c.prepareStatement(sql(table, filter, order(c, table, filter), timeOf(c, table, filter)))) {
                    ps.setFetchSize(CHUNK);
                    filter.bind(ps);
                    try (ResultSet rs = ps.executeQuery()) {
                        // Debezium's EventRouter reads the connector's record: one is made of each row, typed as the connector types it.
                        var records = config.routing().eventRouter() == null ? null
                                : JdbcRecords.of(config.name(), table, rs.getMetaData(), c, config.source().kind(),
                                        config.routing().eventRouter().options().readColumns());
                        while (rs.next()) {
                            var row = row(rs, config.source().kind() == io.outboxrouter.config.SourceKind.MYSQL);
                            var result = routing.route(new ChangeEvent(table, ChangeEvent.Operation.INSERT, row, "replay", null,
                                    records == null ? null : records.record(rs)));
                            if (result instanceof RoutingResult.Publish p) {
                                p.record().headers().add(new RecordHeader("replayed", "true".getBytes(StandardCharsets.UTF_8)));
                                p.record().headers().add(new RecordHeader("replayed.at", replayedAt.getBytes(StandardCharsets.UTF_8)));
                                each.accept(p.record());
                                chunk.add(p.record());
                                published++;
                            } else if (result instanceof RoutingResult.Reject r) {
                                refusals++;
                                rejected.accept("row " + row.get(config.outbox().columns().id()) + " of " + table + ": " + r.reason());
                                if (deadLetters.isPresent()) {
                                    chunk.add(deadLetters.get().record(r));
                                }
                            }
                            if (chunk.size() == CHUNK) {
                                send(sink, chunk);
                            }
                        }
                    }
                } finally {
                    c.rollback();
                }
            }
        }
        send(sink, chunk);
        return new Result(published, refusals);
    }

    /**
     * The replay's own producer. Exactly-once: each chunk in a Kafka transaction of the replay's own transactional id, so
     * that read_committed consumers see a chunk whole or not at all, and a second replay of the same router fences a first.
     */
    public static EventSink sink(RouterConfig c) throws Retry.GaveUpException, InterruptedException {
        if (!c.kafka().exactlyOnce()) {
            return new io.outboxrouter.kafka.KafkaPublisher(c.kafka(), c.name() + "-replay", java.time.Duration.ofMillis(200),
                    io.outboxrouter.metrics.RouterListener.NONE);
        }
        var transactional = io.outboxrouter.kafka.TransactionalPublisher.of(c.kafka(), c.name() + "-replay",
                io.outboxrouter.config.KafkaConfig.transactionalId(c.name()) + ".replay", 1, java.time.Duration.ofMillis(200),
                io.outboxrouter.metrics.RouterListener.NONE);
        try {
            transactional.activate();
        } catch (Retry.GaveUpException | InterruptedException | RuntimeException e) {
            transactional.close();
            throw e;
        }
        return transactional;
    }

    /**
     * Publishes again the rows with these event ids (header {@code replayed=true}) through the replay's own producer, a
     * query per {@link #IDS_PER_QUERY} ids, each batch in commit order; returns how many records it published.
     *
     * @param timeColumn orders the rows of a transaction, after their commit order where the server keeps it
     * @param rejected   told about every row that cannot be routed
     */
    public static long republish(RouterConfig config, List<String> ids, String timeColumn, Consumer<String> rejected)
            throws SQLException, Retry.GaveUpException, InterruptedException {
        if (ids.isEmpty()) {
            return 0;
        }
        var replay = new Replay(config);
        long published = 0;
        try (var sink = sink(config)) {
            for (int from = 0; from < ids.size(); from += IDS_PER_QUERY) {
                var batch = ids.subList(from, Math.min(ids.size(), from + IDS_PER_QUERY));
                published += replay.run(Optional.of(sink), r -> { }, rejected,
                        ReplayFilter.ofIds(batch, timeColumn)).published();
            }
        }
        return published;
    }

    private static void send(Optional<EventSink> sink, List<ProducerRecord<byte[], byte[]>> chunk)
            throws Retry.GaveUpException, InterruptedException {
        if (sink.isPresent() && !chunk.isEmpty()) {
            var refused = sink.get().send(List.copyOf(chunk));
            if (!refused.isEmpty()) {
                throw new IllegalStateException("Kafka refused " + refused.size() + " record(s): " + refused.get(0).error().getMessage());
            }
            if (sink.get().transactional()) {
                sink.get().commit(null); // a chunk per Kafka transaction; no source position
            }
        }
        chunk.clear();
    }

    /**
     * What {@code --since} and {@code --until} compare: the commit time where the server keeps it (a row written by a long
     * transaction is then not left out for its early time column), else the time column, the writer's clock.
     */
    private String timeOf(Connection c, String table, ReplayFilter f) throws SQLException {
        boolean column = source.columns(table).contains(f.timeColumn());
        var commit = source.commitTime(c);
        if (commit.isPresent()) {
            return column ? "COALESCE(" + commit.get() + ", " + f.timeColumn() + ")" : commit.get();
        }
        return f.timeColumn();
    }

    /** How {@code --since} and {@code --until} are applied, for the operator. */
    public String timeFilter(ReplayFilter f) throws SQLException {
        try (var c = config.source().connection().open()) {
            return source.commitTime(c).isPresent() ? "by commit time (track_commit_timestamp; the time column for rows committed "
                    + "before it was on)" : "by " + f.timeColumn() + ", the time the writer gave the row (created_at DEFAULT now() "
                    + "is its transaction's start): a transaction that began before --since and committed after it is left out, so "
                    + "reach back by your longest transaction";
        }
    }

    /** An outbox row as an audit reads it: which event of which aggregate. */
    /**
     * @param transaction the transaction that wrote it, where the order of commits is known (Postgres with
     *                    track_commit_timestamp: rows come in commit order); null where it is not
     */
    public record RowKey(String table, String id, String aggregateType, String aggregateId, String transaction) {
    }

    /** Calls {@code each} for every row that matches, table by table, in the order a replay publishes them; returns how many. */
    /** How many rows {@link #forEachRow} would give, counted by the database. */
    public long count(ReplayFilter filter) throws SQLException {
        long rows = 0;
        for (String table : config.source().tables()) {
            try (var c = config.source().connection().open()) {
                String sql = "SELECT COUNT(*) FROM " + table + filter.where(timeOf(c, table, filter), config.outbox().columns(), source::asText);
                try (var ps = c.prepareStatement(sql)) {
                    filter.bind(ps);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        rows += rs.getLong(1);
                    }
                }
            }
        }
        return rows;
    }

    public long forEachRow(ReplayFilter filter, Consumer<RowKey> each) throws SQLException {
        var cols = config.outbox().columns();
        long rows = 0;
        for (String table : config.source().tables()) {
            var connection = config.source().connection();
            try (var c = connection.url().startsWith("jdbc:mysql:") ? connection.open(CURSOR) : connection.open()) {
                c.setAutoCommit(false);
                boolean commitOrder = source.commitTime(c).isPresent() && filter.orderBy().isEmpty();
                String select = source.asText(cols.id()) + ", " + cols.aggregateType() + ", " + cols.aggregateId()
                        + (commitOrder ? ", xmin::text" : "");
                try (var ps = c.prepareStatement(sql(select, table, filter, order(c, table, filter), timeOf(c, table, filter)))) {
                    ps.setFetchSize(CHUNK * 10);
                    filter.bind(ps);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            rows++;
                            each.accept(new RowKey(table, rs.getString(1), rs.getString(2), rs.getString(3),
                                    commitOrder ? rs.getString(4) : null));
                        }
                    }
                } finally {
                    c.rollback();
                }
            }
        }
        return rows;
    }

    private String sql(String table, ReplayFilter f, Order order, String time) {
        return sql("*", table, f, order, time);
    }

    private String sql(String select, String table, ReplayFilter f, Order order, String time) {
        return "SELECT " + select + " FROM " + table + f.where(time, config.outbox().columns(), source::asText) + " ORDER BY "
                + String.join(", ", order.sql());
    }

    /** @param mysql MySQL's JSON columns are read back as the stream has them: compact, as the binlog renders them */
    private static Map<String, Object> row(ResultSet rs, boolean mysql) throws SQLException {
        var meta = rs.getMetaData();
        var row = new LinkedHashMap<String, Object>();
        for (int i = 1; i <= meta.getColumnCount(); i++) {
            int type = meta.getColumnType(i);
            boolean binary = type == Types.BINARY || type == Types.VARBINARY || type == Types.LONGVARBINARY || type == Types.BLOB;
            Object value = binary ? rs.getBytes(i) : rs.getString(i);
            if (mysql && value instanceof String text && "JSON".equalsIgnoreCase(meta.getColumnTypeName(i))) {
                value = JdbcRecords.compactJson(text);
            }
            row.put(meta.getColumnLabel(i), value);
        }
        return row;
    }
}
