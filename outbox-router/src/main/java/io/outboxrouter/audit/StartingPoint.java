package io.outboxrouter.audit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Map;
import java.util.OptionalLong;

/** The commit time of the last transaction a stored position covers, as the connectors keep it in their offsets. */
final class StartingPoint {
    private static final ObjectMapper JSON = new ObjectMapper();

    private StartingPoint() {
    }

    /**
     * Microseconds since the epoch: Postgres offsets keep {@code ts_usec}, MySQL and MariaDB {@code ts_sec}; empty when the
     * position names no commit time (none stored, or one set by hand).
     */
    static OptionalLong commitMicros(Map<String, String> stored) {
        long best = -1;
        for (String value : stored.values()) {
            try {
                JsonNode offset = JSON.readTree(value);
                if (offset.path("ts_usec").canConvertToLong() && offset.path("ts_usec").asLong() > 0) {
                    best = Math.max(best, offset.path("ts_usec").asLong());
                } else if (offset.path("ts_sec").canConvertToLong() && offset.path("ts_sec").asLong() > 0) {
                    best = Math.max(best, offset.path("ts_sec").asLong() * 1_000_000);
                }
            } catch (IOException | RuntimeException e) {
                // not a connector's offset
            }
        }
        return best < 0 ? OptionalLong.empty() : OptionalLong.of(best);
    }
}
