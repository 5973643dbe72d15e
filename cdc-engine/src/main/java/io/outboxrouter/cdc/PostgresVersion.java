package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;

/** What a Postgres server's major version allows, asked in one way. */
final class PostgresVersion {
    /** pgoutput carries logical decoding messages. */
    static final int MESSAGES = 14;
    /** Publications take column lists and row filters. */
    static final int COLUMN_LISTS = 15;
    /** Logical slots can be failover slots, kept on standbys. */
    static final int FAILOVER_SLOTS = 17;

    private PostgresVersion() {
    }

    /** The server's major version, e.g. 17. */
    static int major(Connection c) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW server_version_num")) {
            rs.next();
            return Integer.parseInt(rs.getString(1)) / 10000;
        }
    }

    static boolean atLeast(Connection c, int major) throws SQLException {
        return major(c) >= major;
    }

    /** The version as the server prints it, for messages. */
    static String describe(Connection c) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW server_version")) {
            rs.next();
            return rs.getString(1);
        }
    }
}
