package io.outboxrouter.offsets;

/**
 * What one router's offset store has done, as a JMX bean named {@link OffsetStoreStats#objectName(String)}: the engine
 * creates the store by class name, so this is how the router learns, per router name, that a position was stored.
 */
public interface OffsetStoreStatsMBean {
    /** Offset writes that succeeded. */
    long getStoredTotal();

    /** Offset writes that failed after their retry budget. */
    long getFailedTotal();

    /** Failed attempts that were retried. */
    long getRetriesTotal();

    /** Failed writes since the last one that succeeded. */
    long getConsecutiveFailures();

    /** When the last write succeeded, in epoch milliseconds; 0 before the first. */
    long getLastStoredEpochMillis();

    /** Why the last failed write failed; empty when none has. */
    String getLastError();

    /** Whether a write was refused because another process took the router over (a newer fencing token). */
    boolean isFenced();
}
