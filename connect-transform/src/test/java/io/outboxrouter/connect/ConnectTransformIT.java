package io.outboxrouter.connect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestServers;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The transformation on a real Kafka Connect worker (distributed mode, in this JVM, with exactly-once source support
 * enabled) running Debezium's Postgres connector against a real Postgres 17 and Kafka broker: the router's contract
 * assertions on what reaches Kafka.
 */
class ConnectTransformIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static Connect<?> connect;
    private static URI rest;
    private static ClassLoader loader;

    @BeforeAll
    static void startWorker() {
        String id = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFFL);
        var p = new HashMap<String, String>();
        p.put("bootstrap.servers", TestServers.kafka().bootstrapServers());
        p.put("group.id", "outbox-connect-" + id);
        p.put("config.storage.topic", "outbox-connect-" + id + "-configs");
        p.put("offset.storage.topic", "outbox-connect-" + id + "-offsets");
        p.put("status.storage.topic", "outbox-connect-" + id + "-status");
        p.put("config.storage.replication.factor", "1");
        p.put("offset.storage.replication.factor", "1");
        p.put("status.storage.replication.factor", "1");
        p.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        p.put("listeners", "http://127.0.0.1:0");
        p.put("exactly.once.source.support", "enabled");
        p.put("offset.flush.interval.ms", "1000");
        p.put("plugin.discovery", "service_load"); // the connector and the transformation are found by their manifests
        Exit.setExitProcedure((code, message) -> {
            throw new IllegalStateException("Connect wanted to exit " + code + ": " + message);
        });
        loader = Thread.currentThread().getContextClassLoader();
        connect = new ConnectDistributed().startConnect(p);
        rest = connect.rest().advertisedUrl();
    }

    @AfterAll
    static void stopWorker() {
        if (connect != null) {
            connect.stop();
        }
        Thread.currentThread().setContextClassLoader(loader);
        Exit.resetExitProcedure();
    }

    private record Db(PostgresServer server, String name) {
        Connection connect() throws SQLException {
            var c = server.connect(name);
            c.setAutoCommit(false);
            return c;
        }
    }

    private static Db database(String prefix) throws SQLException {
        var server = TestServers.postgres();
        var db = new Db(server, server.createDatabase(prefix + "_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFL)));
        try (var c = db.connect(); var st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE public.outbox (
                      id uuid PRIMARY KEY,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload jsonb,
                      created_at timestamptz NOT NULL DEFAULT now(),
                      tracingspancontext varchar(256))""");
            st.execute("CREATE TABLE public.seq (aggregateid varchar(255) PRIMARY KEY, n int NOT NULL)");
            c.commit();
        }
        return db;
    }

    /** The connector config a user posts, with the transformation configured by the router's keys. */
    private static Map<String, String> connector(Db db, String name, String topics, Map<String, String> extra) {
        var c = new LinkedHashMap<String, String>();
        c.put("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        c.put("database.hostname", "127.0.0.1");
        c.put("database.port", Integer.toString(db.server().port()));
        c.put("database.user", PostgresServer.USER);
        c.put("database.password", PostgresServer.PASSWORD);
        c.put("database.dbname", db.name());
        c.put("topic.prefix", name);
        c.put("plugin.name", "pgoutput");
        c.put("slot.name", name.replace('-', '_'));
        c.put("publication.name", name.replace('-', '_'));
        c.put("publication.autocreate.mode", "filtered");
        c.put("table.include.list", "public.outbox");
        c.put("snapshot.mode", "no_data");
        c.put("tombstones.on.delete", "false");
        c.put("decimal.handling.mode", "string");
        c.put("binary.handling.mode", "bytes");
        c.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        c.put("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        c.put("transforms", "outbox");
        c.put("transforms.outbox.type", OutboxEventRouter.class.getName());
        c.put("transforms.outbox.source.tables", "public.outbox");
        c.put("transforms.outbox.outbox.headers", "tracingspancontext:traceparent");
        c.put("transforms.outbox.routing.topic", topics + ".${aggregatetype}");
        c.put("transforms.outbox.routing.dead-letters.topic", topics + "-dl.dead-letters");
        c.putAll(extra);
        return c;
    }

    private static void register(String name, Map<String, String> config) throws Exception {
        String body = JSON.writeValueAsString(Map.of("name", name, "config", config));
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() -> {
            var r = HTTP.send(HttpRequest.newBuilder(rest.resolve("/connectors")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 201; // 409 while the worker's group rebalances
        });
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
            var r = HTTP.send(HttpRequest.newBuilder(rest.resolve("/connectors/" + name + "/status")).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                return false;
            }
            JsonNode status = JSON.readTree(r.body());
            for (JsonNode task : status.path("tasks")) {
                assertThat(task.path("state").asText()).as(task.path("trace").asText()).isNotEqualTo("FAILED");
            }
            return "RUNNING".equals(status.path("connector").path("state").asText()) && status.path("tasks").size() == 1
                    && "RUNNING".equals(status.path("tasks").get(0).path("state").asText());
        });
        Thread.sleep(1_000); // the task's first poll opens the replication stream
    }

    private static void delete(String name) throws Exception {
        HTTP.send(HttpRequest.newBuilder(rest.resolve("/connectors/" + name)).DELETE().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String topicRegex, boolean readCommitted) {
        var p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, TestServers.kafka().bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "300");
        var consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(java.util.regex.Pattern.compile(topicRegex));
        return consumer;
    }

    private static List<ConsumerRecord<byte[], byte[]>> readUntil(KafkaConsumer<byte[], byte[]> consumer, int count, Duration timeout) {
        var out = new ArrayList<ConsumerRecord<byte[], byte[]>>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (out.size() < count && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        long quiet = System.nanoTime() + Duration.ofSeconds(2).toNanos(); // and nothing more after
        while (System.nanoTime() < quiet) {
            consumer.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        return out;
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    private static String payload(String aggregate, int seq) {
        return "{\"seq\": " + seq + ", \"note\": \"caf\u00e9 \\\"quoted\\\" \u2713\", \"aggregate\": \"" + aggregate + "\"}";
    }

    /** An event of {@code aggregate}, numbered in its commit order through a row lock held until commit. */
    private static UUID insert(Connection c, String type, String aggregate, String trace) throws SQLException {
        int seq;
        try (var ps = c.prepareStatement("INSERT INTO seq (aggregateid, n) VALUES (?, 1) ON CONFLICT (aggregateid) DO UPDATE "
                + "SET n = seq.n + 1 RETURNING n")) {
            ps.setString(1, aggregate);
            try (var rs = ps.executeQuery()) {
                rs.next();
                seq = rs.getInt(1);
            }
        }
        var id = UUID.randomUUID();
        try (var ps = c.prepareStatement("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, tracingspancontext) "
                + "VALUES (?::uuid, ?, ?, ?, ?::jsonb, ?)")) {
            ps.setString(1, id.toString());
            ps.setString(2, type);
            ps.setString(3, aggregate);
            ps.setString(4, type + "Changed");
            ps.setString(5, payload(aggregate, seq));
            ps.setString(6, trace);
            ps.executeUpdate();
        }
        return id;
    }

    /**
     * Debezium's EventRouter and ours on one worker, each on a connector of its own over the same outbox, with the same
     * options and the converters a Debezium deployment runs (JSON with schemas, the payload expanded): every event
     * reaches both topics with the same key, value and header bytes and the same partition.
     */
    @Test
    void theDropInGivesTheSameBytesAsDebeziumsEventRouterOnARealWorker() throws Exception {
        var db = database("dropin");
        String id = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFL);
        var options = new LinkedHashMap<String, String>();
        options.put("key.converter", "org.apache.kafka.connect.json.JsonConverter");
        options.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        options.put("transforms.outbox.table.fields.additional.placement", "type:header:eventType,tracingspancontext:header");
        options.put("transforms.outbox.table.expand.json.payload", "true");
        options.put("extended.headers.enabled", "false"); // the connector's own context headers name each connector
        options.put("topic.creation.default.partitions", "3");
        options.put("topic.creation.default.replication.factor", "1");
        var names = Map.of("theirs", "io.debezium.transforms.outbox.EventRouter", "ours", EventRouter.class.getName());
        for (var e : names.entrySet()) {
            String name = "dropin-" + e.getKey() + "-" + id;
            var config = connector(db, name, name, options);
            config.keySet().removeIf(k -> k.startsWith("transforms.outbox.") && !options.containsKey(k));
            config.put("transforms.outbox.type", e.getValue());
            config.put("transforms.outbox.route.topic.replacement", name + ".${routedByValue}");
            register(name, config);
        }
        var ids = new ArrayList<UUID>();
        try (var c = db.connect()) {
            for (int i = 0; i < 12; i++) {
                ids.add(insert(c, i % 2 == 0 ? "Order" : "Customer", "a-" + (i % 5), i % 3 == 0 ? null : "00-trace-" + i));
                c.commit();
            }
        }
        var byTransform = new HashMap<String, Map<String, String>>();
        for (String side : names.keySet()) {
            try (var consumer = consumer("dropin-" + side + "-" + id + "\\..*", false)) {
                var seen = new HashMap<String, String>();
                for (var r : readUntil(consumer, ids.size(), Duration.ofSeconds(60))) {
                    var headers = new StringBuilder();
                    r.headers().forEach(h -> headers.append(h.key()).append('=')
                            .append(h.value() == null ? "null" : new String(h.value(), StandardCharsets.UTF_8)).append(';'));
                    String eventId = header(r, "id");
                    seen.put(eventId, r.topic().substring(r.topic().indexOf('.')) + " p" + r.partition() + " key "
                            + new String(r.key(), StandardCharsets.UTF_8) + " value " + new String(r.value(), StandardCharsets.UTF_8)
                            + " headers " + headers);
                }
                byTransform.put(side, seen);
            }
        }
        for (String side : names.keySet()) {
            delete("dropin-" + side + "-" + id);
        }
        assertThat(byTransform.get("theirs")).hasSize(ids.size());
        assertThat(byTransform.get("ours")).isEqualTo(byTransform.get("theirs"));
    }

    /**
     * Eight concurrent writers over 40 aggregates, 1 to 3 events per transaction: every committed row arrives once, on its topic, keyed by its aggregate id,
     * with the payload bytes as stored and the router's headers, in commit order per aggregate; rolled-back rows, updates
     * and deletes publish nothing; a row that cannot be routed goes to the dead-letter topic with the reason.
     */
    @Test
    void theSameRecordsAsTheRouterForEightConcurrentWriters() throws Exception {
        var db = database("connect");
        String name = "connect-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFL);
        String topics = name + "-events";
        register(name, connector(db, name, topics, Map.of()));
        var written = new ConcurrentHashMap<UUID, String>();
        try (var consumer = consumer(java.util.regex.Pattern.quote(topics) + "\\..*", false);
             var deadLetters = consumer(java.util.regex.Pattern.quote(topics + "-dl") + "\\..*", false)) {
            var pool = Executors.newFixedThreadPool(8);
            var futures = new ArrayList<java.util.concurrent.Future<?>>();
            for (int w = 0; w < 8; w++) {
                int writer = w;
                futures.add(pool.submit(() -> {
                    var random = new java.util.Random(writer);
                    try (var c = db.connect()) {
                        for (int tx = 0; tx < 40; tx++) {
                            // 1 to 3 events of one aggregate per transaction (one sequence row locked: no deadlocks)
                            int rows = 1 + random.nextInt(3);
                            String type = random.nextBoolean() ? "Order" : "Invoice";
                            String aggregate = type.toLowerCase() + "-" + random.nextInt(20);
                            for (int i = 0; i < rows; i++) {
                                written.put(insert(c, type, aggregate, "00-trace-" + writer + "-01"), aggregate);
                            }
                            c.commit();
                        }
                    }
                    return null;
                }));
            }
            for (var f : futures) {
                f.get();
            }
            pool.shutdown();
            try (var c = db.connect(); var st = c.createStatement()) {
                insert(c, "Order", "rolled-back", "x");
                c.rollback();
                st.executeUpdate("UPDATE outbox SET type = 'Changed'");
                st.executeUpdate("DELETE FROM outbox WHERE aggregateid = 'order-1'");
                c.commit();
                st.executeUpdate("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES "
                        + "(gen_random_uuid(), 'Order', '', 'Bad', '{}')"); // empty, not null: routed
                st.executeUpdate("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES "
                        + "(gen_random_uuid(), 'bad topic!', 'a-1', 'Bad', '{}')"); // renders an illegal topic name
                c.commit();
            }

            var received = readUntil(consumer, written.size() + 1, Duration.ofSeconds(90));
            var byId = new HashMap<UUID, ConsumerRecord<byte[], byte[]>>();
            var lastSeq = new HashMap<String, Integer>();
            for (var r : received) {
                var id = UUID.fromString(header(r, "id"));
                assertThat(byId.put(id, r)).as("record " + id + " arrived once").isNull();
                String aggregate = new String(r.key(), StandardCharsets.UTF_8);
                if (!written.containsKey(id)) {
                    continue; // the empty aggregate id
                }
                assertThat(aggregate).isEqualTo(written.get(id));
                String type = header(r, "aggregatetype");
                assertThat(r.topic()).isEqualTo(topics + "." + type);
                String value = new String(r.value(), StandardCharsets.UTF_8);
                int seq = Integer.parseInt(value.replaceAll("^\\{\"seq\": (\\d+),.*", "$1"));
                assertThat(value).as("payload bytes as stored").isEqualTo(payload(aggregate, seq));
                assertThat(seq).as("order of " + aggregate).isEqualTo(lastSeq.merge(aggregate, 1, (a, b) -> a + 1));
                assertThat(header(r, "type")).isEqualTo(type + "Changed");
                assertThat(header(r, "source.table")).isEqualTo("public.outbox");
                assertThat(header(r, "source.position")).startsWith("lsn:");
                assertThat(header(r, "source.commit.time")).isNotBlank();
                assertThat(header(r, "traceparent")).startsWith("00-trace-");
            }
            assertThat(byId.keySet()).containsAll(written.keySet()).hasSize(written.size() + 1);

            var dead = readUntil(deadLetters, 1, Duration.ofSeconds(30));
            assertThat(dead).singleElement().satisfies(r -> {
                assertThat(header(r, "dead-letter.reason")).contains("not a legal Kafka topic name");
                assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("a-1");
                assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo("{}");
            });
        } finally {
            delete(name);
        }
    }

    /** With the connector asking for exactly-once (KIP-618): a read_committed consumer sees each event once. */
    @Test
    void exactlyOnceSourceSupportDeliversEachEventToReadCommittedConsumers() throws Exception {
        var db = database("connecteos");
        String name = "connecteos-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFL);
        String topics = name + "-events";
        register(name, connector(db, name, topics, Map.of("exactly.once.support", "required", "transaction.boundary", "poll")));
        var ids = new ArrayList<UUID>();
        try (var consumer = consumer(java.util.regex.Pattern.quote(topics) + "\\..*", true); var c = db.connect()) {
            for (int i = 0; i < 50; i++) {
                ids.add(insert(c, "Order", "order-" + (i % 5), "t"));
                c.commit();
            }
            var received = readUntil(consumer, ids.size(), Duration.ofSeconds(60));
            assertThat(received).extracting(r -> UUID.fromString(header(r, "id"))).containsExactlyInAnyOrderElementsOf(ids);
        } finally {
            delete(name);
        }
    }
}
