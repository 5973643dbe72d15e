package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CdcEngineLivenessTest {

    @Test
    void aSubSecondHeartbeatBoundsTheQuietAStreamMayKeep() {
        assertThat(CdcEngine.quietAtMost("250", "10")).isEqualTo(TimeUnit.SECONDS.toNanos(2));
        assertThat(CdcEngine.quietAtMost("1000", "10")).isEqualTo(TimeUnit.SECONDS.toNanos(8));
    }

    @Test
    void aLongPollIntervalLengthensItPastTheTwoIntervalsAHeartbeatMayWait() {
        // source.poll-interval of 5 s: the reader sleeps up to one interval and the queue holds the beat up to another.
        assertThat(CdcEngine.quietAtMost("250", "5000")).isEqualTo(TimeUnit.MILLISECONDS.toNanos(11_250));
        assertThat(CdcEngine.quietAtMost("250", "60000")).isGreaterThan(TimeUnit.SECONDS.toNanos(120));
    }

    @Test
    void aRareOrMissingHeartbeatLeavesItToTheConnector() {
        assertThat(CdcEngine.quietAtMost("30000", "10")).isZero();
        assertThat(CdcEngine.quietAtMost(null, "10")).isZero();
        assertThat(CdcEngine.quietAtMost("0", "10")).isZero();
        assertThat(CdcEngine.quietAtMost("soon", "10")).isZero();
    }
}
