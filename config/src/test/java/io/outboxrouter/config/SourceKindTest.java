package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SourceKindTest {
    @Test
    void postgresHasSlotsTransactionIdsAndCommitTimes() {
        var pg = SourceKind.POSTGRES;
        assertThat(pg.isBinlog()).isFalse();
        assertThat(pg.hasSlots()).as("offsets recover and reshard").isTrue();
        assertThat(pg.hasTransactionIds()).as("replay --from-xid").isTrue();
        assertThat(pg.canKeepCommitTimes()).isTrue();
        assertThat(pg.canLogStatements()).isFalse();
        assertThat(pg.exampleTable()).isEqualTo("public.outbox");
    }

    @Test
    void aBinlogHasOneStreamAndCanCarryStatements() {
        for (var kind : new SourceKind[] {SourceKind.MYSQL, SourceKind.MARIADB}) {
            assertThat(kind.isBinlog()).as(kind.name()).isTrue();
            assertThat(kind.hasSlots()).as(kind.name()).isFalse();
            assertThat(kind.hasTransactionIds()).as(kind.name()).isFalse();
            assertThat(kind.canKeepCommitTimes()).as(kind.name()).isFalse();
            assertThat(kind.canLogStatements()).as("binlog_format = STATEMENT, watched for").isTrue();
            assertThat(kind.exampleTable()).isEqualTo("app.outbox");
        }
    }
}
