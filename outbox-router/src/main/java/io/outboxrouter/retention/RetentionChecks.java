package io.outboxrouter.retention;

import io.outboxrouter.cdc.Check;
import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.Durations;
import io.outboxrouter.config.RouterConfig;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** What {@link Retention} needs of the outbox tables, checked at start and by {@code check}. */
public final class RetentionChecks {
    private RetentionChecks() {
    }

    /**
     * With retention on, each outbox table must have the time column, and (Postgres) the router's user may delete from it.
     * Empty when retention is off.
     */
    public static List<Check> checks(RouterConfig config, OutboxSql source) {
        var settings = config.outbox().retention();
        if (!settings.on()) {
            return List.of();
        }
        var checks = new ArrayList<Check>();
        for (String table : config.source().tables()) {
            String name = "retention on " + table;
            try {
                var columns = source.columns(table);
                if (columns.isEmpty()) {
                    continue; // the table check says it is missing
                }
                if (!columns.contains(settings.timeColumn())) {
                    checks.add(Check.fail(name, "table " + table + " has no column " + settings.timeColumn() + " to date its rows by "
                            + "(outbox.retention-time-column)", "name the table's insert-time column under outbox.retention-time-column, "
                            + "or add one: created_at ... DEFAULT now(), with an index on it"));
                    continue;
                }
                String denied = source.deleteDenied(table);
                checks.add(denied == null ? Check.pass(name, "rows older than " + Durations.format(settings.after())
                        + " by " + settings.timeColumn() + " are deleted once published")
                        : Check.fail(name, denied, "GRANT DELETE ON " + table + " TO " + config.source().connection().user()));
            } catch (SQLException e) {
                checks.add(Check.fail(name, "cannot read table " + table + ": " + e.getMessage(), "check the source connection"));
            }
        }
        return checks;
    }

    /** @throws SourceSetupException naming every failed check with its fix */
    public static void refuseUnless(List<Check> checks) {
        var failed = checks.stream().filter(c -> !c.ok()).map(Check::problem).toList();
        if (!failed.isEmpty()) {
            throw new SourceSetupException("outbox.retention cannot work: " + String.join("; ", failed));
        }
    }
}
