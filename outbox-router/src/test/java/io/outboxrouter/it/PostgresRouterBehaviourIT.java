package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Router behaviour beyond the contract: dead letters, the fail policy, setup errors, and a latency probe. */
class PostgresRouterBehaviourIT {
    @TempDir
    Path dir;

    private static String unique(String prefix) {
        return OutboxContract.unique(prefix);
    }

    private String yaml(PostgresOutbox db, String name, String topics, String extra, int port) {
        return "name: " + name + "\n" + db.sourceYaml() + """
                routing:
                  topic: "%s.${aggregatetype}"
                  dead-letters: { topic: %s.dead-letters%s }
                kafka:
                  bootstrap-servers: %s
                http:
                  enabled: %s
                  listen: 127.0.0.1:%d
                """.formatted(topics, topics, extra, OutboxContract.kafka(), port > 0, Math.max(port, 0));
    }

    @Test
    void aRowThatCannotBeRoutedGoesToTheDeadLetterTopicAndTheStreamGoesOn() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("dlq"));
        db.execute("ALTER TABLE public.outbox ALTER COLUMN aggregateid DROP NOT NULL");
        String topics = unique("dlq");
        var config = RouterConfigLoader.parse(yaml(db, unique("dlq-router").replace('_', '-'), topics, "", 0), Map.of());
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var before = TestEvent.of("Order", "o-1", 1);
            var bad = new TestEvent(UUID.randomUUID(), "Order", null, "OrderBroken", 2, "{\"broken\": true}");
            var badTopic = new TestEvent(UUID.randomUUID(), "Order Line", "o-9", "OrderBroken", 1, "{\"n\": 1}");
            var after = TestEvent.of("Order", "o-1", 2);
            db.insertMultiRow(c, List.of(before, bad, badTopic, after));
            c.commit();

            kafka.awaitIds(Set.of(before.id(), bad.id(), badTopic.id(), after.id()), Duration.ofSeconds(60));
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).extracting(KafkaEvents.Received::topic).containsExactlyInAnyOrder(
                    topics + ".Order", topics + ".Order", topics + ".dead-letters", topics + ".dead-letters");
            var dead = received.stream().filter(r -> r.topic().endsWith("dead-letters")).toList();
            var nullAggregate = dead.stream().filter(r -> r.id().equals(bad.id())).findFirst().orElseThrow();
            assertThat(nullAggregate.header("dead-letter.reason")).isEqualTo("aggregate id (column aggregateid) is null");
            assertThat(nullAggregate.key()).isNull();
            assertThat(nullAggregate.valueText()).isEqualTo(bad.payload());
            assertThat(nullAggregate.header("source.position")).startsWith("lsn:");
            var illegal = dead.stream().filter(r -> r.id().equals(badTopic.id())).findFirst().orElseThrow();
            assertThat(illegal.header("dead-letter.reason")).contains("\"" + topics + ".Order Line\", which is not a legal Kafka topic name");
            assertThat(illegal.key()).isEqualTo("o-9");
            assertThat(router.counters().deadLettered.get()).isEqualTo(2);
            assertThat(router.counters().published.get()).isEqualTo(2);
        }
    }

    @Test
    void theFailPolicyStopsTheRouterWithOneClearLineAndTheRowIsReadAgain() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("fail"));
        db.execute("ALTER TABLE public.outbox ALTER COLUMN aggregateid DROP NOT NULL");
        String topics = unique("fail");
        int port = OutboxContract.freePort();
        var config = Files.writeString(dir.resolve("router.yml"),
                yaml(db, unique("fail-router").replace('_', '-'), topics, ", policy: fail", port));
        var log = dir.resolve("router.log");
        var bad = new TestEvent(UUID.randomUUID(), "Order", null, "OrderBroken", 1, "{\"broken\": true}");
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            try (var router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(90))) {
                db.insert(c, bad);
                c.commit();
                assertThat(router.awaitExit(Duration.ofSeconds(60))).isEqualTo(1);
            }
            String output = Files.readString(log);
            assertThat(output).contains("outbox-router: stopped on an error: row at lsn:")
                    .contains("aggregate id (column aggregateid) is null (routing.dead-letters.policy=fail");
            assertThat(output.lines().filter(l -> l.startsWith("outbox-router:")).count()).isEqualTo(1);

            // The operator fixes the row; the next start reads the same transaction again and goes on.
            try (var st = c.createStatement()) {
                st.executeUpdate("UPDATE public.outbox SET aggregateid = 'o-1'");
                c.commit();
            }
            var next = TestEvent.of("Order", "o-2", 1);
            db.insert(c, next);
            c.commit();
            try (var router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(90))) {
                assertThat(router.awaitExit(Duration.ofSeconds(60))).as("the change record still has the null id").isEqualTo(1);
            }
            assertThat(kafka.settle(Duration.ofMillis(500))).as("nothing published past the failed row").isEmpty();
        }
    }

    @Test
    void aMissingOutboxTableFailsAtStartWithTheFix() throws Exception {
        var server = TestServers.postgres();
        String database = server.createDatabase(unique("empty"));
        var config = Files.writeString(dir.resolve("router.yml"), """
                name: %s
                source: { url: "%s", user: %s, password: %s }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(unique("empty-router").replace('_', '-'), server.jdbcUrl(database), PostgresServer.USER,
                PostgresServer.PASSWORD, OutboxContract.kafka()));
        var log = dir.resolve("router.log");
        try (var router = RouterProcess.start(config, 0, log)) {
            assertThat(router.awaitExit(Duration.ofSeconds(60))).isEqualTo(1);
        }
        assertThat(Files.readString(log)).contains("outbox-router: outbox table(s) public.outbox do not exist in the source database")
                .doesNotContain(PostgresServer.PASSWORD + "\"");
    }

    /**
     * The README's least-privilege role (REPLICATION LOGIN, SELECT on the outbox, CREATE on the schema for the offsets
     * table; the publication made by the owner) is enough, and its password appears in no log line.
     */
    @Test
    void aLeastPrivilegeRoleIsEnoughAndItsPasswordIsNeverLogged() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("privs"));
        String password = "Pa55-" + UUID.randomUUID();
        String role = unique("router_role");
        db.execute("CREATE ROLE " + role + " WITH LOGIN REPLICATION PASSWORD '" + password + "'");
        db.execute("GRANT SELECT ON public.outbox, public.outbox_binary TO " + role);
        db.execute("GRANT CREATE ON SCHEMA public TO " + role);
        String name = unique("privs-router").replace('_', '-');
        db.execute("CREATE PUBLICATION " + name.replace('-', '_') + " FOR TABLE public.outbox, public.outbox_binary");
        String topics = unique("privs");
        int port = OutboxContract.freePort();
        var yaml = yaml(db, name, topics, "", port)
                .replace("user: " + PostgresServer.USER, "user: " + role)
                .replace("password: " + PostgresServer.PASSWORD, "password: ${ROUTER_TEST_PASSWORD}");
        var config = Files.writeString(dir.resolve("router.yml"), yaml);
        var log = dir.resolve("router.log");
        var event = TestEvent.of("Order", "o-1", 1);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            try (var router = RouterProcess.start(config, port, log, Map.of("ROUTER_TEST_PASSWORD", password))
                    .awaitReady(Duration.ofSeconds(90))) {
                db.insert(c, event);
                c.commit();
                kafka.awaitIds(Set.of(event.id()), Duration.ofSeconds(60));
                assertThat(router.stop(Duration.ofSeconds(60))).isZero();
            }
        }
        assertThat(Files.readString(log)).contains("Using existing publication", "Router " + name + " stopped").doesNotContain(password);
    }

    /** Not a timed assertion: prints commit-to-consumer latency of single-row transactions, for the record. */
    @Test
    void latencyProbeForSingleInserts() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("latency"));
        String topics = unique("latency");
        var config = RouterConfigLoader.parse(yaml(db, unique("latency-router").replace('_', '-'), topics, "", 0), Map.of());
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            // Warm up: topic creation and the first metadata fetch are not what we measure.
            var warm = TestEvent.of("Order", "warm", 1);
            db.insert(c, warm);
            c.commit();
            kafka.awaitIds(Set.of(warm.id()), Duration.ofSeconds(60));

            var latencies = new ArrayList<Long>();
            for (int i = 0; i < 300; i++) {
                var e = TestEvent.of("Order", "o-" + i, 1);
                db.insert(c, e);
                c.commit();
                long committed = System.nanoTime();
                kafka.awaitIds(Set.of(e.id()), Duration.ofSeconds(30));
                latencies.add((System.nanoTime() - committed) / 1_000);
                Thread.sleep(5);
            }
            long[] us = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
            System.out.printf("latency probe (Postgres, single-row transactions, %d events, commit -> consumer): "
                            + "p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms%n", us.length,
                    us[us.length / 2] / 1000.0, us[us.length * 9 / 10] / 1000.0, us[us.length * 99 / 100] / 1000.0,
                    us[us.length - 1] / 1000.0);
            var split = kafka.all().stream().skip(1).map(r -> {
                long commit = java.time.Instant.parse(r.header("source.commit.time")).toEpochMilli();
                return new long[] {r.timestamp() - commit, r.receivedAtMillis() - r.timestamp()};
            }).toList();
            long[] toSend = split.stream().mapToLong(a -> a[0]).sorted().toArray();
            long[] toConsumer = split.stream().mapToLong(a -> a[1]).sorted().toArray();
            System.out.printf("latency probe split: commit -> producer send p50 %d ms p99 %d ms; send -> consumer p50 %d ms p99 %d ms%n",
                    toSend[toSend.length / 2], toSend[toSend.length * 99 / 100], toConsumer[toConsumer.length / 2],
                    toConsumer[toConsumer.length * 99 / 100]);
            assertThat(new HashSet<>(kafka.receivedIds())).hasSize(301);
            assertThat(Arrays.stream(us).max().orElseThrow()).isPositive();
        }
    }
}
