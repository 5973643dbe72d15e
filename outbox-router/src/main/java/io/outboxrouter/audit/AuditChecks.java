package io.outboxrouter.audit;

import io.outboxrouter.cdc.Check;
import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.config.RouterConfig;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** Which outbox tables the self-audit can read, for the audit at each start and for {@code check}. */
public final class AuditChecks {
    private AuditChecks() {
    }

    /** The tables that have the time column, and for each other one why the audit cannot read it. */
    record Coverage(List<String> audited, List<String> blind) {
    }

    static Coverage coverage(RouterConfig config, OutboxSql sql) throws SQLException {
        var audited = new ArrayList<String>();
        var blind = new ArrayList<String>();
        String time = config.outbox().retention().timeColumn();
        for (String table : config.source().tables()) {
            var columns = sql.columns(table);
            if (columns.contains(time)) {
                audited.add(table);
            } else if (!columns.isEmpty()) { // a missing table is the table check's to report
                blind.add(table + ": no column " + time);
            }
        }
        return new Coverage(List.copyOf(audited), List.copyOf(blind));
    }

    /** A line per outbox table: audited, or a warning with the fix; one warning when the audit is off. */
    public static List<Check> checks(RouterConfig config, OutboxSql sql) {
        if (config.source().tables().isEmpty()) {
            return List.of();
        }
        if (!config.outbox().audit().enabled()) {
            return List.of(Check.warn("self-audit", "off (outbox.audit.enabled: false): a committed row the stream skips would not be "
                    + "noticed", "remove outbox.audit.enabled: false"));
        }
        String time = config.outbox().retention().timeColumn();
        var checks = new ArrayList<Check>();
        try {
            var coverage = coverage(config, sql);
            coverage.audited().forEach(table -> checks.add(Check.pass("self-audit of " + table, "rows read by " + time
                    + " every " + io.outboxrouter.config.Durations.format(config.outbox().audit().interval())
                    + " and matched with what the stream delivered")));
            coverage.blind().forEach(why -> checks.add(Check.warn("self-audit", "cannot see " + why + ": a committed row the stream "
                    + "skips there would not be noticed", "add " + time + " timestamptz NOT NULL DEFAULT now() (MySQL/MariaDB: "
                    + "TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) with an index, or name the insert-time column under "
                    + "outbox.retention-time-column")));
        } catch (SQLException e) {
            checks.add(Check.fail("self-audit", "cannot read the outbox tables' columns: " + e.getMessage(), "check the source connection"));
        }
        return checks;
    }
}
