package io.outboxrouter.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class RetryTest {
    private static final Retry FAST = new Retry(Duration.ofMillis(1), Duration.ofMillis(4), Duration.ofMillis(200));

    @Test
    void retriesRetryableFailuresUntilOneSucceeds() throws Exception {
        var calls = new AtomicInteger();
        String result = FAST.call("write offsets", e -> e instanceof IOException, LoggerFactory.getLogger(getClass()), () -> {
            if (calls.incrementAndGet() < 3) {
                throw new IOException("connection refused");
            }
            return "ok";
        });
        assertThat(result).isEqualTo("ok");
        assertThat(calls).hasValue(3);
    }

    @Test
    void tellsTheListenerAboutEachRetryButNotTheFinalSuccess() throws Exception {
        var calls = new AtomicInteger();
        var told = new java.util.ArrayList<String>();
        FAST.call("publish", e -> true, LoggerFactory.getLogger(getClass()), (op, attempt, cause) -> told.add(op + "#" + attempt + ":" + cause.getMessage()), () -> {
            if (calls.incrementAndGet() < 3) {
                throw new IOException("broker down");
            }
            return null;
        });
        assertThat(told).containsExactly("publish#1:broker down", "publish#2:broker down");
    }

    @Test
    void givesUpWhenTheBudgetIsSpentAndSaysHowLong() {
        assertThatThrownBy(() -> FAST.call("write offsets", e -> true, LoggerFactory.getLogger(getClass()), () -> {
            throw new IOException("connection refused");
        })).isInstanceOf(Retry.GaveUpException.class)
                .hasMessageStartingWith("write offsets: giving up after ")
                .hasMessageEndingWith("IOException: connection refused")
                .satisfies(e -> assertThat(((Retry.GaveUpException) e).wasRetryable()).isTrue());
    }

    @Test
    void failsAtOnceOnANonRetryableFailure() {
        var calls = new AtomicInteger();
        assertThatThrownBy(() -> FAST.call("write offsets", e -> false, LoggerFactory.getLogger(getClass()), () -> {
            calls.incrementAndGet();
            throw new IllegalStateException("password authentication failed");
        })).hasMessage("write offsets failed: IllegalStateException: password authentication failed");
        assertThat(calls).hasValue(1);
    }
}
