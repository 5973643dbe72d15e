package io.outboxrouter.app;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.slf4j.LoggerFactory;

/**
 * Turns an outbox INSERT that reached the binlog in statement format into a stop. {@code binlog_format} is a session
 * setting, so a writer can log statements while the server's global format is ROW; Debezium's binlog reader cannot
 * decode a statement into rows, logs a warning and goes past it, and its rows are never published. Debezium offers no
 * setting or hook for this, so the watch listens to that warning (an appender on the reader's logger, for this router's
 * connector only) and reports the statements that write to an outbox table; UPDATEs and DELETEs publish nothing anyway.
 * A statement that begins with a comment is not seen: Debezium hands it to its DDL parser instead, without a warning.
 */
final class StatementInsertWatch extends AppenderBase<ILoggingEvent> {
    /** The logger of Debezium's binlog reader, shared by its MySQL and MariaDB connectors. */
    static final String READER_LOGGER = "io.debezium.connector.binlog.BinlogStreamingChangeEventSource";
    private static final String WARNING = "Received DML";
    /** The insert's target: {@code INSERT [LOW_PRIORITY|DELAYED|HIGH_PRIORITY] [IGNORE] [INTO] target}, MariaDB's prefix allowed. */
    private static final Pattern INSERT = Pattern.compile("^\\s*(?:SET\\s+STATEMENT\\s+.*?\\s+FOR\\s+)?(?:INSERT|REPLACE)\\s+"
            + "(?:/\\*.*?\\*/\\s*)*(?:(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY)\\s+)?(?:IGNORE\\s+)?(?:INTO\\s+)?([`\"\\w$.]+)",
            Pattern.CASE_INSENSITIVE | Pattern.DOTALL);
    private static final int SHOWN = 400;

    private final String connectorName;
    private final List<String> tables;
    private final Consumer<String> stop;
    private volatile boolean reported;

    /**
     * @param connectorName the connector's logical name ({@code topic.prefix}), which Debezium puts in the reader's MDC
     * @param tables        the outbox tables, {@code database.table}
     * @param stop          told once, with the problem, the rows and the fix
     */
    private StatementInsertWatch(String connectorName, List<String> tables, Consumer<String> stop) {
        this.connectorName = connectorName;
        this.tables = tables;
        this.stop = stop;
    }

    /** Attaches to the reader's logger when Logback is the SLF4J binding; empty when it is not (nothing to listen to). */
    static Optional<StatementInsertWatch> attach(String connectorName, List<String> tables, Consumer<String> stop) {
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
            LoggerFactory.getLogger(StatementInsertWatch.class).warn("Router {}: logging is not Logback, so an outbox INSERT that "
                    + "reaches the binlog in statement format is not noticed (Debezium skips it with a warning)", connectorName);
            return Optional.empty();
        }
        var watch = new StatementInsertWatch(connectorName, tables, stop);
        watch.setName("statement-insert-watch-" + connectorName);
        watch.setContext(context);
        watch.start();
        Logger reader = context.getLogger(READER_LOGGER);
        if (!reader.isWarnEnabled()) {
            reader.setLevel(Level.WARN); // a log setting must not hide a lost event
        }
        reader.addAppender(watch);
        return Optional.of(watch);
    }

    @Override
    protected void append(ILoggingEvent event) {
        if (reported || !event.getLevel().isGreaterOrEqual(Level.WARN) || event.getMessage() == null
                || !event.getMessage().startsWith(WARNING) || !connectorName.equals(event.getMDCPropertyMap().get("dbz.connectorLogicalName"))) {
            return;
        }
        var args = event.getArgumentArray();
        String sql = args != null && args.length > 0 && args[0] != null ? args[0].toString() : event.getFormattedMessage();
        var target = outboxTarget(sql);
        if (target.isEmpty()) {
            return;
        }
        String shown = sql.length() > SHOWN ? sql.substring(0, SHOWN) + "..." : sql;
        if (reported) {
            // The router is stopping; what the reader passes meanwhile is named too.
            LoggerFactory.getLogger(StatementInsertWatch.class).error("Router {}: another INSERT into outbox table {} in statement "
                    + "format, not published either: {}", connectorName, target.get(), shown);
            return;
        }
        reported = true;
        stop.accept("an INSERT into outbox table " + target.get() + " reached the binlog in statement format (a session ran with "
                + "binlog_format STATEMENT or MIXED), which Debezium cannot decode into rows, so its rows were not published: "
                + shown + ". Rows that may not be published: those this statement inserted, and those of any other such "
                + "statement read before the router stopped (each logged as an error). Fix: keep the writers' sessions on "
                + "binlog_format ROW (no SET binlog_format in the application or its connection pool, and no privilege to change "
                + "it: SUPER, BINLOG ADMIN or SYSTEM_VARIABLES_ADMIN), then start the router once with run --accept-gap (it refuses "
                + "to start until then), then publish the statement's rows again with replay (--id for each event id it "
                + "inserted, or --since a time before its transaction began)");
    }

    /** The outbox table an INSERT statement writes to, as configured; empty for other statements and tables. */
    Optional<String> outboxTarget(String sql) {
        var m = INSERT.matcher(sql);
        if (!m.find()) {
            return Optional.empty();
        }
        String target = m.group(1).replace("`", "").replace("\"", "").toLowerCase(Locale.ROOT);
        int dot = target.lastIndexOf('.');
        String table = dot < 0 ? target : target.substring(dot + 1);
        for (String configured : tables) {
            String c = configured.toLowerCase(Locale.ROOT);
            int cdot = c.lastIndexOf('.');
            // Unqualified: the statement's default database is not in the warning, so a table of that name may be ours.
            if (dot < 0 ? c.substring(cdot + 1).equals(table) : c.equals(target)) {
                return Optional.of(configured);
            }
        }
        return Optional.empty();
    }

    /** Detaches from the reader's logger. */
    void detach() {
        if (getContext() instanceof LoggerContext context) {
            context.getLogger(READER_LOGGER).detachAppender(this);
        }
        stop();
    }
}
