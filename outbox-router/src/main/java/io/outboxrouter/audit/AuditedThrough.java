package io.outboxrouter.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outboxrouter.audit.AuditReads.Bound;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The offsets table's {@code outbox-router.audited} row: per outbox table, the time through which every row is proven
 * published, as the database renders it (for SQL) and in microseconds since the epoch; and the patterns of the topics the
 * router's recent runs published to, newest first, so that a start after a routing change matches the rows an earlier run
 * published with the records where that run wrote them.
 */
public final class AuditedThrough {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Not a table name: {@code @} starts no identifier. */
    static final String TOPICS = "@topics";
    /** Topic patterns kept: the routings of this many recent runs. */
    static final int TOPICS_KEPT = 8;

    private AuditedThrough() {
    }

    static String format(Map<String, Bound> through) {
        return format(through, java.util.List.of());
    }

    static String format(Map<String, Bound> through, java.util.List<String> topics) {
        ObjectNode o = JSON.createObjectNode();
        through.forEach((table, b) -> o.putObject(table).put("through", b.text()).put("micros", b.micros()));
        if (!topics.isEmpty()) {
            var a = o.putArray(TOPICS);
            topics.forEach(a::add);
        }
        return o.toString();
    }

    /** The topic patterns kept in the row, newest first; empty when none are (a row written before they were kept). */
    public static java.util.List<String> topics(String json) {
        var out = new java.util.ArrayList<String>();
        if (json == null) {
            return out;
        }
        try {
            JSON.readTree(json).path(TOPICS).forEach(t -> {
                if (t.isTextual()) {
                    out.add(t.asText());
                }
            });
        } catch (IOException e) {
            // unreadable: no earlier topics known
        }
        return out;
    }

    /** {@code own} first, then the earlier patterns it differs from, at most {@link #TOPICS_KEPT}. */
    static java.util.List<String> withTopics(String own, java.util.List<String> earlier) {
        var out = new java.util.LinkedHashSet<String>();
        out.add(own);
        out.addAll(earlier);
        return out.stream().limit(TOPICS_KEPT).toList();
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
        private java.util.List<String> topics = java.util.List.of();

        Keeper(String router, java.time.Duration every) {
            this.router = router;
            this.every = every;
        }

        /** The topic patterns written with what is proven, newest first. */
        void topics(java.util.List<String> topics) {
            this.topics = java.util.List.copyOf(topics);
        }

        void keep(Map<String, Bound> through, java.util.function.Supplier<io.outboxrouter.offsets.OffsetTable> offsets) {
            String json = format(through, topics);
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
