package io.outboxrouter.cdc;

import io.outboxrouter.config.Shard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The Postgres DDL the router runs or prints (the {@code schema} command): one text for each, used by both. */
public final class PostgresDdl {
    private PostgresDdl() {
    }

    /** The heartbeat table: one row per router, upserted by the connector's heartbeat. */
    public static String heartbeatTable(String table) {
        return "CREATE TABLE IF NOT EXISTS " + table + " (router_name varchar(200) PRIMARY KEY, beat_at timestamptz NOT NULL)";
    }

    /**
     * The heartbeat statement the connector runs every {@code tick}; its row change moves the slot's confirmed position.
     * It writes only once the row is {@code every} old: a statement that changes no row writes no WAL.
     */
    static String heartbeat(String table, String routerName, Duration every, Duration tick) {
        String name = "'" + routerName.replace("'", "''") + "'";
        return "INSERT INTO " + table + " (router_name, beat_at) SELECT " + name + ", now()" + unlessBeatSince(table, name, every, tick)
                + " ON CONFLICT (router_name) DO UPDATE SET beat_at = EXCLUDED.beat_at";
    }

    /**
     * A shard's heartbeat: a shard's publication carries inserts only (see {@link #createShardPublication}), so the row is
     * deleted and inserted again rather than updated; both only once the row is {@code every} old.
     */
    static String shardHeartbeat(String table, String shardName, Duration every, Duration tick) {
        String name = "'" + shardName.replace("'", "''") + "'";
        return "DELETE FROM " + table + " WHERE router_name = " + name + (every.compareTo(tick) > 0 ? " AND beat_at <= " + since(every, tick) : "")
                + "; INSERT INTO " + table + " (router_name, beat_at) SELECT " + name + ", now() WHERE NOT EXISTS (SELECT 1 FROM " + table
                + " WHERE router_name = " + name + ")";
    }

    private static String unlessBeatSince(String table, String name, Duration every, Duration tick) {
        return every.compareTo(tick) > 0
                ? " WHERE NOT EXISTS (SELECT 1 FROM " + table + " WHERE router_name = " + name + " AND beat_at > " + since(every, tick) + ")"
                : "";
    }

    /** The time a row written {@code every} ago, less half a tick, has: the tick that first finds it that old writes. */
    private static String since(Duration every, Duration tick) {
        return "now() - interval '" + (every.toMillis() - tick.toMillis() / 2) + " milliseconds'";
    }

    /**
     * The publication the router reads: only the given tables.
     *
     * @param viaRoot whether a partitioned table's changes are published under its own name, not its partitions' (Postgres 13+)
     */
    public static String createPublication(String publication, List<String> tables, boolean viaRoot) {
        return createPublication(publication, tables, viaRoot, Map.of());
    }

    /** @param columnLists a table's column list (Postgres 15+), for the tables that have one */
    public static String createPublication(String publication, List<String> tables, boolean viaRoot, Map<String, List<String>> columnLists) {
        if (tables.isEmpty()) {
            // A tableless outbox: pgoutput needs a publication, and logical decoding messages pass whatever it publishes.
            return "CREATE PUBLICATION " + publication;
        }
        // With column lists, inserts only: a list on a publication of updates and deletes must cover the table's replica
        // identity, and an identity changed later (REPLICA IDENTITY FULL) would make Postgres refuse every DELETE of the table.
        var with = new ArrayList<String>();
        if (!columnLists.isEmpty()) {
            with.add("publish = 'insert'");
        }
        if (viaRoot) {
            with.add("publish_via_partition_root = true");
        }
        return "CREATE PUBLICATION " + publication + " FOR TABLE " + String.join(", ", tables.stream().map(t -> entry(t, columnLists)).toList())
                + (with.isEmpty() ? "" : " WITH (" + String.join(", ", with) + ")");
    }

    /** A table entry of a publication: the table, and its column list when it has one. */
    static String entry(String table, Map<String, List<String>> columnLists) {
        var list = columnLists.get(table);
        return list == null ? table : table + " (" + String.join(", ", list.stream().map(PostgresDdl::ident).toList()) + ")";
    }

    /**
     * The statements that give one table of an existing publication a new column list, keeping the publication's other
     * tables and the table's row filter: in one transaction, so that no change is decoded with the table out of the publication.
     *
     * @param rowFilter the entry's row filter, or null
     */
    public static String setColumnList(String publication, String table, List<String> list, String rowFilter) {
        return "BEGIN; ALTER PUBLICATION " + publication + " DROP TABLE " + table + "; ALTER PUBLICATION " + publication + " ADD TABLE "
                + entry(table, Map.of(table, list)) + (rowFilter == null ? "" : " WHERE (" + rowFilter + ")") + "; COMMIT";
    }

