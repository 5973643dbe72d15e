package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceConfig;
import io.outboxrouter.config.SourceKind;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.List;
import java.util.Locale;

/**
 * Checks a MySQL/MariaDB server's binlog prerequisites before the connector starts: every missing one is named with
 * its fix, all at once, and the router does not start half-configured.
 */
final class BinlogPreflight {
    private BinlogPreflight() {
    }

    static void run(SourceConfig source, Collection<String> columns) {
        var failed = checks(source, columns).stream().filter(c -> !c.ok()).map(BinlogPreflight::legacyLine).toList();
        if (!failed.isEmpty()) {
            throw new SourceSetupException("the source database is not set up for the router: " + String.join("; ", failed));
        }
    }

    private static String legacyLine(Check c) {
        return c.detail() + (c.fix().isEmpty() ? "" : ": " + c.fix());
    }

    /** Every binlog prerequisite, checked; a connection failure is one failed check. */
    static List<Check> checks(SourceConfig source, Collection<String> columns) {
        var conn = source.connection();
        var checks = new ArrayList<Check>();
        try (Connection c = conn.open()) {
            checks.add(Check.pass("source connection", "connected to " + conn.redactedUrl() + " as " + conn.user()));
            expect(c, "log_bin", "ON", "start the server with --log-bin (log_bin = ON in my.cnf)", checks);
            expect(c, "binlog_format", "ROW", "SET GLOBAL binlog_format = 'ROW' (and binlog_format = ROW in my.cnf)", checks);
            expect(c, "binlog_row_image", "FULL", "SET GLOBAL binlog_row_image = 'FULL' (and in my.cnf)", checks);
            String serverId = variable(c, "server_id");
            checks.add(serverId == null || serverId.equals("0")
                    ? Check.fail("server_id", "server_id is 0", "give the server a non-zero server_id in my.cnf")
                    : Check.pass("server_id", "server_id = " + serverId));
            for (String t : source.tables()) {
                String actual = storedName(c, t);
                if (actual == null) {
                    checks.add(Check.fail("outbox table " + t, "outbox table " + t + " does not exist (source.tables)",
                            "`java -jar outbox-router.jar schema --config ...` prints the DDL"));
                } else if (!actual.equals(t)) {
                    checks.add(Check.fail("outbox table " + t, "source.tables names " + t + ", but the server keeps the table as "
                                    + actual + " (lower_case_table_names): its changes would arrive under that name and not be routed",
                            "name it as the server does: source.tables: [" + actual + "]"));
                } else {
                    checks.add(Check.pass("outbox table " + t, "exists"));
                    checks.add(Check.columns(t, columns(c, t), columns));
                }
            }
            uuidColumns(c, source.tables()).forEach(col -> checks.add(Check.fail("column " + col,
                    "column " + col + " has the native UUID type, which Debezium's binlog reader (3.5) misreads when a value's "
                            + "last byte is 0 (1 row in 256 arrives shifted by a byte, with a wrong event id)",
                    "store ids as CHAR(36): ALTER TABLE " + col.substring(0, col.lastIndexOf('.')) + " MODIFY "
                            + col.substring(col.lastIndexOf('.') + 1) + " CHAR(36) NOT NULL")));
            checks.add(failover(c, source.kind() == SourceKind.MARIADB));
            var lacking = missingGrants(c);
            checks.add(lacking.isEmpty() ? Check.pass("grants", "replication privileges granted")
                    : Check.fail("grants", "user " + conn.user() + " lacks " + String.join(", ", lacking),
                    "GRANT " + String.join(", ", lacking) + " ON *.* TO '" + conn.user() + "'"));
            return checks;
        } catch (SQLException e) {
            checks.add(Check.connectionFailed(conn.redactedUrl(), e));
            return checks;
        }
    }

    /**
     * Whether a promoted replica can take the router over: the router resumes by GTID, which a replica keeps for what it
     * applies only when it logs it. Read on this server; the replicas' own settings show when check runs against them.
     */
    static Check failover(Connection c, boolean mariadb) throws SQLException {
        String logsApplied = variable(c, "log_replica_updates");
        if (logsApplied == null) {
            logsApplied = variable(c, "log_slave_updates");
        }
        String setting = mariadb ? "log_slave_updates" : "log_replica_updates";
        boolean replica = isReplica(c, mariadb);
        if (replica && !"ON".equalsIgnoreCase(logsApplied) && !"1".equals(logsApplied)) {
            return Check.fail("failover", "this server is a replica that does not log what it applies (" + setting + " = "
                    + logsApplied + "): its binlog holds none of the primary's transactions, so the router reading it sees no "
                    + "outbox rows, and after a promotion it could not resume here", "set " + setting + " = ON in my.cnf and restart it");
        }
        if (!mariadb) {
            String gtidMode = variable(c, "gtid_mode");
            if (!"ON".equalsIgnoreCase(gtidMode)) {
                return Check.warn("failover", "gtid_mode = " + gtidMode + ": the router's position is a file and offset of this "
                        + "server's binlog, which mean nothing on a replica; after a failover it cannot resume on the promoted one",
                        "turn GTIDs on across the cluster (gtid_mode = ON, enforce_gtid_consistency = ON), with " + setting
                                + " = ON on every replica");
            }
        }
        if (replica) {
            return Check.pass("failover", "this server is a replica that logs what it applies (" + setting + " = ON): promoted, "
                    + "it takes the router over from its stored GTID" + (mariadb ? "" : " set"));
        }
        return Check.pass("failover", (mariadb ? "the router resumes by GTID" : "gtid_mode = ON: the router resumes by GTID")
                + ": a promoted replica takes it over when it logs what it applies (" + setting + " = ON; run check against "
                + "a replica's address to see it)");
    }

