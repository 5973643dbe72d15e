package io.outboxrouter.metrics;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.LoggerFactory;

/**
 * Counts log events by level as {@code logback_events_total{level}}, the meter Micrometer's {@code LogbackMetrics} binder
 * registers, but from an appender on the root logger. That binder installs a turbo filter, which Logback consults on
 * every logging call before the level check, disabled ones included, so Debezium's per-message {@code trace} calls
 * would cost the connector thread work under load. An appender only sees events that are logged.
 */
final class LogEventCounter extends AppenderBase<ILoggingEvent> {
    private final Counter error;
    private final Counter warn;
    private final Counter info;
    private final Counter debug;
    private final Counter trace;

    private LogEventCounter(MeterRegistry registry) {
        error = counter(registry, "error");
        warn = counter(registry, "warn");
        info = counter(registry, "info");
        debug = counter(registry, "debug");
        trace = counter(registry, "trace");
    }

    private static Counter counter(MeterRegistry registry, String level) {
        return Counter.builder("logback.events").tag("level", level).description("Number of log events that were enabled by the effective log level")
                .baseUnit("events").register(registry);
    }

    /** Registers the counters and, when Logback is the SLF4J binding, attaches to its root logger. */
    static LogEventCounter bindTo(MeterRegistry registry) {
        var counter = new LogEventCounter(registry);
        if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
            counter.setName("log-event-counter-" + System.identityHashCode(counter));
            counter.setContext(context);
            counter.start();
            context.getLogger(Logger.ROOT_LOGGER_NAME).addAppender(counter);
        }
        return counter;
    }

    @Override
    protected void append(ILoggingEvent event) {
        switch (event.getLevel().toInt()) {
            case Level.ERROR_INT -> error.increment();
            case Level.WARN_INT -> warn.increment();
            case Level.INFO_INT -> info.increment();
            case Level.DEBUG_INT -> debug.increment();
            default -> trace.increment();
        }
    }

    /** Detaches from the root logger; the counters stay readable. */
    void detach() {
        if (getContext() instanceof LoggerContext context) {
            context.getLogger(Logger.ROOT_LOGGER_NAME).detachAppender(this);
        }
        stop();
    }
}
