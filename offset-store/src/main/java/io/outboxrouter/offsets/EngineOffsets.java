package io.outboxrouter.offsets;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;

/**
 * The engine's own text for a source position: the key {@code ["<engine name>",{partition}]} and the offset as JSON,
 * exactly as its offset writer stores them (Kafka Connect's {@code JsonConverter} without schemas). What the offsets
 * table holds, and what an exactly-once router commits to its offsets topic, so that the two can be compared.
 */
public final class EngineOffsets {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonConverter KEYS = converter(true);
    private static final JsonConverter VALUES = converter(false);

    private EngineOffsets() {
    }

    private static JsonConverter converter(boolean isKey) {
        var c = new JsonConverter();
        c.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), isKey);
        return c;
    }

    /** The stored key of a source partition of the engine called {@code engineName} (the router's stream name). */
    public static String key(String engineName, Map<String, ?> partition) {
        return text(KEYS.fromConnectData(engineName, null, List.of(engineName, partition)));
    }

    /** The stored value of an offset. */
    public static String value(Map<String, ?> offset) {
        return text(VALUES.fromConnectData("offsets", null, offset));
    }

    /** The engine name a stored key belongs to, or empty when it is not an engine's key. */
    public static Optional<String> engineOf(String key) {
        try {
            JsonNode k = JSON.readTree(key);
            return k != null && k.isArray() && k.size() == 2 && k.get(0).isTextual() ? Optional.of(k.get(0).asText()) : Optional.empty();
        } catch (JsonProcessingException e) {
            return Optional.empty();
        }
    }

    /** Whether two stored values are the same position (the same JSON, whatever the order of its fields). */
    public static boolean samePosition(String a, String b) {
        if (Objects.equals(a, b)) {
            return true;
        }
        if (a == null || b == null) {
            return false;
        }
        try {
            return JSON.readTree(a).equals(JSON.readTree(b));
        } catch (JsonProcessingException e) {
            return false;
        }
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
