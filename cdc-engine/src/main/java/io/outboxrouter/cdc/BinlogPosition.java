package io.outboxrouter.cdc;

import io.outboxrouter.config.JdbcConnection;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLSyntaxErrorException;
import java.util.LinkedHashMap;
import java.util.Map;

/** A binlog position, comparable across files of one server. */
record BinlogPosition(String file, long position) implements Comparable<BinlogPosition> {
    @Override
    public int compareTo(BinlogPosition o) {
        int byFile = Long.compare(sequence(file), sequence(o.file));
        return byFile != 0 ? byFile : Long.compare(position, o.position);
    }

    private static long sequence(String file) {
        int dot = file.lastIndexOf('.');
        try {
            return Long.parseLong(file.substring(dot + 1));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static final String[] END = {"SHOW BINARY LOG STATUS", "SHOW BINLOG STATUS", "SHOW MASTER STATUS"};
    /** The spelling the server understood last time, tried first (retention asks often; a syntax error is logged by the driver). */
    private static volatile int understood;

    /** Where the server will write its next binlog event (the three spellings of MySQL 8.4, MariaDB and older). */
    static BinlogPosition end(JdbcConnection connection) throws SQLException {
        try (var c = connection.open()) {
            SQLException last = null;
            int first = understood;
            for (int i = 0; i < END.length; i++) {
                int which = (first + i) % END.length;
                try (var st = c.createStatement(); var rs = st.executeQuery(END[which])) {
                    understood = which;
                    if (rs.next()) {
                        return new BinlogPosition(rs.getString(1), rs.getLong(2));
                    }
                    throw new SQLException(END[which] + " returned no row: is log_bin on?");
                } catch (SQLSyntaxErrorException e) {
                    last = e;
                }
            }
            throw last;
        }
    }

    /** The binlog files the server keeps, with their sizes. */
    static Map<String, Long> retained(Connection c) throws SQLException {
        var retained = new LinkedHashMap<String, Long>();
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW BINARY LOGS")) {
            while (rs.next()) {
                retained.put(rs.getString(1), rs.getLong(2));
            }
        }
        return retained;
    }
}
