package io.outboxrouter.app;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.retry.Retry;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every WARN and ERROR the process logs, whoever logs it (the router, Debezium, the Kafka client): counted in the
 * metrics (retries apart) and the last few kept for the status page. Attached to the root logger while a router runs.
 */
final class ProblemLog extends AppenderBase<ILoggingEvent> {
    /** One logged problem, for the status page. */
    record Problem(Instant at, String level, String logger, String message) {
    }

    private static final int KEEP = 20;
    private final ArrayDeque<Problem> recent = new ArrayDeque<>(KEEP);
    private final RouterMetrics metrics;

    private ProblemLog(RouterMetrics metrics) {
        this.metrics = metrics;
        setName("problems");
    }

    /** Attaches to logback's root logger; null when another SLF4J binding is in use (the router then logs as usual). */
    static ProblemLog attach(RouterMetrics metrics) {
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
            return null;
        }
        var log = new ProblemLog(metrics);
        log.setContext(context);
        log.start();
        context.getLogger(Logger.ROOT_LOGGER_NAME).addAppender(log);
        return log;
    }

    void detach() {
        if (getContext() instanceof LoggerContext context) {
            context.getLogger(Logger.ROOT_LOGGER_NAME).detachAppender(this);
        }
        stop();
    }

    @Override
    protected void append(ILoggingEvent event) {
        if (!event.getLevel().isGreaterOrEqual(Level.WARN)) {
            return;
        }
        if (Retry.RETRY_LOG.equals(event.getMessage())) {
            metrics.retry(operation(event.getLoggerName()));
        } else {
            metrics.problem(event.getLevel().toString().toLowerCase(), shortName(event.getLoggerName()));
        }
        synchronized (recent) {
            if (recent.size() == KEEP) {
                recent.removeFirst();
            }
            recent.addLast(new Problem(Instant.ofEpochMilli(event.getTimeStamp()), event.getLevel().toString(),
                    shortName(event.getLoggerName()), event.getFormattedMessage()));
        }
    }

    /** The newest first. */
    List<Problem> recent() {
        synchronized (recent) {
            var newestFirst = new java.util.ArrayList<>(recent);
            java.util.Collections.reverse(newestFirst);
            return newestFirst;
        }
    }

    /** What was retried, as a bounded tag: the component whose retry loop logged it. */
    private static String operation(String logger) {
        return switch (shortName(logger)) {
            case "KafkaPublisher" -> "kafka_publish";
            case "JdbcStore" -> "offset_store";
            default -> shortName(logger);
        };
    }

    private static String shortName(String logger) {
        int dot = logger.lastIndexOf('.');
        return dot < 0 ? logger : logger.substring(dot + 1);
    }
}
