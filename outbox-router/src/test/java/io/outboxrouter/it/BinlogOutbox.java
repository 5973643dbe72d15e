package io.outboxrouter.it;

import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.TestServers;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;

/**
 * A fresh MySQL or MariaDB database with the same outbox tables: CHAR(36) ids (the router refuses MariaDB's native
 * UUID type, which Debezium's binlog reader misreads when a value ends in a zero byte), a JSON payload, a LONGBLOB one.
 */
final class BinlogOutbox implements OutboxDatabase {

    /** A MySQL or MariaDB server with a row binlog. */
    record Server(String kind, String urlPrefix, String user, String password) {
        String jdbcUrl(String database) {
            return urlPrefix + database;
        }
    }

    private final Server server;
    private final String database;

    static BinlogOutbox mariadb(String database) throws SQLException {
        MariaDbServer mariadb = TestServers.mariadb();
        return new BinlogOutbox(new Server("mariadb", mariadb.jdbcUrl(""), MariaDbServer.USER, MariaDbServer.PASSWORD), database);
    }

    BinlogOutbox(Server server, String database) throws SQLException {
        this.server = server;
        this.database = database;
        try (var c = DriverManager.getConnection(server.jdbcUrl(""), server.user(), server.password()); var st = c.createStatement()) {
            st.execute("CREATE DATABASE " + database);
        }
        try (var c = connect(); var st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE outbox (
                      id char(36) PRIMARY KEY,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload json,
                      created_at timestamp(6) NOT NULL DEFAULT current_timestamp(6),
                      tracingspancontext varchar(256))""");
            st.execute("""
                    CREATE TABLE outbox_binary (
                      id char(36) PRIMARY KEY,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload longblob,
                      tracingspancontext varchar(256))""");
            st.execute("CREATE TABLE aggregate_seq (aggregateid varchar(255) PRIMARY KEY, seq int NOT NULL)");
            c.commit();
        }
    }

    @Override
    public Connection connect() throws SQLException {
        return connect("");
    }

    /** A connection with these URL parameters ({@code ?name=value&...}), autocommit off. */
    Connection connect(String parameters) throws SQLException {
        var c = DriverManager.getConnection(server.jdbcUrl(database) + parameters, server.user(), server.password());
        c.setAutoCommit(false);
        return c;
    }

    @Override
    public String sourceYaml() {
        return """
                source:
                  kind: %s
                  url: %s
                  user: %s
                  password: "%s"
                  tables: [%s.outbox, %s.outbox_binary]
                """.formatted(server.kind(), server.jdbcUrl(database), server.user(), server.password(), database, database);
    }

    @Override
    public boolean jsonKeptAsWritten() {
        return !server.kind().equals("mysql"); // MariaDB's JSON is LONGTEXT with a check
    }

    @Override
    public String outboxTable() {
        return database + ".outbox";
    }

    @Override
    public String binaryTable() {
        return database + ".outbox_binary";
    }

    @Override
    public String idParameter() {
        return "?";
    }

    @Override
    public int nextSequence(Connection c, String aggregate, int n) throws SQLException {
        try (var upsert = c.prepareStatement("INSERT INTO aggregate_seq (aggregateid, seq) VALUES (?, ?) "
                + "ON DUPLICATE KEY UPDATE seq = seq + VALUES(seq)");
             var read = c.prepareStatement("SELECT seq FROM aggregate_seq WHERE aggregateid = ?")) {
            upsert.setString(1, aggregate);
            upsert.setInt(2, n);
            upsert.executeUpdate();
            read.setString(1, aggregate);
            try (var rs = read.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @Override
    public String rowPlaceholders() {
        return "(?, ?, ?, ?, ?)";
    }

    /** The bulk path here: one multi-row INSERT of the whole batch (the binlog carries it as one rows event). */
    @Override
    public void insertBulk(Connection c, List<TestEvent> events) throws SQLException {
        insertMultiRow(c, events);
    }
}
