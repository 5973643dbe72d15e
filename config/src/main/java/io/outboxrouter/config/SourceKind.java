package io.outboxrouter.config;

/** Which database's replication stream the router reads. */
public enum SourceKind {
    /** The WAL through pgoutput and a named replication slot. */
    POSTGRES("postgresql"),
    /** The binlog, with Debezium's MySQL connector. */
    MYSQL("mysql"),
    /** The binlog, with Debezium's MariaDB connector. */
    MARIADB("mariadb");

    private final String jdbcScheme;

    SourceKind(String jdbcScheme) {
        this.jdbcScheme = jdbcScheme;
    }

    /** The scheme of this kind's JDBC URLs: {@code jdbc:<scheme>://host:port/database}. */
    public String jdbcScheme() {
        return jdbcScheme;
    }

    /** Whether the stream is a binlog (MySQL, MariaDB) rather than the WAL: how the source is read, its SQL and its DDL. */
    public boolean isBinlog() {
        return switch (this) { // exhaustive: a new kind does not compile until it says how it is read
            case POSTGRES -> false;
            case MYSQL, MARIADB -> true;
        };
    }

    /**
     * Whether the stream is held by a named replication slot (Postgres): a slot can be recovered after a failover
     * ({@code offsets recover}) and split into shards, each with its own ({@code reshard}). A binlog has one stream,
     * resumed by position or GTID.
     */
    public boolean hasSlots() {
        return switch (this) {
            case POSTGRES -> true;
            case MYSQL, MARIADB -> false;
        };
    }

    /** Whether each row names the transaction that wrote it (Postgres {@code xmin}), for {@code replay --from-xid}. */
    public boolean hasTransactionIds() {
        return switch (this) {
            case POSTGRES -> true;
            case MYSQL, MARIADB -> false;
        };
    }

    /** Whether the server can keep each transaction's commit time (Postgres {@code track_commit_timestamp}). */
    public boolean canKeepCommitTimes() {
        return switch (this) {
            case POSTGRES -> true;
            case MYSQL, MARIADB -> false;
        };
    }

    /**
     * Whether a session can write rows that the stream carries as SQL text rather than as rows ({@code binlog_format =
     * STATEMENT} on MySQL and MariaDB): such rows never reach the router, which watches for them.
     */
    public boolean canLogStatements() {
        return switch (this) {
            case POSTGRES -> false;
            case MYSQL, MARIADB -> true;
        };
    }

    /** An outbox table named as this kind qualifies tables: {@code schema.table} or {@code database.table}. */
    public String exampleTable() {
        return switch (this) {
            case POSTGRES -> "public.outbox";
            case MYSQL, MARIADB -> "app.outbox";
        };
    }
}
