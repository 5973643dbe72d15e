package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.embedded.async.ParallelSmtAndConvertBatchProcessor;
import org.junit.jupiter.api.Test;

/** The engine's batch processor is this module's copy, which converts records on the polling thread (see its header). */
class InlineRecordProcessorTest {

    @Test
    void theInlineCopyIsLoadedAheadOfDebeziums() {
        String from = ParallelSmtAndConvertBatchProcessor.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertThat(from).as("loaded from").doesNotContain("debezium-embedded");
        assertThat(ParallelSmtAndConvertBatchProcessor.INLINE).isTrue();
    }
}
