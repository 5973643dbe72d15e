package io.outboxrouter.app;

/** Where a router process is, as {@code /status} and the status page show it. */
enum RouterState {
    /** Holds the lock and reads the replication stream: ready. */
    STREAMING,
    /** Holds the lock; the stream is not (yet, or any more) connected. */
    CONNECTING,
    /** Another process holds the lock; this one takes over when it is released. */
    STANDBY,
    /** The database that holds the lock cannot be reached: waiting for it, with backoff. */
    WAITING,
    /** Stopped or failed. */
    STOPPED;

    String label() {
        return name().toLowerCase();
    }
}
