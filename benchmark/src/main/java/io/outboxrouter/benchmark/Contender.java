package io.outboxrouter.benchmark;

import java.time.Duration;

/** One way of getting outbox rows out of the database, measured under the same load as the others. */
interface Contender extends AutoCloseable {
    String name();

    /** Starts it and returns once it streams (or is ready), with how long that took. */
    Duration start() throws Exception;

    /** Where it delivers: Kafka for the ones that publish, its own reader for the others. */
    Arrivals arrivals();

    /**
     * For a drain: its events are read back from Kafka only once the topics hold {@code events} records, so that the
     * reading does not share the machine with the drain (the rate comes from the records' producer timestamps). Call it
     * before {@link #start()}; no effect on contenders that deliver elsewhere.
     */
    default void readBackAfter(long events) {
    }

    /** Its own process's CPU and memory, or null when it runs inside the benchmark's JVM. */
    default ProcessStats stats() {
        return null;
    }

    /** False once its process has exited on its own. */
    default boolean alive() {
        return true;
    }

    @Override
    void close() throws Exception;
}