    /** Whether the server replicates from another; false when the user may not ask. */
    private static boolean isReplica(Connection c, boolean mariadb) {
        try (var st = c.createStatement(); var rs = st.executeQuery(mariadb ? "SHOW SLAVE STATUS" : "SHOW REPLICA STATUS")) {
            return rs.next();
        } catch (SQLException e) {
            return false;
        }
    }

    private static void expect(Connection c, String name, String wanted, String fix, List<Check> checks) throws SQLException {
        String value = variable(c, name);
        checks.add(value == null || !value.equalsIgnoreCase(wanted)
                ? Check.fail(name, name + " is " + value + ", the router needs " + wanted, fix)
                : Check.pass(name, name + " = " + value));
    }

    private static String variable(Connection c, String name) throws SQLException {
        try (var ps = c.prepareStatement("SHOW GLOBAL VARIABLES LIKE ?")) {
            ps.setString(1, name);
            try (var rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(2) : null;
            }
        }
    }

    /** The table's name as the server keeps it (database.table), matched as the server matches names; null when none. */
    private static String storedName(Connection c, String table) throws SQLException {
        int dot = table.indexOf('.');
        try (var ps = c.prepareStatement("SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema = ? AND table_name = ?")) {
            ps.setString(1, table.substring(0, dot));
            ps.setString(2, table.substring(dot + 1));
            try (var rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) + "." + rs.getString(2) : null;
            }
        }
    }

    /** The columns of a table, as the server names them. */
    static Set<String> columns(Connection c, String table) throws SQLException {
        int dot = table.indexOf('.');
        var columns = new LinkedHashSet<String>();
        try (var ps = c.prepareStatement("SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                + "ORDER BY ordinal_position")) {
            ps.setString(1, table.substring(0, dot));
            ps.setString(2, table.substring(dot + 1));
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        }
        return columns;
    }

    /** Outbox columns of MariaDB's native UUID type, as table.column. */
    private static List<String> uuidColumns(Connection c, List<String> tables) throws SQLException {
        var found = new ArrayList<String>();
        try (var ps = c.prepareStatement("SELECT column_name FROM information_schema.columns "
                + "WHERE table_schema = ? AND table_name = ? AND data_type = 'uuid' ORDER BY ordinal_position")) {
            for (String t : tables) {
                int dot = t.indexOf('.');
                ps.setString(1, t.substring(0, dot));
                ps.setString(2, t.substring(dot + 1));
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        found.add(t + "." + rs.getString(1));
                    }
                }
            }
        }
        return found;
    }

    /** The global privileges the binlog reader needs that SHOW GRANTS does not show. */
    private static List<String> missingGrants(Connection c) throws SQLException {
        var grants = new StringBuilder();
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW GRANTS")) {
            while (rs.next()) {
                grants.append(rs.getString(1).toUpperCase(Locale.ROOT)).append('\n');
            }
        } catch (SQLException e) {
            if (String.valueOf(e.getMessage()).contains("skip-grant-tables")) {
                return List.of(); // a server that checks no privileges lacks none
            }
            throw e;
        }
        String all = grants.toString();
        if (all.contains("GRANT ALL PRIVILEGES ON *.*")) {
            return List.of();
        }
        var missing = new ArrayList<String>();
        // MariaDB 10.5+ renamed REPLICATION CLIENT to BINLOG MONITOR and REPLICATION SLAVE to REPLICATION REPLICA.
        if (!(all.contains("REPLICATION SLAVE") || all.contains("REPLICATION REPLICA"))) {
            missing.add("REPLICATION SLAVE");
        }
        if (!(all.contains("REPLICATION CLIENT") || all.contains("BINLOG MONITOR") || all.contains("SLAVE MONITOR"))) {
            missing.add("REPLICATION CLIENT");
        }
        return missing;
    }
}
