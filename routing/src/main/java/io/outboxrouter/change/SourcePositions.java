package io.outboxrouter.change;

import org.apache.kafka.connect.data.Struct;

/**
 * A change's source position as people read it, from the {@code source} block of a Debezium record: the
 * {@code source.position} header, the same from the router and from the Kafka Connect transformation.
 */
public final class SourcePositions {
    private SourcePositions() {
    }

    /** Postgres LSNs the way Postgres prints them: {@code lsn:0/16B3748}. */
    public static String postgres(Struct source) {
        Long lsn = source.getInt64("lsn");
        return lsn == null ? "lsn:unknown" : "lsn:" + formatLsn(lsn);
    }

    /** A binlog coordinate: {@code binlog:mysql-bin.000003:1234}, with the GTID when the server has one. */
    public static String binlog(Struct source) {
        String file = source.getString("file");
        Long pos = source.getInt64("pos");
        String gtid = source.schema().field("gtid") != null ? source.getString("gtid") : null;
        return "binlog:" + file + ":" + pos + (gtid == null ? "" : ",gtid:" + gtid);
    }

    /** Either, by the fields the block has (Postgres: {@code lsn}; MySQL/MariaDB: {@code file}); {@code unknown} otherwise. */
    public static String of(Struct source) {
        if (source.schema().field("lsn") != null) {
            return postgres(source);
        }
        return source.schema().field("file") != null ? binlog(source) : "unknown";
    }

    /** An LSN as Postgres prints it, {@code 0/16B3748}. */
    public static String formatLsn(long lsn) {
        return Long.toHexString(lsn >>> 32).toUpperCase() + "/" + Long.toHexString(lsn & 0xFFFFFFFFL).toUpperCase();
    }
}
