package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.migrate.FromDebeziumServer;
import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The binlog's record shapes: a Debezium Server configuration for MariaDB (and MySQL, {@link MySqlEventRouterModeIT}) run by
 * Debezium's own pipeline and, converted by {@code config from-debezium}, by the router, on the same rows; the same bytes,
 * streamed and replayed.
 */
class MariaDbEventRouterModeIT {

    /** The server, its connector class, and a fresh database on it. */
    BinlogOutbox.Server server() {
        MariaDbServer server = TestServers.mariadb();
        return new BinlogOutbox.Server("mariadb", server.jdbcUrl(""), MariaDbServer.USER, MariaDbServer.PASSWORD);
    }

    String connector() {
        return "io.debezium.connector.mariadb.MariaDbConnector";
    }

    @Test
    void theRouterPublishesTheBytesDebeziumServerWould() throws Exception {
        var server = server();
        String database = OutboxContract.unique("erm");
        var db = new BinlogOutbox(server, database);
        var address = io.outboxrouter.config.JdbcUrl.parse(server.jdbcUrl(database)).orElseThrow();
        db.execute("ALTER TABLE outbox_binary ADD COLUMN created_at timestamp(3) NOT NULL DEFAULT current_timestamp(3)");
        String topics = OutboxContract.unique("erm").replace('_', '-');
        String name = OutboxContract.unique("erm-router").replace('_', '-');
        var properties = new Properties();
        properties.load(new java.io.StringReader("""
                debezium.sink.type=kafka
                debezium.sink.kafka.producer.bootstrap.servers=%s
                debezium.source.connector.class=%s
                debezium.source.offset.storage.file.filename=data/offsets.dat
                debezium.source.schema.history.internal=io.debezium.storage.file.history.FileSchemaHistory
                debezium.source.schema.history.internal.file.filename=data/history.dat
                debezium.source.database.hostname=%s
                debezium.source.database.port=%d
                debezium.source.database.user=%s
                debezium.source.database.password=%s
                debezium.source.database.server.id=%d
                debezium.source.topic.prefix=%s
                debezium.source.table.include.list=%s.outbox,%s.outbox_binary
                debezium.source.snapshot.mode=no_data
                debezium.transforms=outbox
                debezium.transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
                debezium.transforms.outbox.route.topic.replacement=%s.\\${routedByValue}
                debezium.transforms.outbox.table.fields.additional.placement=type:header:eventType,tracingspancontext:header,created_at:header:createdAt
                """.formatted(OutboxContract.kafka(), connector(), address.host(), address.port(), server.user(), server.password(),
                5400 + new java.util.Random().nextInt(1000), name, database, database, topics)));

        var converted = FromDebeziumServer.convert(properties);
        assertThat(converted.dropped()).noneMatch(FromDebeziumServer.Dropped::refused);
        var config = RouterConfigLoader.parse(converted.yaml() + "http: { enabled: false }\n", Map.of());

        // Debezium's pipeline streams first, from the binlog's end, under another prefix (its metrics are named by it) and
        // another server id; a warm-up row says when it reads.
        try (var pipeline = DebeziumServerPipeline.start(properties, Map.of("topic.prefix", name + "-dbz",
                "database.server.id", Integer.toString(6500 + new java.util.Random().nextInt(1000)),
                "schema.history.internal", "io.debezium.relational.history.MemorySchemaHistory"))) {
            var warmUps = new ArrayList<String>();
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (warmUps.stream().noneMatch(pipeline::saw) && System.nanoTime() < deadline) {
                try (var c = db.connect()) {
                    warmUps.add(insert(c, database + ".outbox", "Warm", "w-1", "WarmUp", "{}").toString());
                    c.commit();
                }
                Thread.sleep(500);
            }
            assertThat(warmUps.stream().anyMatch(pipeline::saw)).as("Debezium's pipeline streams").isTrue();

            var written = new ArrayList<UUID>();
            Map<String, DebeziumServerPipeline.Wire> routerRecords;
            try (var router = Router.start(config); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                for (int i = 0; i < 3; i++) {
                    written.add(insert(c, database + ".outbox", "Order", "o-" + i, "OrderCreated", "{\"n\": " + i + ", \"tags\": [\"a\"]}"));
                }
                written.add(insert(c, database + ".outbox", "Order", "o-1", "OrderDeleted", null));
                written.add(insert(c, database + ".outbox_binary", "Blob", "b-1", "BlobStored", "\u0001\u0002binary"));
                c.commit();
                routerRecords = DebeziumServerPipeline.readBack(topics, written.size(), Duration.ofSeconds(60));
            }
            var debezium = pipeline.await(written.size() + (int) warmUps.stream().filter(pipeline::saw).count());
            debezium.keySet().removeAll(warmUps);
            DebeziumServerPipeline.assertSameBytes(routerRecords, debezium, written.size());
            var replayed = DebeziumServerPipeline.replayed(config);
            replayed.keySet().removeAll(warmUps);
            assertThat(replayed).isEqualTo(debezium);
        }
    }

    private static UUID insert(Connection c, String table, String aggregateType, String aggregateId, String type, String payload)
            throws SQLException {
        var id = UUID.randomUUID();
        try (var ps = c.prepareStatement("INSERT INTO " + table + " (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, ?, ?)")) {
            ps.setString(1, id.toString());
            ps.setString(2, aggregateType);
            ps.setString(3, aggregateId);
            ps.setString(4, type);
            if (table.endsWith("binary")) {
                ps.setBytes(5, payload.getBytes(StandardCharsets.UTF_8));
            } else {
                ps.setString(5, payload);
            }
            ps.executeUpdate();
        }
        return id;
    }
}
