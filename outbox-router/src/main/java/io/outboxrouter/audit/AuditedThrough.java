package io.outboxrouter.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outboxrouter.audit.AuditReads.Bound;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The offsets table's {@code outbox-router.audited} row: per outbox table, the time through which every row is proven
 * published, as the database renders it (for SQL) and in microseconds since the epoch.
 */
public final class AuditedThrough {
    private static final ObjectMapper JSON = new ObjectMapper();

    private AuditedThrough() {
    }

    static String format(Map<String, Bound> through) {
        ObjectNode o = JSON.createObjectNode();
        through.forEach((table, b) -> o.putObject(table).put("through", b.text()).put("micros", b.micros()));
        return o.toString();
    }

    static Map<String, Bound> parse(String json) {
        var out = new LinkedHashMap<String, Bound>();
        if (json == null) {
            return out;
        }
        try {
            JSON.readTree(json).fields().forEachRemaining(e -> {
                if (e.getValue().path("through").isTextual() && e.getValue().path("micros").canConvertToLong()) {
                    out.put(e.getKey(), new Bound(e.getValue().path("through").asText(), e.getValue().path("micros").asLong()));
                }
            });
        } catch (IOException e) {
            // unreadable: nothing is proven
        }
        return out;
    }

    /** Writes how far rows are proven, now and then: on a quiet database each write is WAL the router's slot holds. */
    static final class Keeper {
        private final String router;
        private final java.time.Duration every;
        private String written;
        private long writtenAt;

        Keeper(String router, java.time.Duration every) {
            this.router = router;
            this.every = every;
        }

        void keep(Map<String, Bound> through, java.util.function.Supplier<io.outboxrouter.offsets.OffsetTable> offsets) {
            String json = format(through);
            long now = System.nanoTime();
            if (!json.equals(written) && (written == null || now - writtenAt >= every.toNanos())) {
                offsets.get().write(router, Map.of(io.outboxrouter.offsets.OffsetTable.AUDITED_KEY, json));
                written = json;
                writtenAt = now;
            }
        }
    }

    /** Through when each table's rows are proven published (the database's rendering), for retention; empty before any are. */
    public static Map<String, String> provenThrough(String json) {
        var out = new LinkedHashMap<String, String>();
        parse(json).forEach((table, b) -> out.put(table, b.text()));
        return out;
    }
}
