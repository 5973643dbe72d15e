package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Whether a MariaDB server can resume the router after its stored GTID state, read the way the server resumes a replica:
 * per replication domain, from the transaction after the stored one. A promoted replica that logged what it applied
 * ({@code log_slave_updates}) holds the former primary's transactions under their own GTIDs, so the stored state of the
 * former primary resumes on it.
 *
 * <p>Debezium's own check compares the stored GTIDs, server id included, with {@code gtid_binlog_pos}, which names only
 * the newest transaction per domain: after a failover it refuses every position of the former primary. The router turns
 * that check off for MariaDB and makes this one instead, from {@code gtid_binlog_state} (the newest transaction of every
 * server per domain) and the GTID state at the start of the oldest binlog the server keeps.
 */
final class MariaDbGtids {

    /** One MariaDB GTID: replication domain, server id, sequence number. */
    record Gtid(long domain, long server, long seq) {
        static Gtid parse(String text) {
            String[] p = text.trim().split("-");
            if (p.length != 3) {
                throw new IllegalArgumentException("not a MariaDB GTID (domain-server-sequence): \"" + text + "\"");
            }
            return new Gtid(Long.parseLong(p[0]), Long.parseLong(p[1]), Long.parseLong(p[2]));
        }

        @Override
        public String toString() {
            return domain + "-" + server + "-" + seq;
        }
    }

    /** Why the server cannot resume after a stored GTID. */
    enum Reason {
        /** The stored transaction is newer than anything this server logged in its domain. */
        AHEAD,
        /** The server logged that domain's sequence number under another server's transaction, or never logged the server's. */
        OTHER_HISTORY,
        /** The binlogs holding the transactions after it are purged. */
        PURGED
    }

    /**
     * @param stored   the stored GTID the problem is about
     * @param reason   what the server lacks
     * @param evidence the server's GTID that shows it: the newest of the domain (ahead), of the stored server in that domain
     *                 (another history, null when it has none), or the oldest binlog's start in that domain (purged)
     */
    record Problem(Gtid stored, Reason reason, Gtid evidence) {
    }

    private MariaDbGtids() {
    }

    /** A comma-separated GTID list, as the offset, {@code gtid_binlog_state} and a Gtid_list event ({@code [..]}) give it. */
    static List<Gtid> parseList(String text) {
        var list = new ArrayList<Gtid>();
        if (text == null) {
            return list;
        }
        String body = text.trim();
        if (body.startsWith("[") && body.endsWith("]")) {
            body = body.substring(1, body.length() - 1);
        }
        for (String part : body.split(",")) {
            if (!part.isBlank()) {
                list.add(Gtid.parse(part));
            }
        }
        return list;
    }

    /**
     * The first stored GTID the server cannot resume after, judged from what the server says.
     *
     * @param binlogState  {@code gtid_binlog_state}: the newest logged transaction of each server in each domain
     * @param oldestStart  the GTID state at the start of the oldest binlog kept: per domain, the last transaction before it
     */
    static Optional<Problem> judge(List<Gtid> stored, List<Gtid> binlogState, List<Gtid> oldestStart) {
        for (Gtid g : stored) {
            Gtid newest = null;
            Gtid sameServer = null;
            for (Gtid s : binlogState) {
                if (s.domain() == g.domain()) {
                    if (newest == null || s.seq() > newest.seq()) {
                        newest = s;
                    }
                    if (s.server() == g.server()) {
                        sameServer = s;
                    }
                }
            }
            if (newest == null || g.seq() > newest.seq()) {
                return Optional.of(newest == null ? new Problem(g, Reason.OTHER_HISTORY, null) : new Problem(g, Reason.AHEAD, newest));
            }
            if (sameServer == null || sameServer.seq() < g.seq()) {
                // The domain went past this sequence number, but not with the stored server's transaction.
                return Optional.of(new Problem(g, Reason.OTHER_HISTORY, sameServer));
            }
            for (Gtid start : oldestStart) {
                if (start.domain() == g.domain() && start.seq() > g.seq()) {
                    return Optional.of(new Problem(g, Reason.PURGED, start));
                }
            }
        }
        return Optional.empty();
    }

    /** What a server says of its binlog: the newest GTID of each server per domain, and the oldest kept binlog's start. */
    record ServerState(List<Gtid> binlogState, List<Gtid> oldestStart) {
        /** {@link #judge} of a stored position. */
        Optional<Problem> judgePosition(String stored) {
            return judge(parseList(stored), binlogState, oldestStart);
        }

        /**
         * Whether the server logged a recorded table change: one at a GTID it does not hold comes from another history.
         * Purged is no matter here: the records before the position are read, not the binlog.
         */
        Optional<Problem> judgeRecorded(String recorded) {
            return judge(parseList(recorded), binlogState, List.of());
        }
    }

    /** {@link #judge} with what {@code c}'s server says. */
    static Optional<Problem> check(Connection c, String stored) throws SQLException {
        return read(c).judgePosition(stored);
    }

    static ServerState read(Connection c) throws SQLException {
        String state;
        String oldest = null;
        try (var st = c.createStatement()) {
            try (var rs = st.executeQuery("SELECT @@GLOBAL.gtid_binlog_state")) {
                rs.next();
                state = rs.getString(1);
            }
            try (var rs = st.executeQuery("SHOW BINARY LOGS")) {
                if (rs.next()) {
                    oldest = rs.getString(1);
                }
            }
        }
        String oldestStart = "";
        if (oldest != null) {
            try (var ps = c.prepareStatement("SELECT BINLOG_GTID_POS(?, 4)")) {
                ps.setString(1, oldest);
                try (var rs = ps.executeQuery()) {
                    if (rs.next() && rs.getString(1) != null) {
                        oldestStart = rs.getString(1);
                    }
                }
            }
        }
        return new ServerState(parseList(state), parseList(oldestStart));
    }
}
