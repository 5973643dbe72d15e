package io.outboxrouter.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class ThroughputTest {
    private static final class Manual extends Clock {
        Instant now = Instant.parse("2026-11-21T10:00:30Z");

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    @Test
    void countsPerMinuteOverTheLastHourAndForgetsOlderMinutes() {
        var clock = new Manual();
        var t = new Throughput(clock);
        t.add(5);
        t.add(2);
        clock.now = clock.now.plus(Duration.ofMinutes(2));
        t.add(3);

        long[] minutes = t.perMinute();
        assertThat(minutes).hasSize(60);
        assertThat(minutes[59]).isEqualTo(3);
        assertThat(minutes[58]).isZero();
        assertThat(minutes[57]).isEqualTo(7);

        clock.now = clock.now.plus(Duration.ofMinutes(59));
        assertThat(t.perMinute()[0]).as("the oldest minute still shown").isEqualTo(3);
        clock.now = clock.now.plus(Duration.ofMinutes(1));
        assertThat(t.perMinute()).as("an hour later").containsOnly(0L);
        t.add(1);
        assertThat(t.perMinute()[59]).as("a reused bucket starts from zero").isEqualTo(1);
    }
}
