package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CdcEngineLivenessTest {

    @Test
    void aSubSecondHeartbeatBoundsTheQuietAStreamMayKeep() {
        assertThat(CdcEngine.quietAtMost("250")).isEqualTo(TimeUnit.SECONDS.toNanos(2));
        assertThat(CdcEngine.quietAtMost("1000")).isEqualTo(TimeUnit.SECONDS.toNanos(8));
    }

    @Test
    void aRareOrMissingHeartbeatLeavesItToTheConnector() {
        assertThat(CdcEngine.quietAtMost("30000")).isZero();
        assertThat(CdcEngine.quietAtMost(null)).isZero();
        assertThat(CdcEngine.quietAtMost("0")).isZero();
        assertThat(CdcEngine.quietAtMost("soon")).isZero();
    }
}
