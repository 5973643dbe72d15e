package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.migrate.FromDebeziumServer;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A Debezium Server configuration (Postgres, the outbox EventRouter, the Kafka sink) run two ways on the same rows: by
 * Debezium's own pipeline (its Postgres connector in its embedded engine, Debezium's EventRouter as the transformation,
 * Debezium's serialisation formats, as Debezium Server runs them), and by the router from what {@code config
 * from-debezium} makes of it. Topic, key, value and headers must be the same bytes, streamed and replayed.
 */
class PostgresEventRouterModeIT {
    /** The parts every case shares; %s: bootstrap servers, port, user, password, database, topic prefix, slot, topics. */
    private static final String COMMON = """
            debezium.sink.type=kafka
            debezium.sink.kafka.producer.bootstrap.servers=%s
            debezium.sink.kafka.producer.key.serializer=org.apache.kafka.common.serialization.StringSerializer
            debezium.sink.kafka.producer.value.serializer=org.apache.kafka.common.serialization.StringSerializer
            debezium.source.connector.class=io.debezium.connector.postgresql.PostgresConnector
            debezium.source.offset.storage.file.filename=data/offsets.dat
            debezium.source.offset.flush.interval.ms=0
            debezium.source.database.hostname=127.0.0.1
            debezium.source.database.port=%s
            debezium.source.database.user=%s
            debezium.source.database.password=%s
            debezium.source.database.dbname=%s
            debezium.source.topic.prefix=%s
            debezium.source.plugin.name=pgoutput
            debezium.source.slot.name=%s
            debezium.source.publication.name=%s
            debezium.source.table.include.list=public.outbox,public.outbox_binary
            debezium.source.snapshot.mode=no_data
            debezium.transforms=outbox
            debezium.transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
            debezium.transforms.outbox.route.topic.replacement=%s.\\${routedByValue}
            """;

    static List<Arguments> cases() {
        return List.of(
                Arguments.of("json with schemas, header and envelope placements", """
                        debezium.transforms.outbox.table.fields.additional.placement=type:header:eventType,created_at:envelope:createdAt,tracingspancontext:header
                        """),
                Arguments.of("expanded payload, schemaless json, simplestring keys, routed by type", """
                        debezium.transforms.outbox.table.expand.json.payload=true
                        debezium.transforms.outbox.route.by.field=type
                        debezium.transforms.outbox.table.fields.additional.placement=aggregatetype:header
                        debezium.transforms.outbox.route.tombstone.on.empty.payload=true
                        debezium.format.key=simplestring
                        debezium.format.value=json
                        debezium.format.value.schemas.enable=false
                        debezium.format.header.schemas.enable=false
                        """));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theRouterPublishesTheBytesDebeziumServerWould(String label, String options) throws Exception {
        PostgresServer server = TestServers.postgres();
        var db = new PostgresOutbox(server, OutboxContract.unique("erm"));
        String topics = OutboxContract.unique("erm").replace('_', '-');
        String name = OutboxContract.unique("erm-router").replace('_', '-');
        String slot = OutboxContract.unique("dbz_erm");
        db.execute("ALTER TABLE public.outbox_binary ADD COLUMN created_at timestamptz(3) NOT NULL DEFAULT now()");
        db.execute("ALTER TABLE public.outbox ALTER COLUMN id SET DEFAULT gen_random_uuid()"); // a default in the id header's schema
        db.execute("CREATE PUBLICATION " + slot + " FOR TABLE public.outbox, public.outbox_binary");
        db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
        var properties = new Properties();
        properties.load(new java.io.StringReader(COMMON.formatted(OutboxContract.kafka(), server.port(), PostgresServer.USER,
                PostgresServer.PASSWORD, db.database(), name, slot, slot, topics) + options));

        var converted = FromDebeziumServer.convert(properties);
        assertThat(converted.dropped()).noneMatch(FromDebeziumServer.Dropped::refused);
        // The same publication, a slot of its own: Debezium's pipeline reads the other at the same time.
        var config = RouterConfigLoader.parse(converted.yaml() + "http: { enabled: false }\n",
                Map.of("OUTBOX_ROUTER_SOURCE_POSTGRES_SLOT", slot + "_router"));

        var written = new ArrayList<UUID>();
        Map<String, DebeziumServerPipeline.Wire> routerRecords;
        try (var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            for (int i = 0; i < 3; i++) {
                written.add(insert(c, "public.outbox", "Order", "o-" + i, "OrderCreated", "{\"n\": " + i + ", \"tags\": [\"a\"]}"));
            }
            written.add(insert(c, "public.outbox", "Order", "o-1", "OrderDeleted", null));
            written.add(insert(c, "public.outbox_binary", "Blob", "b-1", "BlobStored", "\u0001\u0002binary"));
            c.commit();
            db.execute("UPDATE public.outbox SET aggregateid = aggregateid WHERE aggregateid = 'o-2'"); // dropped by both
            routerRecords = DebeziumServerPipeline.readBack(topics, written.size(), Duration.ofSeconds(60));
        }
        // After the router stopped: the connector's metrics carry the topic prefix, one registration per name in a JVM.
        Map<String, DebeziumServerPipeline.Wire> debezium;
        try (var pipeline = DebeziumServerPipeline.start(properties, Map.of("publication.autocreate.mode", "disabled"))) {
            debezium = pipeline.await(written.size());
        }
        DebeziumServerPipeline.assertSameBytes(routerRecords, debezium, written.size());
        // A replay of the same rows: the records it would publish carry the same bytes (and its two markers).
        assertThat(DebeziumServerPipeline.replayed(config)).isEqualTo(debezium);
        db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
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

}
