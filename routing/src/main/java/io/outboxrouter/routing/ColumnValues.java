package io.outboxrouter.routing;

import java.nio.charset.StandardCharsets;

/** How column values become Kafka bytes and text: binary as it is, anything else as UTF-8, never re-encoded into a JSON string. */
final class ColumnValues {
    private ColumnValues() {
    }

    static byte[] bytes(Object v) {
        return v instanceof byte[] b ? b : v.toString().getBytes(StandardCharsets.UTF_8);
    }

    static String text(Object v) {
        if (v == null) {
            return null;
        }
        return v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : v.toString();
    }
}
