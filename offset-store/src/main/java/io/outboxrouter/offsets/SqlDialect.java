package io.outboxrouter.offsets;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;

/** The SQL differences between the databases the offset table lives in. */
enum SqlDialect {
    POSTGRES {
        @Override
        Properties timeouts() {
            var p = new Properties();
            p.setProperty("connectTimeout", "5");
            p.setProperty("socketTimeout", "10");
            p.setProperty("tcpKeepAlive", "true");
            return p;
        }

        @Override
        void expireDeadSession(Connection c, int seconds) throws SQLException {
            try (var st = c.createStatement()) {
                // The server notices a client that went away (a lost host) by TCP keepalive instead of after hours.
                st.execute("SET tcp_keepalives_idle = " + Math.max(1, seconds / 3));
                st.execute("SET tcp_keepalives_interval = 1");
                st.execute("SET tcp_keepalives_count = " + Math.max(1, seconds / 3));
            }
        }

        @Override
        String endIdleTransactions(int seconds) {
            return "SET idle_in_transaction_session_timeout = '" + seconds + "s'";
        }

        @Override
        String upsert(String table) {
            return "INSERT INTO " + table + " (router_name, offset_key, offset_value, updated_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP) "
                    + "ON CONFLICT (router_name, offset_key) DO UPDATE SET offset_value = EXCLUDED.offset_value, updated_at = EXCLUDED.updated_at";
        }

        @Override
        String insertIfAbsent(String table) {
            return "INSERT INTO " + table + " (router_name, offset_key, offset_value, updated_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP) "
                    + "ON CONFLICT (router_name, offset_key) DO NOTHING";
        }
    },
    MYSQL {
        @Override
        Properties timeouts() {
            var p = new Properties();
            p.setProperty("connectTimeout", "5000");
            p.setProperty("socketTimeout", "10000");
            p.setProperty("tcpKeepAlive", "true");
            return p;
        }

        @Override
        void expireDeadSession(Connection c, int seconds) throws SQLException {
            try (var st = c.createStatement()) {
                // The lock check keeps the session busy every second; a silent client's session ends after this.
                st.execute("SET SESSION wait_timeout = " + seconds);
            }
        }

        /**
         * MariaDB 10.3+ ends a session idle in a transaction ({@code /*M!100300} runs on MariaDB alone). MySQL has no such
         * setting: there the session ends after {@link #MYSQL_IDLE_SECONDS} idle, in a transaction or not, and the pool
         * retires its connections before that (see {@link #maxConnectionLifetimeMillis}).
         */
        @Override
        String endIdleTransactions(int seconds) {
            return "SET SESSION wait_timeout = " + MYSQL_IDLE_SECONDS + " /*M!100300 , idle_transaction_timeout = " + seconds + " */";
        }

        @Override
        long maxConnectionLifetimeMillis() {
            return 30_000; // under MYSQL_IDLE_SECONDS, so that the server never closes a connection idle in the pool
        }

        @Override
        String upsert(String table) {
            return "INSERT INTO " + table + " (router_name, offset_key, offset_value, updated_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP(3)) "
                    + "ON DUPLICATE KEY UPDATE offset_value = VALUES(offset_value), updated_at = VALUES(updated_at)";
        }

        @Override
        String insertIfAbsent(String table) {
            return "INSERT INTO " + table + " (router_name, offset_key, offset_value, updated_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP(3)) "
                    + "ON DUPLICATE KEY UPDATE offset_value = offset_value";
        }
    };

    static SqlDialect of(String jdbcUrl) {
        if (jdbcUrl.startsWith("jdbc:postgresql:")) {
            return POSTGRES;
        }
        if (jdbcUrl.startsWith("jdbc:mysql:") || jdbcUrl.startsWith("jdbc:mariadb:")) {
            return MYSQL;
        }
        throw new IllegalArgumentException("offsets: unsupported database in " + jdbcUrl
                + " (supported: jdbc:postgresql:, jdbc:mysql:, jdbc:mariadb:)");
    }

    /** Driver properties for a connection that must notice a dead server within seconds (the router lock). */
    abstract Properties timeouts();

    /** Makes the server end this session within about {@code seconds} when its client goes silent, releasing its locks. */
    abstract void expireDeadSession(Connection c, int seconds) throws SQLException;

    /**
     * The statement that makes the server end this session when a transaction stays open without a statement for
     * {@code seconds}: an offset write caught open by a paused or lost process would otherwise hold the offsets rows
     * (and the fencing token a standby must take) until TCP gives up on it. Not for the router lock's session, which is
     * idle by design.
     */
    abstract String endIdleTransactions(int seconds);

    /** How long a MySQL session of the offset store may stay idle (in a transaction or not) before the server ends it. */
    static final int MYSQL_IDLE_SECONDS = 45;

    /** How long the pool keeps a connection; 0: as long as it likes. */
    long maxConnectionLifetimeMillis() {
        return 0;
    }

    /** Insert or replace one row; parameters: router name, key, value. */
    abstract String upsert(String table);

    /** Inserts a row unless its key is there already (then nothing changes). */
    abstract String insertIfAbsent(String table);

    /** The schema history of a binlog source: DDL records in order, per router. */
    String createHistoryTable(String table) {
        String text = this == MYSQL ? "LONGTEXT" : "TEXT";
        return "CREATE TABLE IF NOT EXISTS " + table + " ("
                + "router_name VARCHAR(200) NOT NULL, "
                + "seq BIGINT NOT NULL, "
                + "record " + text + " NOT NULL, "
                + "created_at TIMESTAMP(3) NOT NULL, "
                + "PRIMARY KEY (router_name, seq))";
    }

    /**
     * The key columns stay under MySQL's 3072-byte index limit in utf8mb4 (700 characters x 4 bytes).
     * Offset keys are short JSON such as {@code ["orders-router",{"server":"orders-router"}]}.
     */
    String createTable(String table) {
        String text = this == MYSQL ? "MEDIUMTEXT" : "TEXT";
        return "CREATE TABLE IF NOT EXISTS " + table + " ("
                + "router_name VARCHAR(200) NOT NULL, "
                + "offset_key VARCHAR(500) NOT NULL, "
                + "offset_value " + text + " NOT NULL, "
                + "updated_at TIMESTAMP(3) NOT NULL, "
                + "PRIMARY KEY (router_name, offset_key))";
    }
}
