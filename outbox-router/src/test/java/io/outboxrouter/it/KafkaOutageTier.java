package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The contract's Kafka outage tier: the broker SIGKILLed under steady load and restarted, in both delivery modes. A
 * Kafka outage is handled after the connector, by the same publisher for every source, so one source runs it.
 */
interface KafkaOutageTier {
    long kafkaCrashMidStream(String label, String extraYaml) throws Exception;

    @Test
    default void aKafkaCrashMidStreamIsRiddenOutWithNothingLostAndOrderKept() throws Exception {
        kafkaCrashMidStream("kafkacrash", "");
    }

    /**
     * Exactly-once: sends time out during the broker's crash (delivery.timeout.ms 3 s here), so the open transaction is
     * aborted and sent again in a new one once the broker is back; read_committed sees each event once.
     */
    @Test
    default void exactlyOnceAKafkaCrashMidStreamDuplicatesNothingForReadCommittedConsumers() throws Exception {
        long duplicates = kafkaCrashMidStream("eoskafkacrash", "delivery: exactly-once\n");
        assertThat(duplicates).as("duplicates seen by a read_committed consumer").isZero();
    }
}
