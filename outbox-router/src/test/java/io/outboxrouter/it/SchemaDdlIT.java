package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.schema.SchemaDdl;
import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.TestServers;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The DDL that `schema` prints runs on real servers, and a router streams from what it creates. */
class SchemaDdlIT {

    private static void run(Connection c, String sql) throws SQLException {
        try (var st = c.createStatement()) {
            for (String statement : sql.split(";\n")) {
                String code = statement.lines().filter(l -> !l.trim().startsWith("--")).reduce("", (a, b) -> a + "\n" + b).trim();
                if (!code.isEmpty()) {
                    st.execute(code);
                }
            }
        }
    }

    @Test
    void thePostgresDdlCreatesEverythingTheRouterNeedsWithALeastPrivilegeRole() throws Exception {
        streamsThroughThePrintedDdl(", postgres: { heartbeat-interval: 2s }");
    }

    @Test
    void theShardedPostgresDdlCreatesPublicationsTheRouterAcceptsAsTheyAre() throws Exception {
        streamsThroughThePrintedDdl(", postgres: { shards: 3, heartbeat-interval: 2s }");
    }

    private void streamsThroughThePrintedDdl(String postgres) throws Exception {
        var server = TestServers.postgres();
        String database = server.createDatabase(OutboxContract.unique("ddl"));
        String role = OutboxContract.unique("ddl_role");
        String password = "pw-" + UUID.randomUUID();
        String topics = OutboxContract.unique("ddl");
        String yaml = """
                name: %s
                source: { url: "%s", user: %s, password: "%s", tables: [public.outbox, public.audit_outbox]%s }
                outbox: { headers: { traceparent: traceparent } }
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(OutboxContract.unique("ddl-router").replace('_', '-'), server.jdbcUrl(database), role, password,
                postgres, topics, OutboxContract.kafka());
        var config = RouterConfigLoader.parse(yaml, Map.of());
        try (var c = server.connect(database)) {
            run(c, SchemaDdl.of(config).all().replace("'change-me'", "'" + password + "'"));
        }
        var id = UUID.randomUUID();
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = server.connect(database)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            try (var st = c.createStatement()) {
                st.execute("INSERT INTO public.audit_outbox (id, aggregatetype, aggregateid, type, payload, traceparent) VALUES ('"
                        + id + "', 'Audit', 'a-1', 'Logged', '{\"ok\": true}', '00-abc-01')");
            }
            kafka.awaitIds(Set.of(id), Duration.ofSeconds(60));
            assertThat(kafka.all().get(0).header("traceparent")).isEqualTo("00-abc-01");
            // The router streams as the role the DDL made, not as a superuser: every slot of this router is held by it.
            try (var ps = c.prepareStatement("SELECT a.usename FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = "
                    + "s.active_pid WHERE s.slot_name LIKE ?")) {
                ps.setString(1, config.source().postgres().slot() + "%");
                var users = new java.util.ArrayList<String>();
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        users.add(rs.getString(1));
                    }
                }
                assertThat(users).as("the users of the router's replication connections").isNotEmpty().containsOnly(role);
            }
            if (config.source().postgres().heartbeat()) {
                // The role's grants let every shard's heartbeat run (deleting its row needs SELECT too): each beat is recent.
                int shards = config.source().postgres().shards();
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> {
                    try (var st = c.createStatement(); var rs = st.executeQuery("SELECT count(*) FROM public.outbox_router_heartbeat "
                            + "WHERE beat_at > now() - interval '3 seconds'")) {
                        rs.next();
                        return rs.getInt(1) == shards;
                    }
                });
                if (shards == 1) {
                    // The connector beats four times a second; the row is written only once it is 2 s old.
                    var seen = new java.util.HashSet<String>();
                    for (int i = 0; i < 13; i++) {
                        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT beat_at::text FROM public.outbox_router_heartbeat")) {
                            rs.next();
                            seen.add(rs.getString(1));
                        }
                        Thread.sleep(250);
                    }
                    assertThat(seen).as("beats written in 3 s").hasSizeBetween(1, 3);
                }
            }
        }
    }

    @Test
    void theMariaDbTablesStreamAsCreated() throws Exception {
        MariaDbServer server = TestServers.mariadb();
        String database = server.createDatabase(OutboxContract.unique("ddl"));
        String topics = OutboxContract.unique("ddl");
        String yaml = """
                name: %s
                source: { kind: mariadb, url: "%s", user: %s, password: "%s", tables: [%s.outbox] }
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(OutboxContract.unique("ddl-router").replace('_', '-'), server.jdbcUrl(database), MariaDbServer.USER,
                MariaDbServer.PASSWORD, database, topics, OutboxContract.kafka());
        var config = RouterConfigLoader.parse(yaml, Map.of());
        try (var c = DriverManager.getConnection(server.jdbcUrl(database), MariaDbServer.USER, MariaDbServer.PASSWORD)) {
            run(c, SchemaDdl.of(config).tablesSql()); // roles: the embedded MariaDB runs without grant tables
        }
        var id = UUID.randomUUID();
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = DriverManager.getConnection(server.jdbcUrl(database), MariaDbServer.USER, MariaDbServer.PASSWORD)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            try (var st = c.createStatement()) {
                st.execute("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('" + id
                        + "', 'Order', 'o-1', 'Placed', '{\"ok\": true}')");
            }
            kafka.awaitIds(Set.of(id), Duration.ofSeconds(60));
            assertThat(kafka.all().get(0).valueText()).isEqualTo("{\"ok\": true}");
        }
    }

    @Test
    @org.junit.jupiter.api.condition.EnabledIf("io.outboxrouter.it.MySqlOutboxIT#enabled")
    void theMySqlTablesStreamAsCreatedAndTheRouterRunsWithTheGrantsPrinted() throws Exception {
        var server = MySqlOutboxIT.server();
        String database = OutboxContract.unique("ddl");
        try (var c = DriverManager.getConnection(server.jdbcUrl(""), server.user(), server.password()); var st = c.createStatement()) {
            st.execute("CREATE DATABASE " + database);
        }
        String topics = OutboxContract.unique("ddl");
        String role = OutboxContract.unique("ddlrole");
        String yaml = """
                name: %s
                source: { kind: mysql, url: "%s", user: %s, password: "%s", tables: [%s.outbox] }
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(OutboxContract.unique("ddl-router").replace('_', '-'), server.jdbcUrl(database), role,
                "ddl-secret", database, topics, OutboxContract.kafka());
        var config = RouterConfigLoader.parse(yaml, Map.of());
        try (var c = DriverManager.getConnection(server.jdbcUrl(database), server.user(), server.password())) {
            run(c, SchemaDdl.of(config).tablesSql());
            run(c, SchemaDdl.of(config).roleSql().replace("'change-me'", "'ddl-secret'"));
        }
        var id = UUID.randomUUID();
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = DriverManager.getConnection(server.jdbcUrl(database), server.user(), server.password())) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            try (var st = c.createStatement()) {
                st.execute("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('" + id
                        + "', 'Order', 'o-1', 'Placed', '{\"ok\": true}')");
            }
            kafka.awaitIds(Set.of(id), Duration.ofSeconds(60));
            assertThat(kafka.all().get(0).header("aggregatetype")).isEqualTo("Order");
        }
    }
}
