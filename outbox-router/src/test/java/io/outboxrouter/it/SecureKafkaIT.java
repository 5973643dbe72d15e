package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.testing.KafkaProcess;
import io.outboxrouter.testing.TestCertificates;
import io.outboxrouter.testing.TestServers;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The router and its commands against a broker with security on: SASL_SSL with SCRAM-SHA-512 users, mutual TLS, and
 * an authorizer that allows nothing no ACL allows. Each test grants its principal the rows of docs/security.md's ACL
 * list for what it runs, and nothing more; secrets come from the environment and appear in no output.
 */
class SecureKafkaIT {
    private static final String SCRAM_PASSWORD = "scram-router-secret-3141";
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @TempDir
    static Path dir;
    private static TestCertificates certs;
    private static KafkaProcess kafka;

    @BeforeAll
    static void secureBroker() {
        certs = TestCertificates.authority(dir.resolve("certs"));
        kafka = KafkaProcess.startSecure(dir.resolve("kafka"), certs);
    }

    @AfterAll
    static void stop() {
        if (kafka != null) {
            kafka.close();
        }
    }

    /** One row of docs/security.md's ACL list. */
    record DocumentedAcl(String neededBy, ResourceType type, PatternType pattern, String name, List<AclOperation> operations) {
    }

    static List<DocumentedAcl> documentedAcls() throws IOException {
        var page = Files.readString(Path.of("").toAbsolutePath().getParent().resolve("docs/security.md"));
        var table = page.substring(page.indexOf("<!-- acls"), page.indexOf("<!-- /acls -->"));
        var rows = new ArrayList<DocumentedAcl>();
        for (String line : table.lines().filter(l -> l.startsWith("| ") && !l.startsWith("| needed by")).toList()) {
            var cells = line.substring(1, line.length() - 1).split("\\|");
            var ops = new ArrayList<AclOperation>();
            for (String op : cells[4].split(",")) {
                ops.add(AclOperation.valueOf(op.strip().replaceAll("([a-z])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT)));
            }
            rows.add(new DocumentedAcl(cells[0].strip(), ResourceType.valueOf(cells[1].strip().replaceAll("([a-z])([A-Z])", "$1_$2")
                    .toUpperCase(Locale.ROOT)), PatternType.valueOf(cells[2].strip().toUpperCase(Locale.ROOT)),
                    cells[3].strip().replace("`", ""), ops));
        }
        assertThat(rows).as("the ACL list of docs/security.md").hasSizeGreaterThan(3);
        return rows;
    }

    /** Grants {@code principal} the documented rows of these features, placeholders filled in; returns what was granted. */
    private static List<AclBinding> grant(String principal, Set<String> features, String name, String topics,
                                          java.util.function.BiPredicate<DocumentedAcl, AclOperation> keep) throws Exception {
        var bindings = new ArrayList<AclBinding>();
        for (var row : documentedAcls()) {
            if (!features.contains(row.neededBy())) {
                continue;
            }
            String resource = row.name().replace("<name>", name).replace("<topics>", topics);
            for (var op : row.operations()) {
                if (keep.test(row, op)) {
                    bindings.add(new AclBinding(new ResourcePattern(row.type(), resource, row.pattern()),
                            new AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)));
                }
            }
        }
        try (var admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            admin.createAcls(bindings).all().get(30, TimeUnit.SECONDS);
        }
        return bindings;
    }

    private static String scramUser(String name) {
        String user = "router-" + name;
        kafka.addScramUser(user, SCRAM_PASSWORD);
        return user;
    }

    /** The secrets a router's process gets from its environment, as docs/security.md shows. */
    private static Map<String, String> env(String user) {
        return Map.of("KAFKA_JAAS_CONFIG", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
                        + "\" password=\"" + SCRAM_PASSWORD + "\";",
                "KAFKA_TRUSTSTORE_PASSWORD", TestCertificates.PASSWORD,
                "KAFKA_KEYSTORE_PASSWORD", TestCertificates.PASSWORD);
    }

    private static String scram() {
        return """
                kafka:
                  bootstrap-servers: %s
                  producer:
                    security.protocol: SASL_SSL
                    sasl.mechanism: SCRAM-SHA-512
                    sasl.jaas.config: ${KAFKA_JAAS_CONFIG}
                    ssl.truststore.type: PKCS12
                    ssl.truststore.location: %s
                    ssl.truststore.password: ${KAFKA_TRUSTSTORE_PASSWORD}
                """.formatted(kafka.saslSslServers(), certs.truststore());
    }

    /** Mutual TLS, the keystore's password read by Kafka's own config provider from a mounted secret (a file per key). */
    private static String mutualTls(TestCertificates.Issued client) throws IOException {
        var secrets = Files.createDirectories(dir.resolve("secrets-" + System.nanoTime()));
        Files.writeString(secrets.resolve("keystore-password"), TestCertificates.PASSWORD);
        return """
                kafka:
                  bootstrap-servers: %s
                  producer:
                    config.providers: dir
                    config.providers.dir.class: org.apache.kafka.common.config.provider.DirectoryConfigProvider
                    security.protocol: SSL
                    ssl.keystore.type: PKCS12
                    ssl.keystore.location: %s
                    ssl.keystore.password: ${dir:%s:keystore-password}
                    ssl.key.password: ${dir:%3$s:keystore-password}
                    ssl.truststore.type: PKCS12
                    ssl.truststore.location: %s
                    ssl.truststore.password: ${KAFKA_TRUSTSTORE_PASSWORD}
                """.formatted(kafka.sslServers(), client.keystore(), secrets, certs.truststore());
    }

    private Path config(String name, PostgresOutbox db, String topics, String more, String kafkaBlock, int httpPort) throws IOException {
        return config(name, db.sourceYaml(), topics, more, kafkaBlock, httpPort);
    }

    private Path config(String name, String sourceYaml, String topics, String more, String kafkaBlock, int httpPort) throws IOException {
        return Files.writeString(dir.resolve(name + ".yml"), "name: " + name + "\n" + sourceYaml + more
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n" + routingMore + kafkaBlock
                + "http:\n  listen: 127.0.0.1:" + httpPort + "\n");
    }

    /** Extra lines under {@code routing:} for the next {@link #config}. */
    private String routingMore = "";

    private static Set<UUID> write(PostgresOutbox db, String aggregate, int count) throws Exception {
        var ids = new LinkedHashSet<UUID>();
        try (var c = db.connect()) {
            for (int i = 0; i < count; i++) {
                var e = TestEvent.of("Order", aggregate + "-" + (i % 3), i);
                db.insert(c, e);
                ids.add(e.id());
                c.commit();
            }
        }
        return ids;
    }

    private static String get(int port, String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private static void assertNoSecret(String where, String text) {
        assertThat(text).as(where).doesNotContain(SCRAM_PASSWORD, TestCertificates.PASSWORD);
    }

    @Test
    void atLeastOnceOverScramWithTheDocumentedAclsOnlyAndTheCommandsBeside() throws Exception {
        String name = "scram-" + Long.toHexString(System.nanoTime() & 0xffffff);
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("scram"));
        String topics = OutboxContract.unique("scram");
        String user = scramUser(name);
        grant("User:" + user, Set.of("every router", "check"), name, topics + ".", (row, op) -> true);
        int httpPort = OutboxContract.freePort();
        // The self-audit looks every half second, so that its reads of Kafka run under the ACLs within the test.
        var config = config(name, db, topics, "outbox:\n  audit: { interval: 500ms, lag: 1s }\n", scram(), httpPort);
        var env = env(user);
        var log = dir.resolve(name + ".log");
        var outputs = new ArrayList<String>();
        try (var first = RouterProcess.start(config, httpPort, log, env).awaitReady(Duration.ofSeconds(90))) {
            var bad = TestEvent.of("Order", "dead", 1); // its topic name is invalid: a dead letter
            try (var c = db.connect()) {
                db.insert(c, new TestEvent(bad.id(), "Bad Order", bad.aggregateId(), bad.type(), bad.seq(), bad.payload()));
                c.commit();
            }
            write(db, "before", 3);
            Thread.sleep(3_000);
            assertThat(first.stop(Duration.ofSeconds(30))).isZero();
        }
        write(db, "stopped", 3); // committed while no router runs: the restart's self-audit reads back what was delivered
        try (var router = RouterProcess.start(config, httpPort, log, env).awaitReady(Duration.ofSeconds(90));
             var events = new KafkaEvents(kafka.bootstrapServers(), topics + "\\..*")) {
            var ids = write(db, "a", 12);
            events.awaitIds(ids, Duration.ofSeconds(60), router);
            Thread.sleep(3_000);
            outputs.add(get(httpPort, "/status"));
            outputs.add(get(httpPort, "/metrics"));
            outputs.add(get(httpPort, "/"));

            var check = RouterProcess.exec(env, Duration.ofSeconds(90), "check", "--config", config.toString());
            assertThat(check.exit()).as(check.out()).isZero();
            assertThat(check.out()).contains("PASS  kafka: reached", "All checks passed.");
            outputs.add(check.out());

            var audit = RouterProcess.exec(env, Duration.ofSeconds(90), "audit", "--config", config.toString(), "--until",
                    Instant.now().toString());
            assertThat(audit.exit()).as(audit.out()).isZero();
            outputs.add(audit.out());

            UUID again = ids.iterator().next();
            var replay = RouterProcess.exec(env, Duration.ofSeconds(90), "replay", "--config", config.toString(), "--id", again.toString());
            assertThat(replay.exit()).as(replay.out()).isZero();
            outputs.add(replay.out());
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
                events.poll();
                return events.all().stream().filter(r -> again.equals(r.id())).count() >= 2;
            });

            var printed = RouterProcess.exec(env, Duration.ofSeconds(60), "config", "--config", config.toString());
            assertThat(printed.exit()).as(printed.out()).isZero();
            assertThat(printed.out()).contains("sasl.jaas.config");
            outputs.add(printed.out());
            assertThat(router.stop(Duration.ofSeconds(30))).isZero();
        }

        // The slot lost while the router is stopped: offsets recover publishes the rows since through the same settings.
        try (var c = TestServers.postgres().connect(db.database()); var st = c.createStatement()) {
            st.execute("SELECT pg_drop_replication_slot('" + name.replace('-', '_') + "')");
        }
        var recover = RouterProcess.exec(env, Duration.ofSeconds(120), "offsets", "recover", "--config", config.toString());
        assertThat(recover.exit()).as(recover.out()).isZero();
        outputs.add(recover.out());

        // Two shards from one: reshard runs the earlier layout to its end through the producer, then the new layout streams.
        var sharded = Files.writeString(dir.resolve(name + "-sharded.yml"), Files.readString(config).replace(
                "  tables: [public.outbox, public.outbox_binary]\n", "  tables: [public.outbox]\n  postgres: { shards: 2 }\n"));
        var later = write(db, "reshard", 6);
        var reshard = RouterProcess.exec(env, Duration.ofSeconds(180), "reshard", "--config", sharded.toString(), "--timeout", "120s");
        assertThat(reshard.exit()).as(reshard.out()).isZero();
        outputs.add(reshard.out());
        try (var router = RouterProcess.start(sharded, httpPort, log, env).awaitReady(Duration.ofSeconds(90));
             var events = new KafkaEvents(kafka.bootstrapServers(), topics + "\\..*")) {
            var ids = write(db, "shards", 9);
            ids.addAll(later);
            events.awaitIds(ids, Duration.ofSeconds(60), router);
            assertThat(router.stop(Duration.ofSeconds(30))).isZero();
        }
        outputs.add(Files.readString(log));
        for (var out : outputs) {
            assertNoSecret("an output of the router", out);
        }
        assertThat(Files.readString(log)).as("the documented ACLs let every part of the router do its work")
                .doesNotContain("could not read", "not authorized", "Not authorized");
    }

