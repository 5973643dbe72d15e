package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceConfig;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks the Postgres prerequisites before the connector starts, so that a missing one fails with its fix
 * instead of a connector stack trace; and creates the publication when it is missing (only the outbox tables).
 * An existing publication is used as it is, never altered.
 */
final class PostgresPreflight {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresPreflight.class);

    private PostgresPreflight() {
    }

    static void run(SourceConfig source) {
        var conn = source.connection();
        try (Connection c = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal())) {
            checkWalLevel(c);
            checkTables(c, source.tables());
            var published = new java.util.ArrayList<>(source.tables());
            if (source.postgres().heartbeat()) {
                ensureHeartbeatTable(c, source.postgres().heartbeatTable());
                published.add(source.postgres().heartbeatTable());
            }
            ensurePublication(c, source.postgres().publication(), published);
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            String hint = state.startsWith("28") ? "check source.user and source.password"
                    : state.startsWith("08") ? "check that the database at " + conn.url() + " is running and reachable"
                    : state.startsWith("3D") ? "check the database name in source.url"
                    : "check the source settings";
            throw new SourceSetupException("cannot use the source database " + conn.url() + ": " + e.getMessage()
                    + " (" + hint + ")", e);
        }
    }

    private static void checkWalLevel(Connection c) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW wal_level")) {
            rs.next();
            String level = rs.getString(1);
            if (!"logical".equals(level)) {
                throw new SourceSetupException("Postgres has wal_level=" + level + ", logical decoding needs wal_level=logical: "
                        + "run ALTER SYSTEM SET wal_level = logical; then restart Postgres");
            }
        }
    }

    private static void checkTables(Connection c, List<String> tables) throws SQLException {
        var missing = new ArrayList<String>();
        try (var ps = c.prepareStatement("SELECT to_regclass(?)")) {
            for (String t : tables) {
                ps.setString(1, t);
                try (var rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getString(1) == null) {
                        missing.add(t);
                    }
                }
            }
        }
        if (!missing.isEmpty()) {
            throw new SourceSetupException("outbox table(s) " + String.join(", ", missing) + " do not exist in the source database "
                    + "(source.tables); create them first: `java -jar outbox-router.jar schema` prints the DDL");
        }
    }

    /** The heartbeat table: one row per router, upserted by the connector's heartbeat. */
    static String heartbeatTableSql(String table) {
        return "CREATE TABLE IF NOT EXISTS " + table + " (router_name varchar(200) PRIMARY KEY, beat_at timestamptz NOT NULL)";
    }

    private static void ensureHeartbeatTable(Connection c, String table) throws SQLException {
        try (var st = c.createStatement()) {
            st.execute(heartbeatTableSql(table));
        } catch (SQLException e) {
            throw new SourceSetupException("cannot create the heartbeat table " + table + " (" + e.getMessage()
                    + "); create it: " + heartbeatTableSql(table), e);
        }
    }

    /** The tables a publication publishes, or empty when there is no such publication. */
    private static java.util.Optional<Set<String>> publishedTables(Connection c, String publication) throws SQLException {
        try (var exists = c.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
            exists.setString(1, publication);
            try (var rs = exists.executeQuery()) {
                if (!rs.next()) {
                    return java.util.Optional.empty();
                }
            }
        }
        var published = new HashSet<String>();
        try (var ps = c.prepareStatement("SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    published.add(rs.getString(1));
                }
            }
        }
        return java.util.Optional.of(published);
    }

    private static void ensurePublication(Connection c, String publication, List<String> tables) throws SQLException {
        Set<String> published = publishedTables(c, publication).orElse(null);
        if (published == null) {
            String sql = "CREATE PUBLICATION " + publication + " FOR TABLE " + String.join(", ", tables);
            try (var st = c.createStatement()) {
                st.execute(sql);
            } catch (SQLException e) {
                throw new SourceSetupException("cannot create publication " + publication + " (" + e.getMessage()
                        + "); create it as the table owner: " + sql, e);
            }
            LOG.info("Created publication {} for {}", publication, tables);
            return;
        }
        var missing = tables.stream().filter(t -> !published.contains(t)).toList();
        if (!missing.isEmpty()) {
            throw new SourceSetupException("publication " + publication + " exists but does not publish " + String.join(", ", missing)
                    + ": ALTER PUBLICATION " + publication + " ADD TABLE " + String.join(", ", missing));
        }
        LOG.info("Using existing publication {} ({} tables)", publication, published.size());
    }
}