    /** A column name as SQL takes it: quoted unless it is a plain lower-case name that is not a reserved word. */
    static String ident(String column) {
        return column.matches("[a-z_][a-z0-9_$]*") && !RESERVED.contains(column) ? column : "\"" + column.replace("\"", "\"\"") + "\"";
    }

    /** Postgres's reserved key words (and those it reserves as function or type names), which a column name must quote. */
    private static final java.util.Set<String> RESERVED = java.util.Set.of("all", "analyse", "analyze", "and", "any", "array", "as",
            "asc", "asymmetric", "authorization", "binary", "both", "case", "cast", "check", "collate", "collation", "column",
            "concurrently", "constraint", "create", "cross", "current_catalog", "current_date", "current_role", "current_schema",
            "current_time", "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end",
            "except", "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant", "group", "having", "ilike", "in",
            "initially", "inner", "intersect", "into", "is", "isnull", "join", "lateral", "leading", "left", "like", "limit",
            "localtime", "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or", "order", "outer",
            "overlaps", "placing", "primary", "references", "returning", "right", "select", "session_user", "similar", "some",
            "symmetric", "system_user", "table", "tablesample", "then", "to", "trailing", "true", "union", "unique", "user", "using",
            "variadic", "verbose", "when", "where", "window", "with");

    /**
     * The hash Postgres computes of an aggregate id column of this type (as {@code format_type} names it), for the row
     * filter of a shard's publication (which allows only built-in immutable functions, and no casts through text); null
     * for a type without one.
     */
    public static String aggregateHash(String column, String type) {
        return switch (type) {
            case "text", "character varying", "character" -> "hashtext(" + column + "::text)";
            case "uuid" -> "uuid_hash(" + column + ")";
            case "bigint" -> "hashint8(" + column + ")";
            case "integer" -> "hashint4(" + column + ")";
            case "smallint" -> "hashint2(" + column + ")";
            default -> null;
        };
    }

    /**
     * The rows of one shard: the aggregate id's hash, made non-negative, modulo the number of shards. A row without an
     * aggregate id hashes as 0 (shard 0): a filter that is NULL would publish it in no shard at all, where the router
     * would have sent it to the dead letters.
     */
    public static String shardFilter(String hash, Shard shard) {
        return "(COALESCE(" + hash + ", 0) & 2147483647) % " + shard.count() + " = " + shard.index();
    }

    /**
     * The publication of one shard: each outbox table's rows of that shard and the shard's heartbeat row, inserts only.
     * Only inserts, because a publication that also publishes updates or deletes makes Postgres refuse every UPDATE and
     * DELETE of a table whose row filter reads a column outside its replica identity (the outbox's cleanup jobs).
     *
     * @param filters        outbox table to its row filter ({@link #shardFilter})
     * @param heartbeatTable the heartbeat table, or null
     * @param shardName      the shard's name, whose heartbeat row it publishes
     */
    public static String createShardPublication(String publication, Map<String, String> filters, String heartbeatTable,
                                                String shardName, boolean viaRoot) {
        return createShardPublication(publication, filters, heartbeatTable, shardName, viaRoot, Map.of());
    }

    /** @param columnLists a table's column list (Postgres 15+), for the tables that have one */
    public static String createShardPublication(String publication, Map<String, String> filters, String heartbeatTable,
                                                String shardName, boolean viaRoot, Map<String, List<String>> columnLists) {
        return "CREATE PUBLICATION " + publication + " FOR TABLE " + String.join(", ", shardTables(filters, heartbeatTable, shardName,
                columnLists))
                + " WITH (publish = 'insert'" + (viaRoot ? ", publish_via_partition_root = true" : "") + ")";
    }

    /**
     * The statements that make an existing publication a shard's, keeping its identity: a slot decodes each change with
     * the publication as it was, so one dropped and created again under a slot leaves the slot unable to decode.
     */
    public static String alterShardPublication(String publication, Map<String, String> filters, String heartbeatTable,
                                               String shardName, boolean viaRoot, Map<String, List<String>> columnLists) {
        return "ALTER PUBLICATION " + publication + " SET TABLE " + String.join(", ", shardTables(filters, heartbeatTable, shardName,
                columnLists))
                + "; ALTER PUBLICATION " + publication + " SET (publish = 'insert'" + (viaRoot ? ", publish_via_partition_root = true" : "")
                + ")";
    }

    private static List<String> shardTables(Map<String, String> filters, String heartbeatTable, String shardName,
                                            Map<String, List<String>> columnLists) {
        var tables = new ArrayList<String>();
        filters.forEach((table, filter) -> tables.add(entry(table, columnLists) + " WHERE (" + filter + ")"));
        if (heartbeatTable != null) {
            tables.add(heartbeatTable + " WHERE (router_name = '" + shardName.replace("'", "''") + "')");
        }
        return tables;
    }
}
