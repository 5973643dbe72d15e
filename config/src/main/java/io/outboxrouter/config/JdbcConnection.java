package io.outboxrouter.config;

/** A JDBC URL with its credentials. The password is a {@link Secret}, so printing this record is safe. */
public record JdbcConnection(String url, String user, Secret password) {
}
