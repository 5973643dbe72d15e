package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.cdc.MariaDbGtids.Gtid;
import io.outboxrouter.cdc.MariaDbGtids.Problem;
import io.outboxrouter.cdc.MariaDbGtids.Reason;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class MariaDbGtidsTest {

    private static Optional<Problem> judge(String stored, String state, String oldestStart) {
        return MariaDbGtids.judge(MariaDbGtids.parseList(stored), MariaDbGtids.parseList(state), MariaDbGtids.parseList(oldestStart));
    }

    @Test
    void parsesTheFormsTheServerAndTheOffsetUse() {
        assertThat(MariaDbGtids.parseList("0-1-434,1-2-7")).containsExactly(new Gtid(0, 1, 434), new Gtid(1, 2, 7));
        assertThat(MariaDbGtids.parseList("[0-1-5]")).containsExactly(new Gtid(0, 1, 5));
        assertThat(MariaDbGtids.parseList("")).isEmpty();
        assertThat(MariaDbGtids.parseList(null)).isEmpty();
        assertThat(new Gtid(0, 1, 434)).hasToString("0-1-434");
        assertThatThrownBy(() -> MariaDbGtids.parseList("0-1")).hasMessageContaining("\"0-1\"");
    }

    @Test
    void theFormerPrimarysPositionResumesOnAReplicaThatLoggedItsTransactions() {
        // The replica applied 0-1-1..500 and has written 0-2-501..563 since its promotion.
        assertThat(judge("0-1-434", "0-1-500,0-2-563", "")).isEmpty();
        assertThat(judge("0-1-500", "0-1-500,0-2-563", "0-1-100")).isEmpty();
        assertThat(judge("0-2-563", "0-1-500,0-2-563", "")).isEmpty();
    }

    @Test
    void aPositionPastTheServersNewestTransactionIsAhead() {
        // An asynchronous replica promoted before it received 0-1-435..440, which the router had read.
        assertThat(judge("0-1-440", "0-1-434", "")).contains(new Problem(new Gtid(0, 1, 440), Reason.AHEAD, new Gtid(0, 1, 434)));
    }

    @Test
    void aSequenceNumberTheServerGaveAnotherServersTransactionIsAnotherHistory() {
        // The replica missed 0-1-435..440 and wrote its own 0-2-435.. after the promotion: 0-1-440 is not in its binlog.
        assertThat(judge("0-1-440", "0-1-434,0-2-450", "")).contains(new Problem(new Gtid(0, 1, 440), Reason.OTHER_HISTORY, new Gtid(0, 1, 434)));
        assertThat(judge("0-1-40", "0-3-450", "")).contains(new Problem(new Gtid(0, 1, 40), Reason.OTHER_HISTORY, null));
        assertThat(judge("5-1-40", "0-1-450", "")).contains(new Problem(new Gtid(5, 1, 40), Reason.OTHER_HISTORY, null));
    }

    @Test
    void aPositionBeforeTheOldestKeptBinlogIsPurged() {
        assertThat(judge("0-1-99", "0-1-500", "0-1-100")).contains(new Problem(new Gtid(0, 1, 99), Reason.PURGED, new Gtid(0, 1, 100)));
        assertThat(judge("0-1-100", "0-1-500", "0-1-100")).isEmpty();
        assertThat(judge("1-1-5", "0-1-500,1-1-9", "0-1-100")).as("another domain's purge").isEmpty();
    }

    @Test
    void everyDomainIsJudged() {
        assertThat(judge("0-1-10,1-1-9", "0-1-500,1-1-8", "")).contains(new Problem(new Gtid(1, 1, 9), Reason.AHEAD, new Gtid(1, 1, 8)));
        assertThat(judge("", "0-1-500", "")).isEmpty();
        assertThat(MariaDbGtids.judge(List.of(), List.of(), List.of())).isEmpty();
    }
}
