package io.outboxrouter.cdc;

import java.util.List;

/** The Postgres DDL the router runs or prints (the {@code schema} command): one text for each, used by both. */
public final class PostgresDdl {
    private PostgresDdl() {
    }

    /** The heartbeat table: one row per router, upserted by the connector's heartbeat. */
    public static String heartbeatTable(String table) {
        return "CREATE TABLE " + table + " (router_name varchar(200) PRIMARY KEY, beat_at timestamptz NOT NULL)";
    }

    /** The heartbeat statement the connector runs; its row change moves the slot's confirmed position. */
    static String heartbeat(String table, String routerName) {
        return "INSERT INTO " + table + " (router_name, beat_at) VALUES ('" + routerName.replace("'", "''")
                + "', now()) ON CONFLICT (router_name) DO UPDATE SET beat_at = EXCLUDED.beat_at";
    }

    /**
     * The publication the router reads: only the given tables.
     *
     * @param viaRoot whether a partitioned table's changes are published under its own name, not its partitions' (Postgres 13+)
     */
    public static String createPublication(String publication, List<String> tables, boolean viaRoot) {
        return "CREATE PUBLICATION " + publication + " FOR TABLE " + String.join(", ", tables)
                + (viaRoot ? " WITH (publish_via_partition_root = true)" : "");
    }
}
