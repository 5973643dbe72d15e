package io.outboxrouter.config;

/** Which database's replication stream the router reads. */
public enum SourceKind {
    POSTGRES
}
