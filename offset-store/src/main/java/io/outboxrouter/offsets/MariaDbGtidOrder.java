package io.outboxrouter.offsets;

import io.debezium.document.Document;
import io.debezium.relational.history.HistoryRecord;
import io.debezium.relational.history.HistoryRecordComparator;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Orders schema history records by MariaDB GTID the way the server orders transactions: by sequence number within each
 * replication domain, whichever server wrote them. Debezium's comparison also requires the same server id, so after a
 * failover (the stored position names the new primary, the history the former one) it would take every recorded table
 * shape for one from the future and recover no tables. Positions without MariaDB GTIDs go to the connector's comparator
 * unchanged.
 */
final class MariaDbGtidOrder extends HistoryRecordComparator {
    private static final Pattern MARIADB_GTIDS = Pattern.compile("\\s*\\d+-\\d+-\\d+(\\s*,\\s*\\d+-\\d+-\\d+)*\\s*");
    private static final String GTIDS = "gtids";

    private final HistoryRecordComparator connectors;

    private MariaDbGtidOrder(HistoryRecordComparator connectors) {
        this.connectors = connectors;
    }

    static HistoryRecordComparator around(HistoryRecordComparator connectors) {
        return connectors == null ? null : new MariaDbGtidOrder(connectors);
    }

    @Override
    public boolean isAtOrBefore(HistoryRecord recorded, HistoryRecord desired) {
        String a = gtids(recorded);
        String b = gtids(desired);
        if (a == null || b == null || !MARIADB_GTIDS.matcher(a).matches() || !MARIADB_GTIDS.matcher(b).matches()) {
            return connectors.isAtOrBefore(recorded, desired);
        }
        return connectors.isAtOrBefore(withGtids(recorded, perDomain(a)), withGtids(desired, perDomain(b)));
    }

    /** The newest sequence number of each domain, under one stand-in server id, so that only domain and sequence count. */
    static String perDomain(String gtids) {
        var newest = new TreeMap<Long, Long>();
        for (String g : gtids.split(",")) {
            String[] p = g.trim().split("-");
            newest.merge(Long.parseLong(p[0]), Long.parseLong(p[2]), Math::max);
        }
        var out = new StringBuilder();
        for (Map.Entry<Long, Long> e : newest.entrySet()) {
            out.append(out.isEmpty() ? "" : ",").append(e.getKey()).append("-0-").append(e.getValue());
        }
        return out.toString();
    }

    private static String gtids(HistoryRecord r) {
        Document position = r.document().getDocument(HistoryRecord.Fields.POSITION);
        return position == null ? null : position.getString(GTIDS);
    }

    private static HistoryRecord withGtids(HistoryRecord r, String gtids) {
        Document copy = r.document().clone();
        copy.getDocument(HistoryRecord.Fields.POSITION).setString(GTIDS, gtids);
        return new HistoryRecord(copy);
    }
}