    @Test
    void exactlyOnceWithShardsOverScramWithTheDocumentedAclsOnly() throws Exception {
        String name = "eos-" + Long.toHexString(System.nanoTime() & 0xffffff);
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("scrameos"));
        String topics = OutboxContract.unique("scrameos");
        String user = scramUser(name);
        grant("User:" + user, Set.of("every router", "exactly-once", "check"), name, topics + ".", (row, op) -> true);
        int httpPort = OutboxContract.freePort();
        // Two shards: two transactional ids under the documented prefix, two partitions of the offsets topic.
        var config = config(name, db.sourceYaml().replace("  tables: [public.outbox, public.outbox_binary]\n",
                "  tables: [public.outbox]\n  postgres: { shards: 2 }\n"), topics, "delivery: exactly-once\n", scram(), httpPort);
        var env = env(user);
        var log = dir.resolve(name + ".log");
        var check = RouterProcess.exec(env, Duration.ofSeconds(90), "check", "--config", config.toString());
        assertThat(check.exit()).as(check.out()).isZero();
        try (var router = RouterProcess.start(config, httpPort, log, env).awaitReady(Duration.ofSeconds(90));
             var events = KafkaEvents.readCommitted(kafka.bootstrapServers(), topics + "\\..*")) {
            var ids = write(db, "e", 24);
            events.awaitIds(ids, Duration.ofSeconds(60), router);
            var offsets = RouterProcess.exec(env, Duration.ofSeconds(60), "offsets", "show", "--config", config.toString());
            assertThat(offsets.exit()).as(offsets.out()).isZero();
            assertNoSecret("offsets show", offsets.out());
            assertThat(router.stop(Duration.ofSeconds(30))).isZero();
        }
        assertNoSecret("the router's log", Files.readString(log));
    }

    @Test
    void parkAggregateOverMutualTlsWithTheDocumentedAclsOnly() throws Exception {
        String name = "mtls-" + Long.toHexString(System.nanoTime() & 0xffffff);
        var client = certs.client("router-" + name);
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("mtls"));
        String topics = OutboxContract.unique("mtls");
        grant("User:router-" + name, Set.of("every router", "park-aggregate"), name, topics + ".", (row, op) -> true);
        int httpPort = OutboxContract.freePort();
        routingMore = "  dead-letters:\n    policy: park-aggregate\n";
        var config = config(name, db, topics, "", mutualTls(client), httpPort);
        var env = env("unused");
        var log = dir.resolve(name + ".log");
        try (var router = RouterProcess.start(config, httpPort, log, env).awaitReady(Duration.ofSeconds(90));
             var events = new KafkaEvents(kafka.bootstrapServers(), topics + "\\..*")) {
            var good = TestEvent.of("Order", "agg-p", 1);
            var bad = TestEvent.of("Order", "agg-p", 2);
            var held = TestEvent.of("Order", "agg-p", 3);
            try (var c = db.connect()) {
                db.insert(c, good);
                db.insert(c, new TestEvent(bad.id(), "Bad Order", bad.aggregateId(), bad.type(), bad.seq(), bad.payload()));
                db.insert(c, held);
                c.commit();
            }
            events.awaitIds(Set.of(good.id()), Duration.ofSeconds(60), router);
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
                var list = RouterProcess.exec(env, Duration.ofSeconds(60), "parked", "list", "--config", config.toString());
                return list.exit() == 0 && list.out().contains("agg-p");
            });
            try (var c = db.connect()) {
                db.execute("DELETE FROM public.outbox WHERE id = '" + bad.id() + "'");
                db.insert(c, bad);
                c.commit();
            }
            var release = RouterProcess.exec(env, Duration.ofSeconds(90), "parked", "release", "--config", config.toString(),
                    "--wait", "60s", "agg-p");
            assertThat(release.exit()).as(release.out()).isZero();
            events.awaitIds(Set.of(bad.id(), held.id()), Duration.ofSeconds(60), router);
            assertThat(router.stop(Duration.ofSeconds(30))).isZero();
        } finally {
            routingMore = "";
        }
        assertNoSecret("the router's log", Files.readString(log));
    }

    @Test
    void exactlyOnceWithoutTheTransactionalIdAclStopsNamingIt() throws Exception {
        String name = "notxn-" + Long.toHexString(System.nanoTime() & 0xffffff);
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("notxn"));
        String topics = OutboxContract.unique("notxn");
        String user = scramUser(name);
        grant("User:" + user, Set.of("every router", "exactly-once", "check"), name, topics + ".",
                (row, op) -> row.type() != ResourceType.TRANSACTIONAL_ID);
        int httpPort = OutboxContract.freePort();
        var config = config(name, db, topics, "delivery: exactly-once\n", scram(), httpPort);
        var log = dir.resolve(name + ".log");
        var check = RouterProcess.exec(env(user), Duration.ofSeconds(90), "check", "--config", config.toString());
        assertThat(check.exit()).as(check.out()).isEqualTo(1);
        assertThat(check.out()).contains("FAIL  transactional id", "grant WRITE and DESCRIBE on TransactionalId outbox-router." + name);
        try (var router = RouterProcess.start(config, httpPort, log, env(user))) {
            assertThat(router.awaitExit(Duration.ofSeconds(90))).isNotZero();
            assertThat(router.logTail()).contains("TransactionalId", "outbox-router." + name);
        }
    }

    @Test
    void aMissingAclStopsTheRouterNamingIt() throws Exception {
        String name = "noacl-" + Long.toHexString(System.nanoTime() & 0xffffff);
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("noacl"));
        String topics = OutboxContract.unique("noacl");
        String user = scramUser(name);
        // WRITE on the events' topics withheld; the dead-letter topic's is granted, so the producer itself may start.
        grant("User:" + user, Set.of("every router"), name, topics + ".", (row, op) -> !(row.name().equals("<topics>") && op == AclOperation.WRITE));
        int httpPort = OutboxContract.freePort();
        var config = config(name, db, topics, "", scram(), httpPort);
        var log = dir.resolve(name + ".log");
        try (var router = RouterProcess.start(config, httpPort, log, env(user)).awaitReady(Duration.ofSeconds(90))) {
            write(db, "n", 1);
            assertThat(router.awaitExit(Duration.ofSeconds(60))).isNotZero();
            assertThat(router.logTail()).contains("not authorized to write to [" + topics + ".Order]", "grant WRITE and DESCRIBE");
        }
    }
}
