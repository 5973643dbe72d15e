package io.outboxrouter.it;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/** One source database for the contract suite: Postgres here, MariaDB/MySQL as they come. */
interface OutboxDatabase {

    /** A connection with auto-commit off. */
    Connection connect() throws SQLException;

    /** The {@code source:} block of a router config for this database. */
    String sourceYaml();

    /** Whether a JSON payload arrives as the text written (MySQL's JSON type keeps a parsed, re-serialized form). */
    default boolean jsonKeptAsWritten() {
        return true;
    }

    /** The VALUES tuple of one event: id, aggregatetype, aggregateid, type, payload, with the casts the database needs. */
    String rowPlaceholders();

    /** Inserts the events with one multi-row INSERT statement (no commit). */
    default void insertMultiRow(Connection c, List<TestEvent> events) throws SQLException {
        var sql = new StringBuilder("INSERT INTO " + outboxTable() + " (id, aggregatetype, aggregateid, type, payload) VALUES ");
        for (int i = 0; i < events.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append(rowPlaceholders());
        }
        try (var ps = c.prepareStatement(sql.toString())) {
            int p = 1;
            for (var e : events) {
                ps.setString(p++, e.id().toString());
                ps.setString(p++, e.aggregateType());
                ps.setString(p++, e.aggregateId());
                ps.setString(p++, e.type());
                ps.setString(p++, e.payload());
            }
            ps.executeUpdate();
        }
    }

    /** Inserts the events with the database's bulk path (COPY on Postgres), no commit. */
    void insertBulk(Connection c, List<TestEvent> events) throws SQLException;

    /** The main outbox table, as the router names it in the {@code source.table} header. */
    String outboxTable();

    /** A second outbox table with a binary payload and a {@code tracingspancontext} column. */
    String binaryTable();

    /** The SQL parameter for a UUID id: {@code ?::uuid} on Postgres. */
    String idParameter();

    /** Adds n to the aggregate's counter, holding its row lock until commit; returns the new value. */
    int nextSequence(Connection c, String aggregate, int n) throws SQLException;

    /** Inserts one event (no commit). */
    default void insert(Connection c, TestEvent e) throws SQLException {
        insertMultiRow(c, List.of(e));
    }

    /** Runs one statement in its own transaction. */
    default void execute(String sql) throws SQLException {
        try (var c = connect(); var st = c.createStatement()) {
            st.execute(sql);
            c.commit();
        }
    }
}
