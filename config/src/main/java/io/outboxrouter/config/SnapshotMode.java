package io.outboxrouter.config;

/** What happens to outbox rows that were committed before the router's first start. */
public enum SnapshotMode {
    /** Publish only rows committed after the replication slot exists (the default). */
    NONE,
    /** Publish the rows already in the outbox table once, then stream. */
    INITIAL
}
