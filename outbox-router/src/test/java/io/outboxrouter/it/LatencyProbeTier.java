package io.outboxrouter.it;

import org.junit.jupiter.api.Test;

/** Prints commit-to-consumer latency of single-row transactions, for the record: figures, not an assertion. */
interface LatencyProbeTier {
    void latencyProbe() throws Exception;

    @Test
    default void latencyProbeForSingleInserts() throws Exception {
        latencyProbe();
    }
}
