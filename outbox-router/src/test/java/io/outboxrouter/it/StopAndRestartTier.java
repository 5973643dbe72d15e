package io.outboxrouter.it;

import org.junit.jupiter.api.Test;

/**
 * The contract's stop-and-restart tier: a graceful stop with rows written meanwhile, and {@code run --once}. For the
 * sources whose stop and restart path is their own (the tableless outbox shares the table's).
 */
interface StopAndRestartTier {
    void gracefulStopThenRestart() throws Exception;

    void runOnceDrains() throws Exception;

    @Test
    default void gracefulStopThenRestartPublishesWhatWasWrittenWhileStoppedAndNothingTwice() throws Exception {
        gracefulStopThenRestart();
    }

    @Test
    default void runOncePublishesEverythingCommittedBeforeItStartedThenExitsZero() throws Exception {
        runOnceDrains();
    }
}
