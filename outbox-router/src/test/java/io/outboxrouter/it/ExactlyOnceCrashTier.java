package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The contract's exactly-once crash tier: router SIGKILLs under load, and a read_committed consumer sees every event
 * once. Run on one WAL source and one binlog source: exactly-once sits after the connector.
 */
interface ExactlyOnceCrashTier {
    long sigkillUnderLoad(String label, String extraYaml, int kills) throws Exception;

    /**
     * Records and the position after them are committed in one Kafka transaction; a crash aborts what was not
     * committed.
     */
    @Test
    default void exactlyOnceSigkillUnderLoadShowsEveryEventOnceToReadCommittedConsumers() throws Exception {
        long duplicates = sigkillUnderLoad("eoscrash", "delivery: exactly-once\n", 3);
        assertThat(duplicates).as("duplicates seen by a read_committed consumer").isZero();
    }
}
