package io.outboxrouter.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;

/**
 * A JSON payload turned into a Connect value with a schema inferred from it, as Debezium's EventRouter does with
 * {@code table.expand.json.payload}: every schema optional; strings, booleans, integers (INT32 when they fit, else INT64),
 * other numbers as FLOAT64; objects as structs named by their path from the payload column; arrays by their element
 * schema (the fields of object elements merged); empty arrays and nulls left out (or empty arrays as optional arrays of
 * optional strings, nulls as optional bytes).
 */
final class ExpandedJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** @param schema null when the payload was an empty array left out */
    record Expanded(Schema schema, Object value) {
    }

    /** How a JSON null is typed: left out ({@code ignore}) or as optional bytes ({@code optional_bytes}). */
    enum NullBehavior {
        IGNORE, OPTIONAL_BYTES
    }

    /**
     * How an empty JSON array is typed, as Debezium's {@code table.json.payload.empty.array.behavior}: left out
     * ({@code ignore}), or as an optional array of optional strings ({@code optional_string}), its elements' type being
     * unknown.
     */
    enum EmptyArrayBehavior {
        IGNORE, OPTIONAL_STRING
    }

    /** How JSON keys become field names: as they are, or made legal for Avro (as Debezium's {@code field.name.adjustment.mode}). */
    enum NameAdjustment {
        NONE, AVRO, AVRO_UNICODE
    }

    private static final Schema EMPTY_ARRAY = SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build();

    private final NullBehavior nulls;
    private final EmptyArrayBehavior emptyArrays;
    private final NameAdjustment names;

    ExpandedJson(NullBehavior nulls, EmptyArrayBehavior emptyArrays, NameAdjustment names) {
        this.nulls = nulls;
        this.emptyArrays = emptyArrays;
        this.names = names;
    }

    /**
     * The expanded payload.
     *
     * @param rootName the payload column's name: the top-level struct's schema name
     * @throws IllegalArgumentException when the text is not a JSON object or array, or its arrays mix types (also in the
     *                                  fields of their object elements, at any depth)
     */
    Expanded expand(String text, String rootName) {
        if (text.isEmpty() || (text.charAt(0) != '{' && text.charAt(0) != '[')) {
            throw new IllegalArgumentException("a JSON payload to expand starts with { or [, this one with '"
                    + (text.isEmpty() ? "" : text.substring(0, 1)) + "'");
        }
        JsonNode node;
        try {
            node = JSON.readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("the payload is not JSON: " + e.getMessage(), e);
        }
        Schema schema = schemaOf(node, rootName);
        if (node.isArray()) {
            throw new IllegalArgumentException("a top-level JSON array is not expanded");
        }
        return new Expanded(schema, valueOf(node, schema));
    }

    private Schema schemaOf(JsonNode node, String path) {
        return switch (node.getNodeType()) {
            case STRING -> Schema.OPTIONAL_STRING_SCHEMA;
            case BOOLEAN -> Schema.OPTIONAL_BOOLEAN_SCHEMA;
            case NUMBER -> node.isInt() ? Schema.OPTIONAL_INT32_SCHEMA : node.isLong() ? Schema.OPTIONAL_INT64_SCHEMA
                    : Schema.OPTIONAL_FLOAT64_SCHEMA;
            case OBJECT -> structSchema(node, path);
            case ARRAY -> arraySchema(node, path);
            case NULL, MISSING -> nulls == NullBehavior.OPTIONAL_BYTES ? Schema.OPTIONAL_BYTES_SCHEMA : null;
            default -> throw new IllegalArgumentException("a JSON value of type " + node.getNodeType() + " is not expanded");
        };
    }

    private Schema structSchema(JsonNode node, String path) {
        var fields = new LinkedHashMap<String, Schema>();
        node.fields().forEachRemaining(e -> {
            String name = adjust(e.getKey());
            Schema s = schemaOf(e.getValue(), path + "." + name);
            if (s != null) {
                fields.putIfAbsent(name, s);
            }
        });
        var b = SchemaBuilder.struct().name(path).optional();
        fields.forEach(b::field);
        return b.build();
    }

    private Schema arraySchema(JsonNode node, String path) {
        Schema element = null;
        for (JsonNode item : node) {
            Schema s = schemaOf(item, path);
            if (s == null) {
                continue;
            }
            element = element == null ? s : merge(element, s, path);
        }
        if (element == null) {
            if (node.isEmpty()) {
                return emptyArrays == EmptyArrayBehavior.OPTIONAL_STRING ? EMPTY_ARRAY : null;
            }
            throw new IllegalArgumentException("array '" + path + "' has no element with a type");
        }
        return SchemaBuilder.array(element).optional().build();
    }

    private static Schema merge(Schema a, Schema b, String path) {
        if (a.type() == Schema.Type.BYTES && b.type() != Schema.Type.BYTES) {
            return b; // a null's placeholder gives way to a real type
        }
        if (b.type() == Schema.Type.BYTES || a.equals(b)) {
            return a;
        }
        if (a.type() == Schema.Type.ARRAY && b.type() == Schema.Type.ARRAY) {
            if (a.equals(EMPTY_ARRAY) || b.equals(EMPTY_ARRAY)) {
                return a; // an empty array's optional_string type meets a typed one: the first seen is kept, as Debezium does
            }
            return SchemaBuilder.array(merge(a.valueSchema(), b.valueSchema(), path)).optional().build();
        }
        if (a.type() == Schema.Type.STRUCT && b.type() == Schema.Type.STRUCT) {
            var fields = new LinkedHashMap<String, Schema>();
            a.fields().forEach(f -> fields.put(f.name(), f.schema()));
            b.fields().forEach(f -> fields.merge(f.name(), f.schema(), (x, y) -> merge(x, y, path + "." + f.name())));
            var sb = SchemaBuilder.struct().name(path).optional();
            fields.forEach(sb::field);
            return sb.build();
        }
        throw new IllegalArgumentException("array '" + path + "' mixes " + a.type() + " and " + b.type());
    }

    private Object valueOf(JsonNode node, Schema schema) {
        if (node == null || node.isNull() || node.isMissingNode() || schema == null) {
            return null;
        }
        return switch (schema.type()) {
            case STRING -> node.isTextual() ? node.textValue() : node.toString();
            case BOOLEAN -> node.booleanValue();
            case INT32 -> node.intValue();
            case INT64 -> node.longValue();
            case FLOAT64 -> node.doubleValue();
            case BYTES -> null;
            case STRUCT -> {
                var struct = new Struct(schema);
                var it = node.fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    var field = schema.field(adjust(e.getKey()));
                    if (field != null && struct.get(field) == null) {
                        struct.put(field, valueOf(e.getValue(), field.schema()));
                    }
                }
                yield struct;
            }
            case ARRAY -> {
                List<Object> items = new ArrayList<>();
                for (JsonNode item : node) {
                    items.add(valueOf(item, schema.valueSchema()));
                }
                yield items;
            }
            default -> throw new IllegalArgumentException("unexpected schema " + schema.type());
        };
    }

    /** A JSON key as a field name under {@link #names}. */
    String adjust(String key) {
        if (names == NameAdjustment.NONE || key.isEmpty()) {
            return key;
        }
        var sb = new StringBuilder();
        for (int i = 0; i < key.length(); i++) {
            char ch = key.charAt(i);
            boolean legal = ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (i > 0 && ch >= '0' && ch <= '9');
            if (legal) {
                sb.append(ch);
            } else if (names == NameAdjustment.AVRO_UNICODE) {
                sb.append(String.format("_u%04x", (int) ch));
            } else {
                sb.append(i == 0 && ch >= '0' && ch <= '9' ? "_" + ch : "_");
            }
        }
        return sb.toString();
    }
}
