package io.outboxrouter.connect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.EventRouterOptions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Debezium's own EventRouter and ours, configured alike, on the same change records: the same outcome (a record, none,
 * or a failure) and, for a record, the same topic, partition, key and value with their schemas, timestamp and headers.
 * Every option of Debezium's is set in at least one configuration below; the records have the shapes Debezium's Postgres
 * and MySQL connectors give (a uuid or text id, JSON text or bytes payloads, micro- and nanosecond timestamps).
 */
class EventRouterCompatibilityTest {
    /** Debezium 3.5's name for the missing-column setting, and 3.6's. */
    private static final String OLDER = "table.fields.additional.error.on.missing";
    private static final String NEWER = "table.field.additional.missing";
    private static final String EMPTY_ARRAYS = "table.json.payload.empty.array.behavior";
    private static final Schema UUID = SchemaBuilder.string().name("io.debezium.data.Uuid").build();
    private static final Schema JSON_TEXT = SchemaBuilder.string().name("io.debezium.data.Json").optional().build();
    private static final Schema MICROS = SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").optional().build();
    private static final Schema NANOS = SchemaBuilder.int64().name("io.debezium.time.NanoTimestamp").optional().build();

    /** A Postgres-like outbox row: uuid id, JSON payload, a microsecond timestamp, an INT32 version and partition. */
    private static final Schema PG_ROW = SchemaBuilder.struct().name("pg.public.outbox.Value").optional()
            .field("id", UUID).field("aggregatetype", Schema.STRING_SCHEMA).field("aggregateid", Schema.OPTIONAL_STRING_SCHEMA)
            .field("type", Schema.STRING_SCHEMA).field("payload", JSON_TEXT).field("created_at", MICROS)
            .field("version", Schema.OPTIONAL_INT32_SCHEMA).field("part", Schema.OPTIONAL_INT32_SCHEMA)
            .field("tracingspancontext", Schema.OPTIONAL_STRING_SCHEMA).build();
    /** A MySQL-like one: text id, bytes payload, a nanosecond timestamp, other column names. */
    private static final Schema MY_ROW = SchemaBuilder.struct().name("my.shop.events.Value").optional()
            .field("event_id", Schema.STRING_SCHEMA).field("kind", Schema.STRING_SCHEMA).field("entity", Schema.STRING_SCHEMA)
            .field("event", Schema.STRING_SCHEMA).field("body", Schema.OPTIONAL_BYTES_SCHEMA).field("at", NANOS).build();

    private static Schema envelope(String name, Schema row) {
        return SchemaBuilder.struct().name(name).field("before", row).field("after", row)
                .field("source", SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source").field("db", Schema.STRING_SCHEMA).build())
                .field("op", Schema.STRING_SCHEMA).field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA).build();
    }

    private static final Schema PG_ENVELOPE = envelope("pg.public.outbox.Envelope", PG_ROW);
    private static final Schema MY_ENVELOPE = envelope("my.shop.events.Envelope", MY_ROW);

    private static Struct pgRow(String type, String aggregateId, String payload) {
        return new Struct(PG_ROW).put("id", "6f1c7e1a-0d6e-4b7b-9d0e-3a6c1f2b9a10").put("aggregatetype", type)
                .put("aggregateid", aggregateId).put("type", "OrderPlaced").put("payload", payload)
                .put("created_at", 1_764_000_000_123_456L).put("version", 3).put("part", 1).put("tracingspancontext", "00-ab-cd-01");
    }

    private static SourceRecord change(Schema envelopeSchema, Struct row, String op) {
        var source = new Struct(envelopeSchema.field("source").schema()).put("db", "shop");
        var value = new Struct(envelopeSchema).put("source", source).put("op", op).put("ts_ms", 1_764_000_000_999L);
        value.put(op.equals("d") ? "before" : "after", row);
        var headers = new ConnectHeaders().addString("existing", "kept");
        return new SourceRecord(Map.of("server", "pg"), Map.of("lsn", 1L), envelopeSchema.name().replace(".Envelope", ""), null,
                Schema.STRING_SCHEMA, "k", envelopeSchema, value, 1_000L, headers);
    }

