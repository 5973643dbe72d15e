package io.outboxrouter.it;

import org.junit.jupiter.api.Test;

/**
 * The retention contract's scheduled tier: a running router deletes on its own and reports it. The schedule sits after
 * the source's SQL, so one WAL source and one binlog source run it.
 */
interface ScheduledRetentionTier {
    void runningRouterDeletes() throws Exception;

    @Test
    default void theRunningRouterDeletesOnItsOwnAndReportsIt() throws Exception {
        runningRouterDeletes();
    }
}
