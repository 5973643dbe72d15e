package io.outboxrouter.offsets;

import io.outboxrouter.config.JdbcConnection;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.Secret;
import io.outboxrouter.retry.Retry;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Where one router's offsets live. Also travels through the Debezium engine's properties
 * ({@link #toProperties()} / {@link #fromProperties}) to reach {@link JdbcOffsetBackingStore}.
 */
public record OffsetTableSettings(String routerName, String url, String user, Secret password, String table, Retry retry) {
    /** Where the offset store's settings travel among the engine's properties. */
    public static final String OFFSETS_PREFIX = "outbox.offsets.";
    /** Where the schema history's travel: Debezium hands {@code schema.history.internal.*} to the history. */
    public static final String SCHEMA_HISTORY_PREFIX = "schema.history.internal.outbox.";
    private static final String ROUTER = "router.name";
    private static final String URL = "jdbc.url";
    private static final String USER = "jdbc.user";
    private static final String PASSWORD = "jdbc.password";
    private static final String TABLE = "table";
    private static final String GIVE_UP_MS = "retry.give.up.ms";

    /** The retry budget of offset writes: long enough to ride out a failover, short enough to surface an outage. */
    public static final Retry DEFAULT_RETRY = new Retry(Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofSeconds(30));

    /** A router's offsets table: its own connection when configured, else the source database's. */
    public static OffsetTableSettings offsets(RouterConfig c) {
        var conn = c.offsetsConnection();
        return new OffsetTableSettings(c.name(), conn.url(), conn.user(), conn.password(), c.offsets().table(), DEFAULT_RETRY);
    }

    /** A binlog router's schema history table, beside its offsets. */
    public static OffsetTableSettings schemaHistory(RouterConfig c) {
        return offsets(c).withTable(c.offsets().schemaHistoryTable());
    }

    /** The connection to the database that holds the table. */
    public JdbcConnection connection() {
        return new JdbcConnection(url, user, password);
    }

    /** The same connection with another table (the schema history beside the offsets). */
    public OffsetTableSettings withTable(String otherTable) {
        return new OffsetTableSettings(routerName, url, user, password, otherTable, retry);
    }

    public Map<String, String> toProperties(String prefix) {
        var p = new HashMap<String, String>();
        p.put(prefix + ROUTER, routerName);
        p.put(prefix + URL, url);
        if (user != null) {
            p.put(prefix + USER, user);
        }
        p.put(prefix + PASSWORD, password.reveal());
        p.put(prefix + TABLE, table);
        p.put(prefix + GIVE_UP_MS, Long.toString(retry.giveUpAfter().toMillis()));
        return p;
    }

    public static OffsetTableSettings fromProperties(String prefix, Map<String, String> p) {
        for (String required : new String[] {ROUTER, URL, TABLE}) {
            if (p.get(prefix + required) == null) {
                throw new IllegalArgumentException("engine property " + prefix + required + " is missing");
            }
        }
        var retry = p.containsKey(prefix + GIVE_UP_MS)
                ? new Retry(DEFAULT_RETRY.initialBackoff(), DEFAULT_RETRY.maxBackoff(), Duration.ofMillis(Long.parseLong(p.get(prefix + GIVE_UP_MS))))
                : DEFAULT_RETRY;
        return new OffsetTableSettings(p.get(prefix + ROUTER), p.get(prefix + URL), p.get(prefix + USER),
                Secret.of(p.getOrDefault(prefix + PASSWORD, "")), p.get(prefix + TABLE), retry);
    }
}