    static Stream<Arguments> cases() {
        var configs = new LinkedHashMap<String, Map<String, String>>();
        configs.put("defaults", Map.of());
        configs.put("regex and replacement", Map.of("route.topic.regex", "(?<kind>[A-Z][a-z]+)(?<rest>.*)",
                "route.topic.replacement", "events.${kind}-$2"));
        configs.put("placements", Map.of("table.fields.additional.placement",
                "type:header:eventType,aggregatetype:envelope:aggregate,part:partition,tracingspancontext:header"));
        configs.put("envelope with a schema version", Map.of("table.fields.additional.placement", "type:envelope",
                "table.field.event.schema.version", "version"));
        configs.put("timestamp column", Map.of("table.field.event.timestamp", "created_at"));
        configs.put("expanded JSON", Map.of("table.expand.json.payload", "true"));
        configs.put("expanded JSON, nulls as bytes, avro names", Map.of("table.expand.json.payload", "true",
                "table.json.payload.null.behavior", "optional_bytes", "field.name.adjustment.mode", "avro"));
        configs.put("tombstone on empty payload", Map.of("route.tombstone.on.empty.payload", "true"));
        configs.put("missing additional column tolerated", Map.of("table.fields.additional.placement", "nosuch:header,type:header",
                "table.fields.additional.error.on.missing", "false"));
        configs.put("missing additional column refused", Map.of("table.fields.additional.placement", "nosuch:header"));
        configs.put("missing envelope column tolerated", Map.of("table.fields.additional.placement", "nosuch:envelope,type:envelope",
                "table.fields.additional.error.on.missing", "false"));
        configs.put("updates fatal", Map.of("table.op.invalid.behavior", "fatal"));
        configs.put("updates error", Map.of("table.op.invalid.behavior", "error", "tracing.operation.name", "x",
                "tracing.span.context.field", "tracingspancontext", "tracing.with.context.field.only", "false"));
        configs.put("key by type, route by id", Map.of("table.field.event.key", "type", "route.by.field", "aggregateid",
                "table.field.event.type", "type"));

        var records = new LinkedHashMap<String, SourceRecord>();
        records.put("insert", change(PG_ENVELOPE, pgRow("Order", "o-1", "{\"total\":12.5,\"n\":3,\"big\":12345678901,\"ok\":true,"
                + "\"lines\":[1,2],\"who\":{\"name\":\"a\",\"tags\":[\"x\"]},\"gone\":null,\"ünï-code\":1}"), "c"));
        records.put("empty arrays", change(PG_ENVELOPE, pgRow("Order", "o-7", "{\"a\":1,\"tags\":[],\"who\":{\"name\":\"x\",\"roles\":[]}}"), "c"));
        records.put("array elements that disagree", change(PG_ENVELOPE, pgRow("Order", "o-6", "{\"items\":[{\"p\":1},{\"p\":2.5}]}"), "c"));
        records.put("snapshot read", change(PG_ENVELOPE, pgRow("Customer", "c-9", "{\"a\":1}"), "r"));
        records.put("update", change(PG_ENVELOPE, pgRow("Order", "o-1", "{}"), "u"));
        records.put("delete", change(PG_ENVELOPE, pgRow("Order", "o-1", "{}"), "d"));
        records.put("null payload", change(PG_ENVELOPE, pgRow("Order", "o-2", null), "c"));
        records.put("empty payload", change(PG_ENVELOPE, pgRow("Order", "o-3", " "), "c"));
        records.put("payload not JSON", change(PG_ENVELOPE, pgRow("Order", "o-4", "plain text"), "c"));
        records.put("null key", change(PG_ENVELOPE, pgRow("Order", null, "{\"a\":1}"), "c"));
        records.put("aggregate type not a topic name", change(PG_ENVELOPE, pgRow("Or der/ü", "o-5", "{\"a\":1}"), "c"));
        records.put("mysql bytes payload", change(MY_ENVELOPE, new Struct(MY_ROW).put("event_id", "e-1").put("kind", "Order")
                .put("entity", "o-1").put("event", "Placed").put("body", "{\"a\":1}".getBytes(StandardCharsets.UTF_8))
                .put("at", 1_764_000_000_123_456_789L), "c"));
        records.put("tombstone", new SourceRecord(Map.of(), Map.of(), "pg.public.outbox", null, Schema.STRING_SCHEMA, "k", null, null));
        records.put("not a change event", new SourceRecord(Map.of(), Map.of(), "__debezium-heartbeat.pg", null,
                Schema.STRING_SCHEMA, "k", SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").field("ts_ms",
                        Schema.INT64_SCHEMA).build(), null));

