package io.outboxrouter.offsets;

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
    static final String PREFIX = "outbox.offsets.";
    private static final String ROUTER = PREFIX + "router.name";
    private static final String URL = PREFIX + "jdbc.url";
    private static final String USER = PREFIX + "jdbc.user";
    private static final String PASSWORD = PREFIX + "jdbc.password";
    private static final String TABLE = PREFIX + "table";
    private static final String GIVE_UP_MS = PREFIX + "retry.give.up.ms";

    /** The retry budget of offset writes: long enough to ride out a failover, short enough to surface an outage. */
    public static final Retry DEFAULT_RETRY = new Retry(Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofSeconds(30));

    public Map<String, String> toProperties() {
        var p = new HashMap<String, String>();
        p.put(ROUTER, routerName);
        p.put(URL, url);
        if (user != null) {
            p.put(USER, user);
        }
        p.put(PASSWORD, password.reveal());
        p.put(TABLE, table);
        p.put(GIVE_UP_MS, Long.toString(retry.giveUpAfter().toMillis()));
        return p;
    }

    public static OffsetTableSettings fromProperties(Map<String, String> p) {
        for (String required : new String[] {ROUTER, URL, TABLE}) {
            if (p.get(required) == null) {
                throw new IllegalArgumentException("offset store: engine property " + required + " is missing");
            }
        }
        var retry = p.containsKey(GIVE_UP_MS)
                ? new Retry(DEFAULT_RETRY.initialBackoff(), DEFAULT_RETRY.maxBackoff(), Duration.ofMillis(Long.parseLong(p.get(GIVE_UP_MS))))
                : DEFAULT_RETRY;
        return new OffsetTableSettings(p.get(ROUTER), p.get(URL), p.get(USER), Secret.of(p.getOrDefault(PASSWORD, "")), p.get(TABLE), retry);
    }
}
