package io.outboxrouter.routing;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import io.outboxrouter.config.OutboxConfig;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The event a logical decoding message carries (a tableless outbox): one JSON object
 * <pre>{"id": "...", "aggregatetype": "...", "aggregateid": "...", "type": "...", "payload": {...}}</pre>
 * read into a row keyed as the outbox table's would be (the configured column names), so that one routing serves both.
 * {@code id} and {@code aggregateid} must be there; {@code aggregatetype}, {@code type} and {@code payload} may be
 * absent or null. The payload is any JSON value and becomes the record value byte for byte, as it appears in the
 * message (no re-rendering: the bytes a consumer gets are the bytes the application wrote). Other top-level fields with
 * a string, number or boolean value can be mapped to headers ({@code outbox.headers}) or used in the topic template.
 */
final class MessageContent {
    static final String ID = "id";
    static final String AGGREGATE_TYPE = "aggregatetype";
    static final String AGGREGATE_ID = "aggregateid";
    static final String TYPE = "type";
    static final String PAYLOAD = "payload";

    private static final JsonFactory FACTORY = new JsonFactory();

    /** Content that is not the defined shape; the reason is one line, for the dead-letter header. */
    static final class Invalid extends Exception {
        Invalid(String reason) {
            super(reason, null, false, false);
        }
    }

    private MessageContent() {
    }

    /**
     * @return the event as a row: configured column name to value (text, or the payload's bytes); a field that is absent
     * is absent
     */
    static Map<String, Object> parse(byte[] content, OutboxConfig.Columns columns) throws Invalid {
        if (content == null || content.length == 0) {
            throw new Invalid("the message is empty; it must be a JSON object with id, aggregatetype, aggregateid, type and payload");
        }
        var logical = new LinkedHashMap<String, Object>();
        var extra = new LinkedHashMap<String, Object>();
        var seen = new HashSet<String>();
        try (JsonParser p = FACTORY.createParser(content)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new Invalid("the message is not a JSON object (it starts with " + p.currentToken() + "); it must be "
                        + "{\"id\": ..., \"aggregatetype\": ..., \"aggregateid\": ..., \"type\": ..., \"payload\": ...}");
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                if (!seen.add(name)) {
                    throw new Invalid("field " + name + " appears twice in the message");
                }
                JsonToken value = p.nextToken();
                switch (name) {
                    case PAYLOAD -> logical.put(columns.payload(), value == JsonToken.VALUE_NULL ? null : rawValue(p, content));
                    case ID -> logical.put(columns.id(), scalar(p, name));
                    case AGGREGATE_TYPE -> logical.put(columns.aggregateType(), scalar(p, name));
                    case AGGREGATE_ID -> logical.put(columns.aggregateId(), scalar(p, name));
                    case TYPE -> logical.put(columns.type(), scalar(p, name));
                    default -> {
                        if (value.isStructStart()) {
                            p.skipChildren(); // not a header or a topic part; the consumer reads it in the payload
                        } else {
                            extra.put(name, scalar(p, name));
                        }
                    }
                }
            }
            if (t != JsonToken.END_OBJECT) {
                throw new Invalid("the message is not one complete JSON object");
            }
            if (p.nextToken() != null) {
                throw new Invalid("the message holds more than one JSON value (another starts at byte "
                        + p.currentTokenLocation().getByteOffset() + ")");
            }
        } catch (JsonProcessingException e) {
            throw new Invalid("the message is not valid JSON: " + e.getOriginalMessage() + " at byte "
                    + (e.getLocation() == null ? "?" : e.getLocation().getByteOffset()));
        } catch (IOException | RuntimeException e) {
            throw new Invalid("the message cannot be read: " + e.getMessage());
        }
        extra.putAll(logical); // the five fields win over an extra field named like their column
        return extra;
    }

    /** A field's text: strings, numbers and booleans; null for null. */
    private static String scalar(JsonParser p, String name) throws IOException, Invalid {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t.isStructStart()) {
            throw new Invalid("field " + name + " is a JSON " + (t == JsonToken.START_OBJECT ? "object" : "array")
                    + "; it must be a string or a number");
        }
        return p.getText();
    }

    /** The bytes of the current value as they appear in the content, from its first byte to its last. */
    private static byte[] rawValue(JsonParser p, byte[] content) throws IOException {
        long start = p.currentTokenLocation().getByteOffset();
        if (p.currentToken().isStructStart()) {
            p.skipChildren();
        } else {
            p.getTextLength(); // a string is read lazily: finish it, so that the location is past its closing quote
        }
        long end = p.currentLocation().getByteOffset();
        if (start < 0 || end < start || end > content.length) {
            // Not UTF-8 (JSON in UTF-16 or UTF-32 is read without byte offsets): the bytes cannot be cut out as written.
            throw new IOException("the payload's bytes cannot be located: write the message in UTF-8");
        }
        return Arrays.copyOfRange(content, (int) start, (int) end);
    }
}
