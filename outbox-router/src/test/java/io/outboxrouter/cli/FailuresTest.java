package io.outboxrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class FailuresTest {
    @Test
    void aSlotDroppedUnderARunningRouterIsExplainedWithTheFix() {
        var error = new CompletionException(new IllegalStateException("The connector is trying to read change stream starting at "
                + "PostgresOffsetContext [lsn=LSN{0/3670420}], but this is no longer available on the server. Reconfigure the "
                + "connector to use a snapshot mode when needed."));
        assertThat(Failures.explain(error)).startsWith("the replication slot was dropped while the router ran")
                .contains("run --accept-gap", "replay --since");
        var binlog = new CompletionException(new IllegalStateException("The connector is trying to read change stream starting at "
                + "BinlogOffsetContext [file=mysql-bin.000003], but this is no longer available on the server. Reconfigure the "
                + "connector to use a snapshot mode when needed."));
        assertThat(Failures.explain(binlog)).startsWith("the binlog file of the router's stored position is no longer on the server")
                .contains("run --accept-gap");
    }

    @Test
    void otherErrorsAreDescribedAsBefore() {
        assertThat(Failures.explain(new CompletionException(new IllegalStateException("boom")))).contains("boom").doesNotContain("slot");
    }
}
