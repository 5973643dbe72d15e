package io.outboxrouter.schema;

import io.outboxrouter.cdc.PostgresDdl;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.Shard;
import io.outboxrouter.config.SourceKind;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;

/**
 * The DDL a database needs for the router, per dialect and from the configuration's names: the outbox table(s) with
 * the index users need, the Postgres publication, and a least-privilege role with its grants. Pure: text in, text out.
 *
 * @param tables qualified outbox tables
 * @param role   the user the router connects as
 */
public record SchemaDdl(SourceKind kind, List<String> tables, OutboxConfig.Columns columns, List<String> headerColumns,
                        String publication, String role, Optional<String> heartbeatTable, String routerName, int shards,
                        Optional<String> messagePrefix) {

    public SchemaDdl(SourceKind kind, List<String> tables, OutboxConfig.Columns columns, List<String> headerColumns,
                     String publication, String role, Optional<String> heartbeatTable, String routerName, int shards) {
        this(kind, tables, columns, headerColumns, publication, role, heartbeatTable, routerName, shards, Optional.empty());
    }

    /** Not sharded. */
    public SchemaDdl(SourceKind kind, List<String> tables, OutboxConfig.Columns columns, List<String> headerColumns,
                     String publication, String role, Optional<String> heartbeatTable) {
        this(kind, tables, columns, headerColumns, publication, role, heartbeatTable, "", 1);
    }

    /** The DDL for a router's configuration: its tables, column names, publication and user. */
    public static SchemaDdl of(RouterConfig c) {
        var pg = c.source().postgres();
        return new SchemaDdl(c.source().kind(), c.source().tables(), c.outbox().columns(), List.copyOf(c.outbox().headers().keySet()),
                pg.publication(), c.source().connection().user(),
                c.source().heartbeatTable(), c.name(), c.source().shards(), c.source().messagePrefix());
    }

    /**
     * Postgres, a tableless outbox ({@code source.postgres.messages.prefix}): {@code outbox_emit}, which the application
     * calls in its business transaction. It writes the event as a transactional logical decoding message, the shape the
     * router reads, and returns the event id. Empty when messages are off.
     */
    public String messagesSql() {
        if (messagePrefix.isEmpty() || kind != SourceKind.POSTGRES) {
            return "";
        }
        String schema = tables.isEmpty() ? "public" : tables.get(0).substring(0, tables.get(0).indexOf('.'));
        return "-- The tableless outbox (source.postgres.messages.prefix: " + messagePrefix.get() + ", Postgres 14+): call it in the "
                + "business transaction,\n"
                + "--   SELECT " + schema + ".outbox_emit('Order', '42', 'OrderPlaced', '{\"total\": 10}');\n"
                + "-- The event is written to the WAL only (no row, nothing to clean up) and published when the transaction\n"
                + "-- commits; nothing if it rolls back. The payload is published byte for byte as passed (json, not jsonb:\n"
                + "-- pass a jsonb value as value::json). Pass id to choose the event id; it is returned either way.\n"
                + emitFunction(schema, messagePrefix.get()) + "\n";
    }

    /** The {@code outbox_emit} function: one transactional message of the shape the router reads. */
    public static String emitFunction(String schema, String prefix) {
        return "CREATE OR REPLACE FUNCTION " + schema + ".outbox_emit(aggregatetype text, aggregateid text, type text, payload json,\n"
                + "    id uuid DEFAULT gen_random_uuid()) RETURNS uuid LANGUAGE sql VOLATILE AS $$\n"
                + "  SELECT pg_logical_emit_message(true, '" + prefix + "', json_build_object('id', id, 'aggregatetype', aggregatetype,\n"
                + "    'aggregateid', aggregateid, 'type', type, 'payload', payload)::text);\n"
                + "  SELECT id;\n"
                + "$$;";
    }

    /** The outbox tables, one CREATE TABLE and one index each. */
    public String tablesSql() {
        var sb = new StringBuilder();
        for (String table : tables) {
            String bare = table.substring(table.indexOf('.') + 1);
            sb.append("CREATE TABLE ").append(table).append(" (\n");
            if (kind == SourceKind.POSTGRES) {
                sb.append("  ").append(columns.id()).append(" uuid PRIMARY KEY,\n");
            } else {
                // Not MariaDB's UUID type: Debezium's binlog reader misreads values ending in a zero byte.
                sb.append("  ").append(columns.id()).append(" CHAR(36) PRIMARY KEY,\n");
            }
            sb.append("  ").append(columns.aggregateType()).append(" VARCHAR(255) NOT NULL,\n");
            sb.append("  ").append(columns.aggregateId()).append(" VARCHAR(255) NOT NULL,\n");
            sb.append("  ").append(columns.type()).append(" VARCHAR(255) NOT NULL,\n");
            sb.append("  ").append(columns.payload()).append(kind == SourceKind.POSTGRES ? " jsonb,\n" : " JSON,\n");
            for (String header : headerColumns) {
                sb.append("  ").append(header).append(" VARCHAR(512),\n");
            }
            sb.append(kind == SourceKind.POSTGRES
                    ? "  created_at timestamptz NOT NULL DEFAULT now()\n);\n"
                    : "  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)\n);\n");
            sb.append("-- The self-audit and retention read rows by created_at, and replay by time range.\n");
            sb.append("CREATE INDEX ").append(bare).append("_created_at ON ").append(table).append(" (created_at);\n");
        }
        return sb.toString();
    }

    /** Postgres: the publication the router reads, with only the outbox tables. Empty for binlog sources. */
    public String publicationSql() {
        if (kind != SourceKind.POSTGRES) {
            return "";
        }
        if (shards > 1) {
            return shardPublicationsSql();
        }
        var published = new ArrayList<>(tables);
        var sb = new StringBuilder();
        heartbeatTable.ifPresent(t -> {
            sb.append("-- The heartbeat row (source.postgres.heartbeat-interval) keeps a quiet outbox's slot moving.\n")
                    .append(PostgresDdl.heartbeatTable(t)).append(";\n");
            published.add(t);
        });
        if (published.isEmpty()) {
            return sb.append("-- pgoutput needs a publication; logical decoding messages pass through it whatever it publishes.\n")
                    .append(PostgresDdl.createPublication(publication, published, false)).append(";\n").toString();
        }
        return sb.append("-- Run as the tables' owner; the router uses an existing publication as it is. For a partitioned outbox\n")
                .append("-- table, add WITH (publish_via_partition_root = true): its rows then arrive under the table's own name.\n")
                .append(heartbeatTable.isPresent() ? "" : COLUMN_LISTS)
                .append(PostgresDdl.createPublication(publication, published, false, heartbeatTable.isPresent()
                        ? java.util.Map.of() : columnLists())).append(";\n")
                .toString();
    }

    private static final String COLUMN_LISTS = "-- The column lists keep the columns the router does not read (created_at) from the decoder; "
            + "they need Postgres 15+: before 15, leave them out.\n";

    /** Each outbox table's column list: the columns the router reads, in the order {@link #tablesSql} creates them. */
    private java.util.Map<String, List<String>> columnLists() {
        var list = new ArrayList<>(List.of(columns.id(), columns.aggregateType(), columns.aggregateId(), columns.type(), columns.payload()));
        list.addAll(headerColumns);
        var lists = new LinkedHashMap<String, List<String>>();
        tables.forEach(t -> lists.put(t, list));
        return lists;
    }

    /** One publication per shard: the rows whose aggregate id hashes to it, and its heartbeat row; inserts only. */
    private String shardPublicationsSql() {
        var sb = new StringBuilder();
        heartbeatTable.ifPresent(t -> sb.append("-- The heartbeat rows (source.postgres.heartbeat-interval) keep quiet shards' slots moving.\n")
                .append(PostgresDdl.heartbeatTable(t)).append(";\n"));
        String hash = PostgresDdl.aggregateHash(columns.aggregateId(), "character varying");
        sb.append("-- source.postgres.shards: ").append(shards).append(" (Postgres 15+): one publication per shard, with the outbox rows ")
                .append("whose aggregate id hashes to it.\n-- The shard of an aggregate: SELECT (hashtext('<aggregate id>') & 2147483647) % ")
                .append(shards).append(";\n-- (for a uuid column uuid_hash, for bigint hashint8, for integer hashint4: the router checks ")
                .append("the publications at start.)\n")
                .append("-- Run as the tables' owner; the router uses existing publications as they are. For a partitioned outbox\n")
                .append("-- table, add publish_via_partition_root = true to the WITH clause.\n").append(COLUMN_LISTS);
        for (int i = 0; i < shards; i++) {
            var shard = new Shard(i, shards);
            var filters = new LinkedHashMap<String, String>();
            tables.forEach(t -> filters.put(t, PostgresDdl.shardFilter(hash, shard)));
            sb.append(PostgresDdl.createShardPublication(publication + shard.suffix(), filters, heartbeatTable.orElse(null),
                    shard.routerName(routerName), false, columnLists())).append(";\n");
        }
        return sb.toString();
    }

    /** A role with exactly what the router needs. */
    public String roleSql() {
        if (kind == SourceKind.POSTGRES) {
            var schemas = tables.stream().map(t -> t.substring(0, t.indexOf('.'))).distinct().toList();
            return "CREATE ROLE " + role + " WITH LOGIN REPLICATION PASSWORD 'change-me';\n"
                    + (tables.isEmpty() ? "" : "GRANT SELECT ON " + String.join(", ", tables) + " TO " + role + ";\n")
                    // the heartbeat row: upserted, or (sharded: publications of inserts only) deleted and inserted
                    + heartbeatTable.map(t -> "GRANT SELECT, INSERT, " + (shards > 1 ? "DELETE" : "UPDATE") + " ON " + t + " TO " + role + ";\n")
                    .orElse("")
                    + (tables.isEmpty() ? "" : "-- With outbox.retention, which deletes published rows: GRANT DELETE ON " + String.join(", ", tables)
                    + " TO " + role + ";\n")
                    + "-- The offsets table is created in the first schema of the search path when missing.\n"
                    + "GRANT CREATE ON SCHEMA " + (schemas.isEmpty() ? "public" : schemas.get(0)) + " TO " + role + ";\n";
        }
        var databases = tables.stream().map(t -> t.substring(0, t.indexOf('.'))).distinct().toList();
        var sb = new StringBuilder("CREATE USER '" + role + "'@'%' IDENTIFIED BY 'change-me';\n"
                + "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '" + role + "'@'%';\n");
        sb.append("-- With outbox.retention, which deletes published rows: GRANT DELETE ON ").append(String.join(", ", tables))
                .append(" TO '").append(role).append("'@'%';\n");
        sb.append("-- The offsets and schema-history tables are created in the source database when missing.\n");
        for (String db : databases) {
            sb.append("GRANT CREATE, INSERT, UPDATE, DELETE ON ").append(db).append(".* TO '").append(role).append("'@'%';\n");
        }
        return sb.toString();
    }

    /** Everything, in the order to run it. */
    public String all() {
        var sb = new StringBuilder("-- outbox-router: DDL for ").append(kind.name().toLowerCase()).append("\n\n");
        if (!tables.isEmpty()) {
            sb.append("-- The outbox table(s): the application inserts one row per event, in the same transaction as its state change.\n")
                    .append(tablesSql());
        }
        String messages = messagesSql();
        if (!messages.isEmpty()) {
            sb.append(tables.isEmpty() ? "" : "\n").append(messages);
        }
        String pub = publicationSql();
        if (!pub.isEmpty()) {
            sb.append("\n").append(pub);
        }
        sb.append("\n-- The router's own login.\n").append(roleSql());
        if (kind.isBinlog()) {
            sb.append("\n-- Server settings (my.cnf): log_bin = mysql-bin, binlog_format = ROW, binlog_row_image = FULL, server_id = <non-zero>\n");
        } else {
            sb.append("\n-- Server settings (postgresql.conf, restart needed): wal_level = logical, max_replication_slots and max_wal_senders with room for one more\n");
        }
        return sb.toString();
    }
}
