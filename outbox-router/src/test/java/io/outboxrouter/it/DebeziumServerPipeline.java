package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import io.debezium.engine.format.KeyValueHeaderChangeEventFormat;
import io.debezium.engine.format.SerializationFormat;
import io.debezium.engine.format.SimpleString;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

/**
 * Debezium Server's pipeline, in process, for the differential tests of {@code routing.event-router}: Debezium's connector in
 * its embedded engine, Debezium's EventRouter as the transformation and Debezium's serialisation formats, configured from a
 * Debezium Server {@code application.properties}; and what a record is on the wire, to compare the router's with.
 */
final class DebeziumServerPipeline implements AutoCloseable {
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
    static String idOf(Headers headers) {
        String text = new String(headers.lastHeader("id").value(), StandardCharsets.UTF_8);
        try {
            // JSON with a schema (its payload), JSON text, or the id as text
            var node = text.startsWith("{") ? JSON.readTree(text).get("payload") : text.startsWith("\"") ? JSON.readTree(text) : null;
            return node == null ? text : node.asText();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    static Map<String, Wire> readBack(String topics, int count, Duration timeout) {
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
                    out.put(idOf(r.headers()), Wire.of(r.topic(), r.key(), r.value(), r.headers(), false));
                }
            }
            // Anything more (an update published, a record twice) would show here.
            long settle = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (System.nanoTime() < settle) {
                for (var r : consumer.poll(Duration.ofMillis(200))) {
                    out.put(idOf(r.headers()) + " again", Wire.of(r.topic(), r.key(), r.value(), r.headers(), false));
                }
            }
        }
        return out;
    }

    /**
     * Debezium Server's way, in process: its properties given to the embedded engine as Debezium Server gives them
     * ({@code debezium.source.*} to the connector, {@code debezium.transforms*} as the transformations, {@code
     * debezium.format.*} as the converters), offsets in memory; each event as its Kafka sink would send it.
     */
    static DebeziumServerPipeline start(Properties server, Map<String, String> overrides) {
        var p = new Properties();
        var formats = new java.util.HashMap<String, Class<? extends SerializationFormat<?>>>(Map.of("key", Json.class, "value", Json.class,
                "header", Json.class));
        for (String key : server.stringPropertyNames()) {
            String value = server.getProperty(key);
            if (key.startsWith("debezium.source.")) {
                p.setProperty(key.substring("debezium.source.".length()), value);
            } else if (key.startsWith("debezium.transforms")) {
                p.setProperty(key.substring("debezium.".length()), value);
            } else if (key.matches("debezium\\.format\\.(key|value|header)")) {
                formats.put(key.substring("debezium.format.".length()), value.equals("simplestring") ? SimpleString.class : Json.class);
            } else if (key.startsWith("debezium.format.")) {
                String rest = key.substring("debezium.format.".length());
                p.setProperty(rest.substring(0, rest.indexOf('.')) + ".converter" + rest.substring(rest.indexOf('.')), value);
            }
        }
        p.setProperty("name", "dbz-" + p.getProperty("topic.prefix"));
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        overrides.forEach(p::setProperty);
        var received = new ConcurrentHashMap<String, Wire>();
        @SuppressWarnings({"unchecked", "rawtypes"})
        var format = KeyValueHeaderChangeEventFormat.of((Class) formats.get("key"), (Class) formats.get("value"), (Class) formats.get("header"));
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
                        if (headers.lastHeader("id") == null) {
                            return; // not an outbox event (a schema change, passed on by the EventRouter): the router publishes none
                        }
                        byte[] key = bytes(e.key());
                        byte[] value = bytes(e.value());
                        received.put(idOf(headers), Wire.of(e.destination(), key, value, headers, false));
                    } catch (RuntimeException | AssertionError x) {
                        failure.set("reading " + e + ": " + x);
                    }
                }).build();
        executor.execute(engine);
        return new DebeziumServerPipeline(engine, executor, received, failure);
    }

    private final DebeziumEngine<?> engine;
    private final ExecutorService executor;
    private final Map<String, Wire> received;
    private final java.util.concurrent.atomic.AtomicReference<String> failure;

    private DebeziumServerPipeline(DebeziumEngine<?> engine, ExecutorService executor, Map<String, Wire> received,
                                   java.util.concurrent.atomic.AtomicReference<String> failure) {
        this.engine = engine;
        this.executor = executor;
        this.received = received;
        this.failure = failure;
    }

    /** Whether an event with this id came through, for a warm-up. */
    boolean saw(String id) {
        return received.containsKey(id);
    }

    /** The events once {@code count} came (or a minute passed), and a second more: what it published by event id. */
    Map<String, Wire> await(int count) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (received.size() < count && System.nanoTime() < deadline && failure.get() == null) {
            Thread.sleep(100);
        }
        Thread.sleep(1000); // an update published by mistake would arrive here
        assertThat(failure.get()).as("Debezium's engine failed").isNull();
        return new LinkedHashMap<>(received);
    }

    @Override
    public void close() throws Exception {
        try {
            engine.close();
        } catch (IllegalStateException alreadyStopped) {
            // it failed, and stopped
        }
        executor.shutdown();
        executor.awaitTermination(30, TimeUnit.SECONDS);
    }

    /** The router's records and Debezium's: every event once on both sides, each the same bytes. */
    static void assertSameBytes(Map<String, Wire> router, Map<String, Wire> debezium, int written) {
        assertThat(debezium).as("Debezium's pipeline published every event once").hasSize(written);
        assertThat(debezium.keySet()).as("Debezium's pipeline published the same events").isEqualTo(router.keySet());
        for (var id : debezium.keySet()) {
            assertThat(router.get(id)).as("event %s", id).isEqualTo(debezium.get(id));
        }
    }

    /** What a replay of every row still in the outbox tables would publish (a dry run), by event id, its markers left out. */
    static Map<String, Wire> replayed(io.outboxrouter.config.RouterConfig config) throws Exception {
        var replayed = new LinkedHashMap<String, Wire>();
        new io.outboxrouter.app.Replay(config).run(java.util.Optional.empty(),
                r -> replayed.put(idOf(r.headers()), Wire.of(r.topic(), r.key(), r.value(), r.headers(), true)),
                reason -> {
                    throw new AssertionError(reason);
                }, new io.outboxrouter.app.ReplayFilter(null, null, null, null, null, "created_at", List.of()));
        return replayed;
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