        var out = new ArrayList<Arguments>();
        configs.forEach((cn, c) -> records.forEach((rn, r) -> {
            var config = new LinkedHashMap<>(c);
            if (rn.startsWith("mysql")) {
                config.putIfAbsent("table.field.event.id", "event_id");
                config.putIfAbsent("table.field.event.key", "entity");
                config.putIfAbsent("table.field.event.payload", "body");
                config.putIfAbsent("route.by.field", "kind");
                if ("created_at".equals(config.get("table.field.event.timestamp"))) {
                    config.put("table.field.event.timestamp", "at");
                }
                if (config.containsKey("table.fields.additional.placement")) {
                    config.put("table.fields.additional.placement", config.get("table.fields.additional.placement")
                            .replace("aggregatetype:", "kind:").replace("type:", "event:").replace("part:partition", "nosuch:header")
                            .replace("tracingspancontext:header", "event:header:again"));
                    config.putIfAbsent("table.fields.additional.error.on.missing", "false");
                }
                config.remove("table.field.event.schema.version");
                if ("type".equals(config.get("table.field.event.key"))) {
                    config.put("table.field.event.key", "event");
                    config.put("route.by.field", "entity");
                }
            }
            out.add(Arguments.of(cn, rn, config, r));
        }));
        return out.stream();
    }

    /** What a transformation made of a record: a failure, nothing, or the record's parts as plain values. */
    private static String outcome(Transformation<SourceRecord> t, SourceRecord record) {
        SourceRecord r;
        try {
            r = t.apply(record);
        } catch (RuntimeException e) {
            return "failed";
        }
        if (r == null) {
            return "dropped";
        }
        if (r == record) {
            return "unchanged";
        }
        String wire;
        try {
            wire = wire(r);
        } catch (RuntimeException e) {
            return "a record its converters refuse: " + e.getMessage();
        }
        var headers = new ArrayList<String>();
        r.headers().forEach(h -> headers.add(h.key() + "=" + render(h.value()) + " " + describe(h.schema())));
        return "topic " + r.topic() + "\npartition " + r.kafkaPartition() + "\nkey " + render(r.key()) + " " + describe(r.keySchema())
                + "\nvalue " + render(r.value()) + " " + describe(r.valueSchema()) + "\ntimestamp " + r.timestamp()
                + "\nheaders " + headers + "\non the wire " + wire;
    }

    /** Key and value as the converters Debezium users run write them: JSON with and without schemas, and String. */
    private static String wire(SourceRecord r) {
        var out = new StringBuilder();
        for (var converter : List.of(json(true), json(false), new org.apache.kafka.connect.storage.StringConverter())) {
            converter.configure(Map.of(), false);
            out.append(text(converter.fromConnectData(r.topic(), r.keySchema(), r.key()))).append(" | ")
                    .append(text(converter.fromConnectData(r.topic(), r.valueSchema(), r.value()))).append(" || ");
        }
        return out.toString();
    }

    private static org.apache.kafka.connect.storage.Converter json(boolean schemas) {
        return new org.apache.kafka.connect.json.JsonConverter() {
            @Override
            public void configure(Map<String, ?> configs, boolean isKey) {
                var c = new LinkedHashMap<String, Object>(configs);
                c.put("schemas.enable", String.valueOf(schemas));
                super.configure(c, isKey);
            }
        };
    }

    private static String text(byte[] bytes) {
        return bytes == null ? "null" : new String(bytes, StandardCharsets.UTF_8);
    }

    private static String render(Object v) {
        return v instanceof byte[] b ? "bytes:" + new String(b, StandardCharsets.UTF_8) : String.valueOf(v);
    }

    private static String describe(Schema s) {
        if (s == null) {
            return "(no schema)";
        }
        var sb = new StringBuilder(s.type() + (s.isOptional() ? "?" : "") + (s.name() == null ? "" : "<" + s.name() + ">")
                + (s.version() == null ? "" : "v" + s.version()));
        if (s.type() == Schema.Type.STRUCT) {
            sb.append("{");
            s.fields().forEach(f -> sb.append(f.name()).append(":").append(describe(f.schema())).append(","));
            sb.append("}");
        } else if (s.type() == Schema.Type.ARRAY) {
            sb.append("[").append(describe(s.valueSchema())).append("]");
        }
        return sb.toString();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void ourEventRouterGivesWhatDebeziumsGives(String configName, String recordName, Map<String, String> config, SourceRecord record) {
        assertSameOutcome(configName, recordName, config, config, record);
    }

    static Stream<Arguments> casesWithAPlacement() {
        return cases().filter(a -> ((Map<?, ?>) a.get()[2]).containsKey("table.fields.additional.placement"));
    }

    /** Debezium's EventRouter (3.5) under the older name and ours under 3.6's: the same outcomes as under the same name. */
    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("casesWithAPlacement")
    void theNewerNameOfTheMissingColumnSettingActsAsTheOlderOne(String configName, String recordName, Map<String, String> config,
                                                                SourceRecord record) {
        var newer = new LinkedHashMap<>(config);
        String older = newer.remove(OLDER);
        newer.put(NEWER, older == null || Boolean.parseBoolean(older) ? "error" : "ignore");
        assertSameOutcome(configName, recordName, config, newer, record);
    }

    private static void assertSameOutcome(String configName, String recordName, Map<String, String> theirConfig,
                                          Map<String, String> ourConfig, SourceRecord record) {
        try (var theirs = new io.debezium.transforms.outbox.EventRouter<SourceRecord>(); var ours = new EventRouter<SourceRecord>()) {
            theirs.configure(theirConfig);
            ours.configure(ourConfig);
            String expected = outcome(theirs, copy(record));
            String actual = outcome(ours, copy(record));
            if (DIFFERENCES.containsKey(configName + ": " + recordName)) {
                assertThat(actual).as("a deliberate difference: " + DIFFERENCES.get(configName + ": " + recordName))
                        .isNotEqualTo(expected);
                return;
            }
            assertThat(actual).isEqualTo(expected);
        }
    }

    /** Where ours differs on purpose, and why (also in docs/event-router.md). */
    private static final Map<String, String> DIFFERENCES = differences();

    private static Map<String, String> differences() {
        var d = new LinkedHashMap<String, String>();
        d.put("expanded JSON, nulls as bytes, avro names: insert", "a JSON key renamed by field.name.adjustment.mode keeps its value "
                + "(Debezium's schema has the renamed field, its value leaves it null)");
        for (String c : List.of("expanded JSON", "expanded JSON, nulls as bytes, avro names")) {
            d.put(c + ": array elements that disagree", "a payload whose schema cannot be inferred is sent as it is (Debezium's "
                    + "keeps the text but gives it the inferred struct schema, a record no converter writes)");
        }
        for (String r : List.of("insert", "empty arrays", "array elements that disagree", "snapshot read", "null payload", "empty payload", "payload not JSON", "null key",
                "aggregate type not a topic name", "mysql bytes payload")) {
            d.put("missing envelope column tolerated: " + r, "with error.on.missing=false a missing envelope column is left out "
                    + "(Debezium's fails with a NullPointerException)");
        }
        return d;
    }

    /** A record with headers of its own: Debezium's adds to the record's header collection. */
    private static SourceRecord copy(SourceRecord r) {
        return r.newRecord(r.topic(), r.kafkaPartition(), r.keySchema(), r.key(), r.valueSchema(), r.value(), r.timestamp(),
                r.headers().duplicate());
    }

    @Test
    void anUnknownPlacementIsRefusedWhenConfigured() {
        try (var ours = new EventRouter<SourceRecord>()) {
            assertThatThrownBy(() -> ours.configure(Map.of("table.fields.additional.placement", "type:body")))
                    .isInstanceOf(ConfigException.class).hasMessageContaining("'body' in 'type:body' is not a placement");
        }
    }

    @Test
    void theTwoNamesOfTheMissingColumnSettingMustAgree() {
        try (var ours = new EventRouter<SourceRecord>()) {
            assertThatThrownBy(() -> ours.configure(Map.of(OLDER, "true", NEWER, "ignore")))
                    .isInstanceOf(ConfigException.class).hasMessageContaining(NEWER).hasMessageContaining(OLDER + " says true");
            assertThatThrownBy(() -> ours.configure(Map.of(OLDER, "false", NEWER, "error")))
                    .isInstanceOf(ConfigException.class).hasMessageContaining(NEWER).hasMessageContaining(OLDER + " says false");
            assertThatThrownBy(() -> ours.configure(Map.of(NEWER, "skip"))).isInstanceOf(ConfigException.class).hasMessageContaining(NEWER);
            assertThatThrownBy(() -> ours.configure(Map.of(EMPTY_ARRAYS, "keep"))).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(EMPTY_ARRAYS);
            ours.configure(Map.of(OLDER, "false", NEWER, "IGNORE")); // agreeing: taken
        }
    }

    @Test
    void theNewerOptionsHaveDebeziumsDefaults() {
        var keys = EventRouter.CONFIG_DEF.configKeys();
        assertThat(keys.get(NEWER).defaultValue).isEqualTo("error");
        assertThat(keys.get(EMPTY_ARRAYS).defaultValue).isEqualTo("ignore");
    }

    /** The router's {@code routing.event-router} passes every option, both names of the missing-column setting in step. */
    @Test
    void theRoutersOptionsConfigureTheTransformationUnderEitherName() {
        var record = change(PG_ENVELOPE, pgRow("Order", "o-1", "{\"a\":1}"), "c");
        for (var given : List.of(Map.of(OLDER, "false"), Map.of(NEWER, "ignore"), Map.of(OLDER, "false", NEWER, "ignore"),
                Map.of(NEWER, "error"), Map.<String, String>of())) {
            var placed = new LinkedHashMap<>(given);
            placed.put("table.fields.additional.placement", "nosuch:header,type:header");
            var options = EventRouterOptions.of(placed, (option, problem) -> {
                throw new AssertionError(option + ": " + problem);
            });
            try (var ours = new EventRouter<SourceRecord>()) {
                ours.configure(options.all());
                if (options.flag(EventRouterOptions.ERROR_ON_MISSING)) {
                    assertThatThrownBy(() -> ours.apply(copy(record))).as(given.toString()).hasMessageContaining("nosuch");
                } else {
                    assertThat(ours.apply(copy(record)).headers().lastWithName("type").value()).as(given.toString()).isEqualTo("OrderPlaced");
                }
            }
        }
    }

    @Test
    void anEmptyJsonArrayIsLeftOutOrTypedAnOptionalArrayOfOptionalStrings() {
        var record = change(PG_ENVELOPE, pgRow("Order", "o-7", "{\"a\":1,\"tags\":[],\"who\":{\"name\":\"x\",\"roles\":[]},\"m\":[[]]}"), "c");
        for (var config : List.of(Map.of("table.expand.json.payload", "true"),
                Map.of("table.expand.json.payload", "true", EMPTY_ARRAYS, "ignore"))) {
            try (var ours = new EventRouter<SourceRecord>()) {
                ours.configure(config);
                var out = ours.apply(copy(record));
                assertThat(out.valueSchema().type()).as("an array of empty arrays has no type: the payload is sent as it is")
                        .isEqualTo(Schema.Type.STRING);
            }
        }
        var withoutNested = change(PG_ENVELOPE, pgRow("Order", "o-7", "{\"a\":1,\"tags\":[],\"who\":{\"name\":\"x\",\"roles\":[]}}"), "c");
        try (var ours = new EventRouter<SourceRecord>()) {
            ours.configure(Map.of("table.expand.json.payload", "true"));
            var value = (Struct) ours.apply(copy(withoutNested)).value();
            assertThat(value.schema().field("tags")).as("left out by default, as Debezium's ignore").isNull();
            assertThat(value.getStruct("who").schema().field("roles")).isNull();
            assertThat(value.getInt32("a")).isEqualTo(1);
        }
        try (var ours = new EventRouter<SourceRecord>()) {
            ours.configure(Map.of("table.expand.json.payload", "true", EMPTY_ARRAYS, "optional_string"));
            var out = ours.apply(copy(record));
            Schema tags = out.valueSchema().field("tags").schema();
            assertThat(tags.type()).isEqualTo(Schema.Type.ARRAY);
            assertThat(tags.isOptional()).isTrue();
            assertThat(tags.valueSchema()).isEqualTo(Schema.OPTIONAL_STRING_SCHEMA);
            var value = (Struct) out.value();
            List<Object> tagValues = value.getArray("tags");
            List<Object> roleValues = value.getStruct("who").getArray("roles");
            List<Object> nested = value.getArray("m");
            assertThat(tagValues).isEmpty();
            assertThat(value.getStruct("who").schema().field("roles").schema()).isEqualTo(tags);
            assertThat(roleValues).isEmpty();
            assertThat(out.valueSchema().field("m").schema().valueSchema()).isEqualTo(tags);
            assertThat(nested).containsExactly(List.of());
            assertThat(wire(out)).contains("{\"a\":1,\"tags\":[],\"who\":{\"name\":\"x\",\"roles\":[]},\"m\":[[]]}");
        }
        // Elements whose arrays are empty in one and typed in another: the first one's type is kept, either way round.
        for (String payload : List.of("{\"items\":[{\"tags\":[]},{\"tags\":[1]}]}", "{\"items\":[{\"tags\":[1]},{\"tags\":[]}]}")) {
            try (var ours = new EventRouter<SourceRecord>()) {
                ours.configure(Map.of("table.expand.json.payload", "true", EMPTY_ARRAYS, "optional_string"));
                var out = ours.apply(copy(change(PG_ENVELOPE, pgRow("Order", "o-8", payload), "c")));
                assertThat(out.valueSchema().type()).as(payload).isEqualTo(Schema.Type.STRUCT);
            }
        }
    }

    @Test
    void everyOptionOfDebeziumsIsOneOfOurs() {
        var theirs = new io.debezium.transforms.outbox.EventRouter<SourceRecord>().config().names();
        assertThat(EventRouter.CONFIG_DEF.names()).containsAll(theirs);
        assertThat(List.copyOf(theirs)).isNotEmpty();
    }
}
