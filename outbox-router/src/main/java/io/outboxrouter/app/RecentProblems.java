package io.outboxrouter.app;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last warnings and errors logged for one router, for its status page: by its own threads (named after it), by the
 * engine's batch handling (MDC {@code router}) and by Debezium on its behalf (MDC {@code dbz.connectorName}, the
 * router name). Counting every log event is {@code LogEventCounter}'s job ({@code logback_events_total}).
 */
final class RecentProblems extends AppenderBase<ILoggingEvent> {
    /** One logged problem. */
    record Problem(Instant at, String level, String logger, String message) {
    }

    private static final int KEEP = 20;
    private final ArrayDeque<Problem> recent = new ArrayDeque<>(KEEP);
    private final String routerName;

    private RecentProblems(String routerName) {
        this.routerName = routerName;
        setName("recent-problems-" + routerName);
    }

    /** Attaches to logback's root logger; null when another SLF4J binding is in use (the page then lists none). */
    static RecentProblems attach(String routerName) {
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
            return null;
        }
        var log = new RecentProblems(routerName);
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
        if (!event.getLevel().isGreaterOrEqual(Level.WARN) || !ours(event)) {
            return;
        }
        synchronized (recent) {
            if (recent.size() == KEEP) {
                recent.removeFirst();
            }
            recent.addLast(new Problem(Instant.ofEpochMilli(event.getTimeStamp()), event.getLevel().toString(),
                    shortName(event.getLoggerName()), event.getFormattedMessage()));
        }
    }

    private boolean ours(ILoggingEvent event) {
        var mdc = event.getMDCPropertyMap();
        return routerName.equals(mdc.get("router")) || routerName.equals(mdc.get("dbz.connectorName"))
                || event.getThreadName() != null && event.getThreadName().contains(routerName);
    }

    /** The newest first. */
    List<Problem> newestFirst() {
        synchronized (recent) {
            var list = new ArrayList<>(recent);
            Collections.reverse(list);
            return list;
        }
    }

    private static String shortName(String logger) {
        int dot = logger.lastIndexOf('.');
        return dot < 0 ? logger : logger.substring(dot + 1);
    }
}
