package io.outboxrouter.benchmark;

import io.outboxrouter.testing.DatabaseServer;
import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.PostgresServer;
import java.sql.Connection;
import java.sql.SQLException;

/** The benchmark's outbox database: one table, the same shape as the README's, on Postgres or MariaDB. */
final class BenchDb {
    final DatabaseServer server;
    final String database;
    final boolean postgres;
    /** Events written as logical decoding messages ({@code outbox_emit}), not rows: a tableless outbox. */
    final boolean messages;

    private BenchDb(DatabaseServer server, String database, boolean postgres) {
        this(server, database, postgres, false);
    }

    private BenchDb(DatabaseServer server, String database, boolean postgres, boolean messages) {
        this.server = server;
        this.database = database;
        this.postgres = postgres;
        this.messages = messages;
    }

    /**
     * The same Postgres database, its events written as transactional logical decoding messages with the {@code outbox_emit}
     * function {@code schema} prints (prefix {@code outbox}), through a procedure with the INSERT's parameters (a CALL
     * returns no rows, so the writers batch it as they batch INSERTs). The router's publication is created here, before
     * any slot and backlog, as the router does at its first start: a slot decodes with the catalog as it was when each
     * change was written, and pgoutput fails on WAL written before its publication existed (each such failure costs a
     * restart of the connector, which would make the drain look slower than it is).
     */
    BenchDb withMessages() throws SQLException {
        execute("CREATE PUBLICATION bench_messages", io.outboxrouter.schema.SchemaDdl.emitFunction("public", "outbox"),
                "CREATE OR REPLACE PROCEDURE public.bench_emit(id uuid, aggregateid text, payload json) LANGUAGE sql AS $$ "
                        + "SELECT public.outbox_emit('Order', aggregateid, 'OrderPlaced', payload, id) $$");
        return new BenchDb(server, database, true, true);
    }

    /** The columns the router reads from the benchmark's outbox table: the column list of the publication it would create. */
    static final String ROUTER_COLUMNS = "id, aggregatetype, aggregateid, type, payload";

    static BenchDb postgres(PostgresServer server) throws SQLException {
        var db = new BenchDb(server, server.createDatabase("bench"), true);
        db.execute("""
                CREATE TABLE public.outbox (
                  id uuid PRIMARY KEY,
                  aggregatetype varchar(255) NOT NULL,
                  aggregateid varchar(255) NOT NULL,
                  type varchar(255) NOT NULL,
                  payload jsonb,
                  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                  relayed boolean NOT NULL DEFAULT false)""",
                // The polling relay's index: unrelayed rows in insertion order.
                "CREATE INDEX outbox_unrelayed ON public.outbox (created_at) WHERE NOT relayed",
                // The index `schema` prints with the table: the router's self-audit reads rows by created_at.
                "CREATE INDEX outbox_created_at ON public.outbox (created_at)",
                // Inserts only: the relay's UPDATEs must not reach the log-based readers. The router's publication lists the
                // columns it reads, as the router makes it (the raw reader and the bare connector read it too); Debezium
                // Server's has every column, as its publication.autocreate.mode=filtered makes it.
                "CREATE PUBLICATION bench_pub FOR TABLE public.outbox (" + ROUTER_COLUMNS + ") WITH (publish = 'insert')",
                "CREATE PUBLICATION bench_pub_all FOR TABLE public.outbox WITH (publish = 'insert')");
        return db;
    }

    /**
     * The publications of a router with {@code shards} shards over {@code bench_pub}'s table, created (once) before any
     * backlog is written: a slot decodes with the catalog as it was when each change was written.
     */
    void createShardPublications(int shards) throws SQLException {
        for (int i = 0; i < shards; i++) {
            String name = "bench_pub_shard_" + i + "_of_" + shards;
            try (var c = connect(); var ps = c.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
                ps.setString(1, name);
                try (var rs = ps.executeQuery()) {
                    if (rs.next()) {
                        continue;
                    }
                }
            }
            execute("CREATE PUBLICATION " + name + " FOR TABLE public.outbox (" + ROUTER_COLUMNS + ") WHERE ((COALESCE(hashtext(aggregateid::text), 0) & 2147483647) % "
                    + shards + " = " + i + ") WITH (publish = 'insert')");
        }
    }

