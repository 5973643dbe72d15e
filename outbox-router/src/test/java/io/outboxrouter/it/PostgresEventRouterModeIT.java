package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import io.debezium.engine.format.KeyValueHeaderChangeEventFormat;
import io.debezium.engine.format.SerializationFormat;
import io.debezium.engine.format.SimpleString;
import io.outboxrouter.app.Replay;
import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code routing.event-router} against Debezium's own pipeline on the same rows: Debezium's Postgres connector in its
 * embedded engine with Debezium's EventRouter as a transformation and Debezium's serialisation formats, as Debezium
 * Server runs them. Topic, key, value and headers must be the same bytes, streamed and replayed.
 */
class PostgresEventRouterModeIT {

    /** One case: the EventRouter options (shared), the router's routing.format and Debezium Server's debezium.format.* of it. */
    static List<Arguments> cases() {
        return List.of(
                Arguments.of("defaults-with-placements", """
                        table.fields.additional.placement: "type:header:eventType,created_at:envelope:createdAt,tracingspancontext:header"
                        """, "{}", Json.class, Json.class, Json.class, Map.of()),
                Arguments.of("expanded-schemaless", """
                        table.expand.json.payload: "true"
                        route.by.field: type
                        table.fields.additional.placement: "aggregatetype:header"
                        route.tombstone.on.empty.payload: "true"
                        """, "{ key: string, value: schemaless-json, header: schemaless-json }", SimpleString.class, Json.class, Json.class,
                        Map.of("value.converter.schemas.enable", "false", "header.converter.schemas.enable", "false")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theRouterPublishesTheBytesDebeziumServerWould(String label, String options, String format,
                                                       Class<? extends SerializationFormat<?>> keyFormat,
                                                       Class<? extends SerializationFormat<?>> valueFormat,
                                                       Class<? extends SerializationFormat<?>> headerFormat,
                                                       Map<String, String> formatSettings) throws Exception {
        PostgresServer server = TestServers.postgres();
        var db = new PostgresOutbox(server, OutboxContract.unique("erm"));
        String topics = OutboxContract.unique("erm").replace('_', '-');
        String name = OutboxContract.unique("erm-router").replace('_', '-');
        String slot = OutboxContract.unique("dbz_erm");
        db.execute("ALTER TABLE public.outbox_binary ADD COLUMN created_at timestamptz(3) NOT NULL DEFAULT now()");
        db.execute("CREATE PUBLICATION " + slot + " FOR TABLE public.outbox, public.outbox_binary");
        db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
        String indented = options.lines().map(l -> "    " + l).reduce("", (a, b) -> a + b + "\n");
        var config = RouterConfigLoader.parse("name: " + name + "\n" + db.sourceYaml() + """
                routing:
                  event-router:
                    route.topic.replacement: "%s.${routedByValue}"
                %s  format: %s
                kafka:
                  bootstrap-servers: %s
                http:
                  enabled: false
                """.formatted(topics, indented, format, OutboxContract.kafka()), Map.of());

        var written = new ArrayList<UUID>();
        Map<String, Wire> routerRecords;
        try (var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            for (int i = 0; i < 3; i++) {
                written.add(insert(c, "public.outbox", "Order", "o-" + i, "OrderCreated", "{\"n\": " + i + ", \"tags\": [\"a\"]}"));
            }
            written.add(insert(c, "public.outbox", "Order", "o-1", "OrderDeleted", null));
            written.add(insert(c, "public.outbox_binary", "Blob", "b-1", "BlobStored", "\u0001\u0002binary"));
            c.commit();
            db.execute("UPDATE public.outbox SET aggregateid = aggregateid WHERE aggregateid = 'o-2'"); // dropped by both
            routerRecords = readBack(topics, written.size(), Duration.ofSeconds(60));
        }
        // After the router stopped: the connector's metrics carry the topic prefix, one registration per name in a JVM.
        var debezium = debeziumServerPipeline(server, db, slot, name, topics, options, keyFormat, valueFormat, headerFormat,
                formatSettings, written.size());
        assertThat(debezium.keySet()).as("Debezium's pipeline published the same events").isEqualTo(routerRecords.keySet());
        for (var id : debezium.keySet()) {
            assertThat(routerRecords.get(id)).as("event %s", id).isEqualTo(debezium.get(id));
        }

        // A replay of the same rows: the records it would publish carry the same bytes (and its two markers).
        var replayed = new LinkedHashMap<String, Wire>();
        new Replay(config).run(Optional.empty(), r -> replayed.put(idOf(r.headers(), r.topic(), r.key(), r.value()),
                Wire.of(r.topic(), r.key(), r.value(), r.headers(), true)), reason -> { throw new AssertionError(reason); },
                new Replay.Filter(null, null, null, null, null, "created_at", List.of()));
        assertThat(replayed).isEqualTo(debezium);
    }

    private static UUID insert(java.sql.Connection c, String table, String aggregateType, String aggregateId, String type, String payload)
            throws java.sql.SQLException {
        var id = UUID.randomUUID();
        boolean bytes = table.endsWith("binary");
        try (var ps = c.prepareStatement("INSERT INTO " + table + " (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, ?, ?, ?, "
                + (bytes ? "?" : "?::jsonb") + ")")) {
            ps.setString(1, id.toString());
            ps.setString(2, aggregateType);
            ps.setString(3, aggregateId);
            ps.setString(4, type);
            if (bytes) {
                ps.setBytes(5, payload.getBytes(StandardCharsets.UTF_8));
            } else {
                ps.setString(5, payload);
            }
            ps.executeUpdate();
        }
        return id;
    }

    /** A record as it reaches Kafka: topic, key, value and headers (names and bytes, in order), as comparable text. */
    record Wire(String topic, String key, String value, List<String> headers) {
        static Wire of(String topic, byte[] key, byte[] value, Headers headers, boolean dropReplayMarkers) {
            var h = new ArrayList<String>();
            headers.forEach(x -> {
                if (!dropReplayMarkers || !x.key().startsWith("replayed")) {
                    h.add(x.key() + "=" + text(x.value()));
                }
            });
            return new Wire(topic, text(key), text(value), h);
        }

        private static String text(byte[] b) {
            return b == null ? "<null>" : new String(b, StandardCharsets.UTF_8) + " [" + Base64.getEncoder().encodeToString(b) + "]";
        }
    }

    /** The event's id: in its id header (JSON with a schema, schemaless JSON or text), whatever the format. */
    private static String idOf(Headers headers, String topic, byte[] key, byte[] value) {
        var h = headers.lastHeader("id");
        String text = new String(h.value(), StandardCharsets.UTF_8);
        var m = java.util.regex.Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").matcher(text);
        assertThat(m.find()).as("an id header in %s", text).isTrue();
        return m.group();
    }

    private static Map<String, Wire> readBack(String topics, int count, Duration timeout) {
        var props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, OutboxContract.kafka());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "erm-" + UUID.randomUUID());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500"); // topics the router creates while this reads
        var out = new LinkedHashMap<String, Wire>();
        try (var consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(java.util.regex.Pattern.compile(java.util.regex.Pattern.quote(topics) + "\\..*"));
            long deadline = System.nanoTime() + timeout.toNanos();
            while (out.size() < count && System.nanoTime() < deadline) {
                for (var r : consumer.poll(Duration.ofMillis(200))) {
                    out.put(idOf(r.headers(), r.topic(), r.key(), r.value()), Wire.of(r.topic(), r.key(), r.value(), r.headers(), false));
                }
            }
            // Anything more (an update published, a record twice) would show here.
            long settle = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (System.nanoTime() < settle) {
                for (var r : consumer.poll(Duration.ofMillis(200))) {
                    out.put(idOf(r.headers(), r.topic(), r.key(), r.value()) + " again", Wire.of(r.topic(), r.key(), r.value(), r.headers(), false));
                }
            }
        }
        return out;
    }

    /**
     * Debezium Server's way, in process: the embedded engine with Debezium's EventRouter as {@code transforms.outbox} and the
     * serialisation formats' converters; each event as its Kafka sink would send it (strings as UTF-8).
     */
    private static Map<String, Wire> debeziumServerPipeline(PostgresServer server, PostgresOutbox db, String slot, String prefix, String topics,
                                                            String options, Class<? extends SerializationFormat<?>> keyFormat,
                                                            Class<? extends SerializationFormat<?>> valueFormat,
                                                            Class<? extends SerializationFormat<?>> headerFormat,
                                                            Map<String, String> formatSettings, int count) throws Exception {
        var p = new Properties();
        p.setProperty("name", "dbz-" + slot);
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        p.setProperty("offset.flush.interval.ms", "1000");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", Integer.toString(server.port()));
        p.setProperty("database.user", PostgresServer.USER);
        p.setProperty("database.password", PostgresServer.PASSWORD);
        p.setProperty("database.dbname", db.database());
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", slot);
        p.setProperty("publication.name", slot);
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("snapshot.mode", "no_data");
        p.setProperty("topic.prefix", prefix);
        p.setProperty("table.include.list", "public.outbox,public.outbox_binary");
        p.setProperty("transforms", "outbox");
        p.setProperty("transforms.outbox.type", "io.debezium.transforms.outbox.EventRouter");
        p.setProperty("transforms.outbox.route.topic.replacement", topics + ".${routedByValue}");
        for (String line : options.lines().toList()) {
            int colon = line.indexOf(':');
            p.setProperty("transforms.outbox." + line.substring(0, colon).trim(), line.substring(colon + 1).trim().replace("\"", ""));
        }
        formatSettings.forEach(p::setProperty);
        var received = new ConcurrentHashMap<String, Wire>();
        @SuppressWarnings({"unchecked", "rawtypes"})
        var format = KeyValueHeaderChangeEventFormat.of((Class) keyFormat, (Class) valueFormat, (Class) headerFormat);
        ExecutorService executor = Executors.newSingleThreadExecutor();
        @SuppressWarnings({"unchecked", "rawtypes"})
        DebeziumEngine.Builder<ChangeEvent<Object, Object>> builder = (DebeziumEngine.Builder) DebeziumEngine.create(format);
        var failure = new java.util.concurrent.atomic.AtomicReference<String>();
        var engine = builder.using(p)
                .using((success, message, error) -> {
                    if (!success) {
                        failure.set(message + (error == null ? "" : ": " + error));
                    }
                })
                .notifying((ChangeEvent<Object, Object> e) -> {
                    try {
                        var headers = new org.apache.kafka.common.header.internals.RecordHeaders();
                        // Debezium's context headers (extended.headers.enabled) name the run: the router leaves them out.
                        e.headers().stream().filter(h -> !h.getKey().startsWith("__debezium.context."))
                                .forEach(h -> headers.add(h.getKey(), bytes(h.getValue())));
                        byte[] key = bytes(e.key());
                        byte[] value = bytes(e.value());
                        received.put(idOf(headers, e.destination(), key, value), Wire.of(e.destination(), key, value, headers, false));
                    } catch (RuntimeException | AssertionError x) {
                        failure.set("reading " + e + ": " + x);
                    }
                }).build();
        try {
            executor.execute(engine);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (received.size() < count && System.nanoTime() < deadline && failure.get() == null) {
                Thread.sleep(100);
            }
            Thread.sleep(1000); // an update published by mistake would arrive here
            assertThat(failure.get()).as("Debezium's engine failed").isNull();
        } finally {
            try {
                engine.close();
            } catch (IllegalStateException alreadyStopped) {
                // it failed, and stopped
            }
            executor.shutdown();
            executor.awaitTermination(30, TimeUnit.SECONDS);
            db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
        }
        return new LinkedHashMap<>(received);
    }

    /** What Debezium Server's Kafka sink sends for a serialised key, value or header: strings as UTF-8, bytes as they are. */
    private static byte[] bytes(Object o) {
        if (o == null) {
            return null;
        }
        if (o instanceof byte[] b) {
            return b;
        }
        if (o instanceof java.nio.ByteBuffer bb) {
            return Arrays.copyOfRange(bb.array(), bb.arrayOffset() + bb.position(), bb.arrayOffset() + bb.limit());
        }
        return o.toString().getBytes(StandardCharsets.UTF_8);
    }
}
