package io.outboxrouter.it;

import io.outboxrouter.schema.SchemaDdl;
import io.outboxrouter.testing.PostgresServer;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/**
 * A tableless outbox: the events are logical decoding messages written with the {@code outbox_emit} function that
 * {@code schema} prints (prefix {@code outbox}); the bytea outbox table is routed beside them, as a router configured with
 * both would.
 */
final class PostgresMessageOutbox implements OutboxDatabase {
    static final String PREFIX = "outbox";
    private final PostgresServer server;
    private final String database;
    private final PostgresOutbox tables;

    PostgresMessageOutbox(PostgresServer server, String database) throws SQLException {
        this.server = server;
        this.tables = new PostgresOutbox(server, database);
        this.database = database;
        try (var c = connect(); var st = c.createStatement()) {
            st.execute(SchemaDdl.emitFunction("public", PREFIX));
            c.commit();
        }
    }

    @Override
    public Connection connect() throws SQLException {
        return tables.connect();
    }

    @Override
    public String sourceYaml() {
        return """
                source:
                  kind: postgres
                  url: %s
                  user: %s
                  password: %s
                  tables: [public.outbox_binary]
                  postgres:
                    messages: { prefix: %s }
                """.formatted(server.jdbcUrl(database), PostgresServer.USER, PostgresServer.PASSWORD, PREFIX);
    }

    @Override
    public String rowPlaceholders() {
        return "(?::uuid, ?, ?, ?, ?::json)";
    }

    /** One statement that writes one message per event, in this order. */
    @Override
    public void insertMultiRow(Connection c, List<TestEvent> events) throws SQLException {
        var sql = new StringBuilder("SELECT public.outbox_emit(v.aggregatetype, v.aggregateid, v.type, v.payload, v.id) FROM (VALUES ");
        for (int i = 0; i < events.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append("(").append(i).append(", ?::uuid, ?, ?, ?, ?::json)");
        }
        sql.append(") AS v(n, id, aggregatetype, aggregateid, type, payload) ORDER BY v.n");
        try (var ps = c.prepareStatement(sql.toString())) {
            int p = 1;
            for (var e : events) {
                ps.setString(p++, e.id().toString());
                ps.setString(p++, e.aggregateType());
                ps.setString(p++, e.aggregateId());
                ps.setString(p++, e.type());
                ps.setString(p++, e.payload());
            }
            ps.executeQuery().close();
        }
    }

    /** The bulk path: one statement over arrays (what an application batching its events would send). */
    @Override
    public void insertBulk(Connection c, List<TestEvent> events) throws SQLException {
        try (var ps = c.prepareStatement("SELECT public.outbox_emit(e.aggregatetype, e.aggregateid, e.type, e.payload::json, e.id::uuid) "
                + "FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY "
                + "AS e(id, aggregatetype, aggregateid, type, payload, n) ORDER BY e.n")) {
            ps.setArray(1, c.createArrayOf("text", events.stream().map(e -> e.id().toString()).toArray()));
            ps.setArray(2, c.createArrayOf("text", events.stream().map(TestEvent::aggregateType).toArray()));
            ps.setArray(3, c.createArrayOf("text", events.stream().map(TestEvent::aggregateId).toArray()));
            ps.setArray(4, c.createArrayOf("text", events.stream().map(TestEvent::type).toArray()));
            ps.setArray(5, c.createArrayOf("text", events.stream().map(TestEvent::payload).toArray()));
            ps.executeQuery().close();
        }
    }

    /** What the router names a message's source in the {@code source.table} header. */
    @Override
    public String outboxTable() {
        return "message:" + PREFIX;
    }

    @Override
    public String binaryTable() {
        return tables.binaryTable();
    }

    @Override
    public String idParameter() {
        return tables.idParameter();
    }

    @Override
    public int nextSequence(Connection c, String aggregate, int n) throws SQLException {
        return tables.nextSequence(c, aggregate, n);
    }
}
