package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The GTID set a MySQL server had executed before a binlog position: with GTIDs on, Debezium's MySQL connector resumes
 * from such a set (the server sends every transaction not in it), and a stored position without one fails at start.
 * It is the file's Previous_gtids, plus the GTID of every transaction in the file before the position.
 */
final class MySqlGtids {
    private static final Pattern GTID_NEXT = Pattern.compile("'([^']+)'");
    /** GTIDs gathered before the server folds them into intervals, so that a large file keeps the text small. */
    private static final int FOLD_EVERY = 10_000;

    private MySqlGtids() {
    }

    /** Empty when the server runs without GTIDs. */
    static Optional<String> executedBefore(Connection c, String file, long pos) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT @@GLOBAL.gtid_mode")) {
            if (!rs.next() || "OFF".equalsIgnoreCase(rs.getString(1))) {
                return Optional.empty();
            }
        }
        String set = "";
        var pending = new StringBuilder();
        int gathered = 0;
        // The GTID of the transaction being read: it counts once the next one begins before the position, since a
        // position inside a transaction (a record's header names its first event after the GTID) means it is not done.
        String current = null;
        try (var st = c.createStatement()) {
            st.setFetchSize(Integer.MIN_VALUE); // Connector/J streams the rows: a binlog file can hold millions of events
            try (var rs = st.executeQuery("SHOW BINLOG EVENTS IN '" + file.replace("'", "''") + "'")) {
                while (rs.next()) {
                    String type = rs.getString("Event_type");
                    String info = rs.getString("Info");
                    if (rs.getLong("Pos") >= pos) {
                        if ("Gtid".equals(type) && current != null) {
                            pending.append(',').append(current); // the position is the boundary after it
                        }
                        current = null;
                        break;
                    }
                    if ("Previous_gtids".equals(type) && info != null) {
                        pending.append(',').append(info.replace("\n", ""));
                    } else if ("Gtid".equals(type) && info != null) {
                        var m = GTID_NEXT.matcher(info);
                        if (m.find()) {
                            if (current != null) {
                                pending.append(',').append(current);
                                gathered++;
                            }
                            current = m.group(1);
                        }
                    }
                    if (gathered >= FOLD_EVERY) {
                        set = fold(c, set, pending);
                        gathered = 0;
                    }
                }
            }
        }
        if (current != null) {
            pending.append(',').append(current); // the position is the end of the file: its last transaction is done
        }
        return Optional.of(fold(c, set, pending));
    }

    /** The union of a set and the GTIDs gathered since, as the server writes a set (intervals, sorted). */
    private static String fold(Connection c, String set, StringBuilder pending) throws SQLException {
        String union = (set + pending).replaceAll("^,+", "");
        pending.setLength(0);
        if (union.isBlank()) {
            return "";
        }
        try (var ps = c.prepareStatement("SELECT GTID_SUBTRACT(?, '')")) {
            ps.setString(1, union);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1).replace("\n", "");
            }
        }
    }
}
