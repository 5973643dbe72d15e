package io.outboxrouter.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

class LogEventCounterTest {
    private static final Logger LOG = LoggerFactory.getLogger("io.outboxrouter.metrics.test");

    @Test
    void countsTheEventsThatAreWrittenByLevelAndStopsWhenClosed() {
        var metrics = new RouterMetrics("log-counter");
        LOG.warn("one warning");
        LOG.error("one error");
        LOG.trace("disabled, not counted");
        assertThat(count(metrics, "warn")).isEqualTo(1);
        assertThat(count(metrics, "error")).isEqualTo(1);
        assertThat(count(metrics, "trace")).isZero();

        metrics.close();
        LOG.warn("after close");
        assertThat(count(metrics, "warn")).as("no longer attached").isEqualTo(1);
    }

    private static double count(RouterMetrics metrics, String level) {
        Matcher m = Pattern.compile("logback_events_total\\{level=\"" + level + "\",router=\"log-counter\"} (\\S+)").matcher(metrics.scrape());
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }
}
