package io.outboxrouter.it;

import io.outboxrouter.testing.PostgresServer;
import java.io.IOException;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.postgresql.PGConnection;

/** A fresh Postgres database with an outbox table shaped like Debezium EventRouter's, plus a bytea one. */
final class PostgresOutbox implements OutboxDatabase {
    private final PostgresServer server;
    private final String database;

    PostgresOutbox(PostgresServer server, String database) throws SQLException {
        this.server = server;
        this.database = server.createDatabase(database);
        try (var c = connect(); var st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE public.outbox (
                      id uuid PRIMARY KEY,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload jsonb,
                      created_at timestamptz NOT NULL DEFAULT now(),
                      tracingspancontext varchar(256))""");
            st.execute("""
                    CREATE TABLE public.outbox_binary (
                      id uuid PRIMARY KEY,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload bytea,
                      tracingspancontext varchar(256))""");
            st.execute("CREATE TABLE public.aggregate_seq (aggregateid varchar(255) PRIMARY KEY, seq int NOT NULL)");
            c.commit();
        }
    }

    String database() {
        return database;
    }

    @Override
    public Connection connect() throws SQLException {
        var c = server.connect(database);
        c.setAutoCommit(false);
        return c;
    }

    @Override
    public String sourceYaml() {
        return """
                source:
                  kind: postgres
                  url: %s
                  user: %s
                  password: %s
                  tables: [public.outbox, public.outbox_binary]
                """.formatted(server.jdbcUrl(database), PostgresServer.USER, PostgresServer.PASSWORD);
    }

    @Override
    public String outboxTable() {
        return "public.outbox";
    }

    @Override
    public String binaryTable() {
        return "public.outbox_binary";
    }

    @Override
    public String idParameter() {
        return "?::uuid";
    }

    @Override
    public int nextSequence(Connection c, String aggregate, int n) throws SQLException {
        try (var ps = c.prepareStatement("INSERT INTO aggregate_seq (aggregateid, seq) VALUES (?, ?) "
                + "ON CONFLICT (aggregateid) DO UPDATE SET seq = aggregate_seq.seq + EXCLUDED.seq RETURNING seq")) {
            ps.setString(1, aggregate);
            ps.setInt(2, n);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @Override
    public String rowPlaceholders() {
        return "(?::uuid, ?, ?, ?, ?::jsonb)";
    }

    @Override
    public void insertBulk(Connection c, List<TestEvent> events) throws SQLException {
        var csv = new StringBuilder();
        for (var e : events) {
            csv.append(e.id()).append(',').append(e.aggregateType()).append(',').append(e.aggregateId()).append(',')
                    .append(e.type()).append(",\"").append(e.payload().replace("\"", "\"\"")).append("\"\n");
        }
        try {
            c.unwrap(PGConnection.class).getCopyAPI().copyIn(
                    "COPY public.outbox (id, aggregatetype, aggregateid, type, payload) FROM STDIN WITH (FORMAT csv)",
                    new StringReader(csv.toString()));
        } catch (IOException e) {
            throw new SQLException(e);
        }
    }
}