    static BenchDb mariadb(MariaDbServer server) throws SQLException {
        var db = new BenchDb(server, server.createDatabase("bench"), false);
        db.execute("""
                CREATE TABLE outbox (
                  id CHAR(36) PRIMARY KEY,
                  aggregatetype VARCHAR(255) NOT NULL,
                  aggregateid VARCHAR(255) NOT NULL,
                  type VARCHAR(255) NOT NULL,
                  payload JSON,
                  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                  INDEX (created_at))""");
        return db;
    }

    String table() {
        return postgres ? "public.outbox" : database + ".outbox";
    }

    String url() {
        return server.jdbcUrl(database) + (postgres ? "?reWriteBatchedInserts=true" : "?rewriteBatchedStatements=true");
    }

    String insertSql() {
        if (messages) {
            return "CALL public.bench_emit(?::uuid, ?, ?::json)";
        }
        return postgres
                ? "INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, 'Order', ?, 'OrderPlaced', ?::jsonb)"
                : "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, 'Order', ?, 'OrderPlaced', ?)";
    }

    Connection connect() throws SQLException {
        var c = java.sql.DriverManager.getConnection(url(), server.user(), server.password());
        c.setAutoCommit(false);
        return c;
    }

    void execute(String... statements) throws SQLException {
        try (var c = connect(); var st = c.createStatement()) {
            for (String s : statements) {
                st.execute(s);
            }
            c.commit();
        }
    }

    void createSlot(String slot) throws SQLException {
        execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
    }

    void dropSlot(String slot) {
        try {
            execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '" + slot + "'");
        } catch (SQLException e) {
            Benchmark.LOG.warn("Could not drop slot {}: {}", slot, e.getMessage());
        }
    }

    /** What Postgres wrote to its log so far, and how often the outbox was vacuumed: the log readers read all of it. */
    record WalStats(long records, long fullPageImages, long bytes, long autovacuums, long liveRows) {
        String since(WalStats before, long events) {
            long b = bytes - before.bytes;
            return String.format("WAL %,d records, %,d full-page images, %.1f MB (%,d bytes per event), %d autovacuums, outbox %,d rows",
                    records - before.records, fullPageImages - before.fullPageImages, b / 1e6, events == 0 ? 0 : b / events,
                    autovacuums - before.autovacuums, liveRows);
        }
    }

    /** The log's totals (Postgres 14+), or null on MariaDB. */
    WalStats walStats() throws SQLException {
        if (!postgres) {
            return null;
        }
        try (var c = java.sql.DriverManager.getConnection(url(), server.user(), server.password()); var st = c.createStatement();
                var rs = st.executeQuery("SELECT w.wal_records, w.wal_fpi, w.wal_bytes, t.autovacuum_count, t.n_live_tup"
                        + " FROM pg_stat_wal w, pg_stat_user_tables t WHERE t.relid = 'public.outbox'::regclass")) {
            rs.next();
            return new WalStats(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5));
        }
    }

    /**
     * Before each latency contender: an empty, vacuumed outbox and a checkpoint, so that every contender meets the same
     * database. Without it the first contender after the drains writes into a large table that autovacuum comes to
     * during its fastest rate, on a machine whose cores the load already saturates; and a table that grows from empty
     * through one contender's rates gets autovacuumed more often then than through the next one's.
     */
    void reset() throws SQLException {
        if (!postgres) {
            return;
        }
        try (var c = java.sql.DriverManager.getConnection(url(), server.user(), server.password()); var st = c.createStatement()) {
            st.execute("TRUNCATE public.outbox");
            st.execute("VACUUM ANALYZE public.outbox");
            st.execute("CHECKPOINT");
        }
    }

    /** Settles the fresh backlog before the drains: vacuum and analyze it, and write dirty pages out. */
    void vacuum() throws SQLException {
        try (var c = java.sql.DriverManager.getConnection(url(), server.user(), server.password()); var st = c.createStatement()) {
            st.execute(postgres ? "VACUUM ANALYZE public.outbox" : "ANALYZE TABLE outbox");
            if (postgres) {
                st.execute("CHECKPOINT");
            }
        }
    }
}
