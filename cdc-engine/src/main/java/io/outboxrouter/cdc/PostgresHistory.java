package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.JdbcConnection;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * A Postgres server's WAL history: its system identifier, the timeline it writes on, and where each earlier timeline of
 * its history ended (read with {@code IDENTIFY_SYSTEM} and {@code TIMELINE_HISTORY}). A promoted standby starts a new
 * timeline where its replay ended: a position read on the former primary at or past that point is of transactions
 * this server never had, though its own WAL may pass the same LSN later.
 *
 * @param system   the cluster's system identifier (kept by standbys and restores, new after initdb)
 * @param timeline the timeline the server writes on
 * @param ends     each earlier timeline of its history, to the LSN where the next one began
 */
record PostgresHistory(String system, int timeline, Map<Integer, Long> ends) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Reads the server's history on a replication connection (the router's role has REPLICATION). */
    static PostgresHistory read(JdbcConnection connection) throws SQLException {
        var replication = new Properties();
        replication.setProperty("replication", "database");
        replication.setProperty("preferQueryMode", "simple");
        replication.setProperty("assumeMinServerVersion", "10");
        try (var c = connection.open(replication); var st = c.createStatement()) {
            String system;
            int timeline;
            try (var rs = st.executeQuery("IDENTIFY_SYSTEM")) {
                rs.next();
                system = rs.getString("systemid");
                timeline = rs.getInt("timeline");
            }
            if (timeline == 1) {
                return new PostgresHistory(system, timeline, Map.of());
            }
            try (var rs = st.executeQuery("TIMELINE_HISTORY " + timeline)) {
                rs.next();
                // text before Postgres 16, bytea since
                String content = "bytea".equals(rs.getMetaData().getColumnTypeName(2))
                        ? new String(rs.getBytes(2), StandardCharsets.UTF_8) : rs.getString(2);
                return new PostgresHistory(system, timeline, parse(content));
            }
        }
    }

    /** A timeline history file: one line per earlier timeline, {@code <timeline>\t<LSN where the next began>\t<reason>}. */
    static Map<Integer, Long> parse(String content) {
        var ends = new TreeMap<Integer, Long>();
        for (String line : content.split("\n")) {
            String trimmed = line.trim();
            if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                continue;
            }
            String[] fields = trimmed.split("\\s+");
            if (fields.length >= 2 && fields[1].contains("/")) {
                ends.put(Integer.parseInt(fields[0]), PostgresSource.parseLsn(fields[1]));
            }
        }
        return ends;
    }

    /**
     * Why a position stored at {@code lsn} while streaming from {@code stamp}'s server is not in this history; empty when
     * it is, or when the two are different clusters (a new cluster after {@code pg_upgrade}, whose other checks apply).
     */
    Optional<String> missing(Stamp stamp, long lsn) {
        if (!system.equals(stamp.system()) || timeline == stamp.timeline()) {
            return Optional.empty();
        }
        Long end = ends.get(stamp.timeline());
        if (end == null) {
            return Optional.of("it was read on timeline " + stamp.timeline() + ", which is not in this server's history (it writes on "
                    + "timeline " + timeline + (ends.isEmpty() ? "" : ", after timelines " + ends.keySet()) + "): this server was "
                    + "restored to an earlier point, or is a standby promoted on another branch");
        }
        if (Long.compareUnsigned(lsn, end) < 0) {
            return Optional.empty(); // read before the branch point: in both histories
        }
        return Optional.of("it was read on timeline " + stamp.timeline() + ", which this server left at " + PostgresSource.formatLsn(end)
                + " (it writes on timeline " + timeline + " since): this server was promoted before it received what the router had "
                + "read from the former primary between " + PostgresSource.formatLsn(end) + " and " + PostgresSource.formatLsn(lsn));
    }

    /** Where the last timeline switch of this history is: the promotion that began the current timeline; null on timeline 1. */
    Long lastSwitch() {
        return ends.entrySet().stream().max(Map.Entry.comparingByKey()).map(Map.Entry::getValue).orElse(null);
    }

    Stamp stamp() {
        return new Stamp(system, timeline);
    }

    /**
     * The history a router streams from, kept beside its position ({@code OffsetTable.TIMELINE_KEY}) at every start, before
     * it stores any position read there.
     */
    record Stamp(String system, int timeline) {
        String json() {
            return JSON.createObjectNode().put("system", system).put("timeline", timeline).toString();
        }

        /** Empty when unreadable. */
        static Optional<Stamp> of(String json) {
            try {
                var node = JSON.readTree(json);
                if (!node.path("system").isTextual() || !node.path("timeline").canConvertToInt()) {
                    return Optional.empty();
                }
                return Optional.of(new Stamp(node.path("system").asText(), node.path("timeline").asInt()));
            } catch (IOException e) {
                return Optional.empty();
            }
        }
    }
}
