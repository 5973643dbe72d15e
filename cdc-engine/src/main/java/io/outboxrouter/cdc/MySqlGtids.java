package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The GTID set a MySQL server had executed before a binlog position: with GTIDs on, Debezium's MySQL connector resumes
 * from such a set (the server sends every transaction not in it), and a stored position without one fails at start.
 * It is the file's Previous_gtids, plus the GTID of every transaction in the file that ended before the position.
 */
final class MySqlGtids {
    private static final Pattern GTID_NEXT = Pattern.compile("'([^']+)'");

    /** What the binlog says before a position: the set executed before it, and the transaction the position is in. */
    record Before(String executed, Optional<String> transactionAt) {
    }

    private MySqlGtids() {
    }

    /** Empty when the server runs without GTIDs. */
    static Optional<Before> executedBefore(Connection c, String file, long pos) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT @@GLOBAL.gtid_mode")) {
            if (!rs.next() || "OFF".equalsIgnoreCase(rs.getString(1))) {
                return Optional.empty();
            }
        }
        String previous = "";
        var done = new Intervals();
        // The GTID of the transaction being read: done once the next one begins before the position; a position inside
        // a transaction (a record's header names an event after its GTID) means it is not done.
        String current = null;
        String at = null;
        try (var st = c.createStatement()) {
            st.setFetchSize(Integer.MIN_VALUE); // Connector/J streams the rows: a binlog file can hold millions of events
            try (var rs = st.executeQuery("SHOW BINLOG EVENTS IN '" + file.replace("'", "''") + "'")) {
                while (rs.next()) {
                    String type = rs.getString("Event_type");
                    String info = rs.getString("Info");
                    if ("Previous_gtids".equals(type)) {
                        previous = info == null ? "" : info.replace("\n", "");
                        continue;
                    }
                    boolean gtid = type != null && type.startsWith("Gtid");
                    if (rs.getLong("Pos") >= pos) {
                        if (gtid) {
                            if (current != null) {
                                done.add(current); // the position is the boundary after it
                            }
                            var m = info == null ? null : GTID_NEXT.matcher(info);
                            at = m != null && m.find() ? m.group(1) : null;
                        } else {
                            at = current;
                        }
                        current = null;
                        break;
                    }
                    if (gtid && info != null) {
                        var m = GTID_NEXT.matcher(info);
                        if (m.find()) {
                            if (current != null) {
                                done.add(current);
                            }
                            current = m.group(1);
                        }
                    }
                }
            }
        }
        if (current != null) {
            done.add(current); // the position is the end of the file: its last transaction is done
        }
        // Folded by the server once the streamed result is closed (a second statement cannot run beside it).
        String union = String.join(",", List.of(previous, done.toString()).stream().filter(s -> !s.isBlank()).toList());
        if (union.isBlank()) {
            return Optional.of(new Before("", Optional.ofNullable(at)));
        }
        try (var ps = c.prepareStatement("SELECT GTID_SUBTRACT(?, '')")) {
            ps.setString(1, union);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return Optional.of(new Before(rs.getString(1).replace("\n", ""), Optional.ofNullable(at)));
            }
        }
    }

    /** GTIDs as intervals per source (uuid, or uuid:tag): one server's come in order, so the list stays short. */
    private static final class Intervals {
        private final Map<String, List<long[]>> bySource = new LinkedHashMap<>();

        void add(String gtid) {
            int colon = gtid.lastIndexOf(':');
            String source = gtid.substring(0, colon);
            long n = Long.parseLong(gtid.substring(colon + 1));
            var list = bySource.computeIfAbsent(source, s -> new ArrayList<>());
            var last = list.isEmpty() ? null : list.get(list.size() - 1);
            if (last != null && n == last[1] + 1) {
                last[1] = n;
            } else if (last == null || n > last[1]) {
                list.add(new long[] {n, n});
            } else {
                list.add(0, new long[] {n, n}); // out of order: the server's fold sorts and merges it
            }
        }

        @Override
        public String toString() {
            var parts = new ArrayList<String>();
            bySource.forEach((source, list) -> {
                var sb = new StringBuilder(source);
                for (long[] i : list) {
                    sb.append(':').append(i[0]).append(i[0] == i[1] ? "" : "-" + i[1]);
                }
                parts.add(sb.toString());
            });
            return String.join(",", parts);
        }
    }
}
