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

    public boolean isBinlog() {
        return this != POSTGRES;
    }
}
