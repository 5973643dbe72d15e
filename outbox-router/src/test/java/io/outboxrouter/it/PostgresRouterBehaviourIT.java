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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Router behaviour beyond the contract: dead letters, the fail policy, setup errors, least privilege. */
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

    private static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newHttpClient();

    /** The body of a GET on the router's HTTP port. */
    static String httpGet(int port, String path) {
        try {
            return HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + path)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aSecondRouterWithTheSameNameStandsByAndTakesOverWhenTheFirstStops() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("standby"));
        String topics = unique("standby");
        String name = unique("standby-router").replace('_', '-');
        var file = Files.writeString(dir.resolve("standby.yml"), yaml(db, name, topics, "", 0));
        var config = RouterConfigLoader.load(file, Map.of());
        int port;
        try (var socket = new java.net.ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        var secondConfig = RouterConfigLoader.parse(yaml(db, name, topics, "", port), Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            var first = Router.start(config);
            try (var second = Router.start(secondConfig)) {
                assertThat(first.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                assertThat(second.isActive()).as("the second process stands by").isFalse();
                assertThat(second.awaitStreaming(Duration.ofSeconds(2))).isFalse();
                // A standby is not ready, but counts as such for a rolling update that asks with ?standby=true.
                assertThat(httpGet(port, "/health/ready")).contains("\"DOWN\"");
                assertThat(httpGet(port, "/health/ready?standby=true")).contains("\"UP\"");
                assertThat(new picocli.CommandLine(new io.outboxrouter.cli.Main())
                        .execute("offsets", "reset", "--config", file.toString(), "--yes")).as("refused while it runs").isEqualTo(1);

                var e1 = TestEvent.of("Order", "o-1", 1);
                db.insert(c, e1);
                c.commit();
                kafka.awaitIds(Set.of(e1.id()), Duration.ofSeconds(60));

                first.close();
                var e2 = TestEvent.of("Order", "o-1", 2);
                db.insert(c, e2); // committed while no process streams: the standby publishes it
                c.commit();
                assertThat(second.awaitStreaming(Duration.ofSeconds(60))).as("the standby took over").isTrue();
                kafka.awaitIds(Set.of(e2.id()), Duration.ofSeconds(60));
                assertThat(httpGet(port, "/health/ready")).contains("\"UP\"");
                assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).containsExactly(e1.id(), e2.id());
            } finally {
                first.close();
            }
        }
    }

    @Test
    void aRowThatCannotBeRoutedGoesToTheDeadLetterTopicAndTheStreamGoesOn() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("dlq"));
        db.execute("ALTER TABLE public.outbox ALTER COLUMN aggregateid DROP NOT NULL");
        db.execute("ALTER TABLE public.outbox ALTER COLUMN payload TYPE text");
        String topics = unique("dlq");
        var config = RouterConfigLoader.parse(yaml(db, unique("dlq-router").replace('_', '-'), topics, "", 0)
                + "outbox: { payload-format: json }\n", Map.of());
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var before = TestEvent.of("Order", "o-1", 1);
            var bad = new TestEvent(UUID.randomUUID(), "Order", null, "OrderBroken", 2, "{\"broken\": true}");
            var badTopic = new TestEvent(UUID.randomUUID(), "Order Line", "o-9", "OrderBroken", 1, "{\"n\": 1}");
            var notJson = new TestEvent(UUID.randomUUID(), "Order", "o-2", "OrderPaid", 1, "{\"amount\": 12,");
            var after = TestEvent.of("Order", "o-1", 2);
            db.insertMultiRow(c, List.of(before, bad, badTopic, after));
            try (var ps = c.prepareStatement("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, ?, ?, ?, ?)")) {
                ps.setString(1, notJson.id().toString());
                ps.setString(2, notJson.aggregateType());
                ps.setString(3, notJson.aggregateId());
                ps.setString(4, notJson.type());
                ps.setString(5, notJson.payload());
                ps.executeUpdate();
            }
            c.commit();

            kafka.awaitIds(Set.of(before.id(), bad.id(), badTopic.id(), notJson.id(), after.id()), Duration.ofSeconds(60));
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).extracting(KafkaEvents.Received::topic).containsExactlyInAnyOrder(
                    topics + ".Order", topics + ".Order", topics + ".dead-letters", topics + ".dead-letters", topics + ".dead-letters");
            var invalidJson = received.stream().filter(r -> r.id().equals(notJson.id())).findFirst().orElseThrow();
            assertThat(invalidJson.topic()).endsWith(".dead-letters");
            assertThat(invalidJson.header("dead-letter.reason")).startsWith("payload (column payload) is not valid JSON (outbox.payload-format: json)");
            assertThat(invalidJson.valueText()).as("the original bytes").isEqualTo(notJson.payload());
            assertThat(invalidJson.key()).isEqualTo("o-2");
            var dead = received.stream().filter(r -> r.topic().endsWith("dead-letters")).toList();
            var nullAggregate = dead.stream().filter(r -> r.id().equals(bad.id())).findFirst().orElseThrow();
            assertThat(nullAggregate.header("dead-letter.reason")).isEqualTo("aggregate id (column aggregateid) is null");
            assertThat(nullAggregate.key()).isNull();
            assertThat(nullAggregate.valueText()).isEqualTo(bad.payload());
            assertThat(nullAggregate.header("source.position")).startsWith("lsn:");
            var illegal = dead.stream().filter(r -> r.id().equals(badTopic.id())).findFirst().orElseThrow();
            assertThat(illegal.header("dead-letter.reason")).contains("\"" + topics + ".Order Line\", which is not a legal Kafka topic name");
            assertThat(illegal.key()).isEqualTo("o-9");
            assertThat(router.metrics().deadLetteredTotal()).isEqualTo(3);
            assertThat(router.metrics().publishedTotal()).isEqualTo(2);
        }
    }

    @Test
    void aColumnTheRouterDoesNotReadIsNotParsedSoItsValueCannotStopTheStream() throws Exception {
        // Postgres accepts an interval of 2,562,047,788 hours; pgjdbc's PGInterval, which Debezium parses intervals with,
        // fails on it ("Conversion of interval failed") and the connector stops. On Postgres 15+ the publication the
        // router creates lists only the columns it reads (and the primary key), so pgoutput never sends this one.
        var db = new PostgresOutbox(TestServers.postgres(), unique("unread"));
        db.execute("ALTER TABLE public.outbox ADD COLUMN retention interval NOT NULL DEFAULT '2562047788 hours'");
        String topics = unique("unread");
        var config = RouterConfigLoader.parse(yaml(db, unique("unread-router").replace('_', '-'), topics, "", 0), Map.of());
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var first = TestEvent.of("Order", "o-1", 1);
            var second = TestEvent.of("Order", "o-1", 2);
            db.insertMultiRow(c, List.of(first, second));
            c.commit();
            kafka.awaitIds(Set.of(first.id(), second.id()), Duration.ofSeconds(30));
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).containsExactly(first.id(), second.id());
            assertThat(router.metrics().publishedTotal()).isEqualTo(2);
        }
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT attnames::text FROM pg_publication_tables "
                + "WHERE pubname = '" + config.source().postgres().publication() + "' AND tablename = 'outbox'")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("{id,aggregatetype,aggregateid,type,payload}");
        }
    }

    /**
     * Postgres 17: the router's slot is a failover slot, so a standby with sync_replication_slots keeps it through a
     * promotion; a slot of the router's that is not one (made by an earlier build, or by the Debezium Server it took
     * over from) becomes one at the next start; check reports it.
     */
    @Test
    void theRoutersSlotIsAFailoverSlotAndAPlainOneBecomesOneAtTheNextStart() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("failover"));
        String topics = unique("failover");
        var config = RouterConfigLoader.parse(yaml(db, unique("failover-router").replace('_', '-'), topics, "", 0), Map.of());
        String slot = config.source().postgres().slot();
        try (var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
        }
        assertThat(failover(db, slot)).as("created by the connector as a failover slot").isTrue();

        var replication = new java.util.Properties();
        replication.setProperty("replication", "database");
        replication.setProperty("preferQueryMode", "simple");
        replication.setProperty("assumeMinServerVersion", "10");
        try (var r = config.source().connection().open(replication); var st = r.createStatement()) {
            st.execute("ALTER_REPLICATION_SLOT \"" + slot + "\" (FAILOVER false)");
        }
        assertThat(failover(db, slot)).isFalse();
        var before = io.outboxrouter.cdc.Source.of(config).checks().stream().filter(k -> k.name().equals("failover")).findFirst().orElseThrow();
        assertThat(before.ok()).isTrue();
        assertThat(before.detail()).contains("slot " + slot + " is not a failover slot yet", "no standby streams from this server");

        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var event = TestEvent.of("Order", "o-1", 1);
            db.insert(c, event);
            c.commit();
            kafka.awaitIds(Set.of(event.id()), Duration.ofSeconds(30));
        }
        assertThat(failover(db, slot)).as("made a failover slot at start").isTrue();
        var after = io.outboxrouter.cdc.Source.of(config).checks().stream().filter(k -> k.name().equals("failover")).findFirst().orElseThrow();
        assertThat(after.detail()).contains("slot " + slot + " is a failover slot");
    }

    private static boolean failover(PostgresOutbox db, String slot) throws java.sql.SQLException {
        try (var c = db.connect(); var ps = c.prepareStatement("SELECT failover FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                assertThat(rs.next()).as("slot " + slot + " exists").isTrue();
                return rs.getBoolean(1);
            }
        }
    }

    @Test
    void aRecordLargerThanKafkaAcceptsIsDeadLetteredWithoutItsPayloadAndTheRestFlows() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("toolarge"));
        String topics = unique("toolarge");
        var config = RouterConfigLoader.parse(yaml(db, unique("large-router").replace('_', '-'), topics, "", 0)
                .replace("  bootstrap-servers:", "  producer: { max.request.size: \"20000\" }\n  bootstrap-servers:"), Map.of());
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var before = TestEvent.of("Order", "o-1", 1);
            var large = new TestEvent(UUID.randomUUID(), "Order", "o-1", "Huge", 2, "{\"blob\": \"" + "x".repeat(50_000) + "\"}");
            var after = TestEvent.of("Order", "o-1", 3);
            db.insertMultiRow(c, List.of(before, large, after));
            c.commit();
            kafka.awaitIds(Set.of(before.id(), large.id(), after.id()), Duration.ofSeconds(60));
            var dead = kafka.settle(Duration.ofMillis(500)).stream().filter(r -> r.id().equals(large.id())).toList();
            assertThat(dead).singleElement().satisfies(r -> {
                assertThat(r.topic()).isEqualTo(topics + ".dead-letters");
                assertThat(r.value()).isNull();
                assertThat(r.header("dead-letter.reason")).startsWith("Kafka refused the record: ").contains("max.request.size");
                assertThat(r.header("dead-letter.payload-bytes")).isEqualTo(Integer.toString(large.payload().length()));
            });
            assertThat(router.metrics().publishedTotal()).isEqualTo(2);
            assertThat(router.metrics().deadLetteredTotal()).isEqualTo(1);
        }
    }

    @Test
    void metricsAndStatusMoveAsEventsFlow() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("metrics"));
        db.execute("ALTER TABLE public.outbox ALTER COLUMN aggregateid DROP NOT NULL");
        String topics = unique("metrics");
        int port = OutboxContract.freePort();
        var config = RouterConfigLoader.parse(yaml(db, unique("metrics-router").replace('_', '-'), topics, "", port), Map.of());
        java.util.function.Function<String, String> get = path -> httpGet(port, path);
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            assertThat(get.apply("/metrics")).contains("outbox_router_streaming{router=").doesNotContain("outbox_router_events_published_total");
            var events = List.of(TestEvent.of("Order", "o-1", 1), TestEvent.of("Order", "o-1", 2),
                    new TestEvent(UUID.randomUUID(), "Order", null, "Broken", 3, "{}"));
            db.insertMultiRow(c, events);
            c.commit();
            kafka.awaitIds(events.stream().map(TestEvent::id).collect(java.util.stream.Collectors.toSet()), Duration.ofSeconds(60));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> router.metrics().lastOffsetStored() != null);
            String metrics = get.apply("/metrics");
            assertThat(metrics).containsPattern("outbox_router_events_published_total\\{router=\"[^\"]+\",topic=\"" + topics + ".Order\"} 2.0")
                    .containsPattern("outbox_router_dead_letters_total\\{reason=\"null_aggregate_id\",router=\"[^\"]+\"} 1.0")
                    .containsPattern("outbox_router_commit_to_ack_seconds_count\\{router=\"[^\"]+\"} 2")
                    .containsPattern("outbox_router_streaming\\{router=\"[^\"]+\"} 1.0")
                    .contains("outbox_router_offset_age_seconds", "outbox_router_source_lag_seconds", "outbox_router_batch_size_count");
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() ->
                    get.apply("/metrics").matches("(?s).*outbox_router_slot_retained_wal_bytes\\{router=\"[^\"]+\"} [0-9][0-9.E]*\n.*"));
            assertThat(get.apply("/status")).contains("\"streaming\":true", "\"published\":2", "\"dead_letters\":1", "\"offset_stored_at\":\"",
                    "\"state\":\"streaming\"", "\"published_per_minute\":[", "\"offsets\":{\"[\\\"", "lsn", "\"slot\":{\"name\":\"");
            String page = get.apply("/");
            assertThat(page).startsWith("<!doctype html>").contains(config.name(), ">streaming<", "<svg", "Stored offsets",
                    "Replication slot", "retained WAL", "Last problems logged");
            assertThat(page).containsPattern("2 in all");
            assertThat(get.apply("/nope")).startsWith("not found");
        }
    }

    @Test
    void aKafkaOutageIsRetriedCountedAndShownOnTheStatusPage() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("outage"));
        int port = OutboxContract.freePort();
        String yaml = yaml(db, unique("outage-router").replace('_', '-'), unique("outage"), "", port)
                .replace("bootstrap-servers: " + OutboxContract.kafka(), "bootstrap-servers: 127.0.0.1:" + OutboxContract.freePort()
                        + "\n  give-up-after: 60s\n  producer: { max.block.ms: \"200\" }");
        var config = RouterConfigLoader.parse(yaml, Map.of());
        java.util.function.Function<String, String> get = path -> httpGet(port, path);
        try (var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, TestEvent.of("Order", "o-1", 1));
            c.commit();
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> router.metrics().retriesTotal() >= 2);
            assertThat(get.apply("/metrics")).containsPattern("outbox_router_retries_total\\{operation=\"kafka_publish\",router=\"[^\"]+\"} [2-9]");
            assertThat(get.apply("/status")).contains("\"recent_problems\":[{", "records to Kafka failed (attempt");
            assertThat(get.apply("/")).contains("records to Kafka failed (attempt").doesNotContain("<p class=\"ok\">none</p>");
            assertThat(router.completion()).as("still retrying, not skipping").isNotDone();
            assertThat(router.metrics().publishedTotal()).isZero();
        }
    }

    @Test
    void replayPublishesAgainTheRowsStillInTheTableByFilterMarkedReplayed() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("replay"));
        String topics = unique("replay");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, unique("replay-router").replace('_', '-'), topics, "", 0));
        var events = new ArrayList<TestEvent>();
        try (var c = db.connect()) {
            for (int i = 1; i <= 6; i++) {
                var e = TestEvent.of("Order", "o-" + (i % 2), i);
                db.insert(c, e);
                c.commit(); // one transaction each, so created_at orders them
                events.add(e);
            }
        }
        var out = new java.io.ByteArrayOutputStream();
        var old = System.out;
        System.setOut(new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8));
        int dry;
        try {
            dry = new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute("replay", "--config", file.toString(),
                    "--aggregate-id", "o-0", "--dry-run");
        } finally {
            System.setOut(old);
        }
        assertThat(dry).isZero();
        assertThat(out.toString()).contains("3 row(s) would be published again", "Nothing was published (--dry-run).");

        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            assertThat(kafka.settle(Duration.ofMillis(500))).as("dry run published nothing").isEmpty();
            int exit = new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute("replay", "--config", file.toString(),
                    "--aggregate-id", "o-0");
            assertThat(exit).isZero();
            var expected = events.stream().filter(e -> e.aggregateId().equals("o-0")).map(TestEvent::id).toList();
            kafka.awaitIds(Set.copyOf(expected), Duration.ofSeconds(30));
            var received = kafka.settle(Duration.ofMillis(500));
            assertThat(received).extracting(KafkaEvents.Received::id).containsExactlyElementsOf(expected);
            assertThat(received).allSatisfy(r -> {
                assertThat(r.header("replayed")).isEqualTo("true");
                assertThat(r.key()).isEqualTo("o-0");
                assertThat(r.topic()).isEqualTo(topics + ".Order");
            });
            assertThat(received.get(0).valueText()).isEqualTo(events.get(1).payload());
        }
    }

    @Test
    void replayFollowsTheOrderOfCommitNotOfTheTransactionsStartTime() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("replayorder"));
        String topics = unique("replayorder");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, unique("replayorder-router").replace('_', '-'), topics, "", 0));
        var first = TestEvent.of("Order", "o-1", 1);
        var second = TestEvent.of("Order", "o-1", 2);
        try (var early = db.connect(); var late = db.connect()) {
            db.insert(early, second); // created_at = now() = this transaction's start: before first's
            Thread.sleep(20);
            db.insert(late, first);
            late.commit();
            early.commit(); // ... but committed after it
        }
        var err = new java.io.ByteArrayOutputStream();
        var old = System.err;
        System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
        int exit;
        int missing;
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            try {
                exit = new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute("replay", "--config", file.toString());
                missing = new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute("replay", "--config", file.toString(),
                        "--order-by", "seq");
            } finally {
                System.setErr(old);
            }
            assertThat(exit).isZero();
            kafka.awaitIds(Set.of(first.id(), second.id()), Duration.ofSeconds(30));
            assertThat(kafka.settle(Duration.ofMillis(500))).extracting(KafkaEvents.Received::id).containsExactly(first.id(), second.id());
        }
        assertThat(err.toString()).contains("public.outbox is replayed in commit order (by track_commit_timestamp's commit times)");
        assertThat(missing).isEqualTo(2);
        assertThat(err.toString()).contains("table public.outbox has no column seq to order by (--order-by)");
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
            // It stops on the same row at once, perhaps before it ever reports ready: wait for the exit alone.
            try (var router = RouterProcess.start(config, port, log)) {
                assertThat(router.awaitExit(Duration.ofSeconds(90))).as("the change record still has the null id").isEqualTo(1);
            }
            assertThat(Files.readString(log).lines().filter(l -> l.startsWith("outbox-router: stopped on an error: row at lsn:")
                    && l.contains("aggregate id (column aggregateid) is null")).count()).as("both starts stopped on the same row").isEqualTo(2);
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
        assertThat(Files.readString(log)).contains("outbox-router: the source database is not set up for the router: outbox table "
                        + "public.outbox: outbox table public.outbox does not exist (source.tables); fix: `java -jar outbox-router.jar schema")
                .doesNotContain(PostgresServer.PASSWORD + "\"");
    }

    @Test
    void jsonLogsAreOneJsonObjectPerLine() throws Exception {
        var server = TestServers.postgres();
        String database = server.createDatabase(unique("jsonlog"));
        var config = Files.writeString(dir.resolve("router.yml"), """
                name: %s
                source: { url: "%s", user: %s, password: %s }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(unique("jsonlog-router").replace('_', '-'), server.jdbcUrl(database), PostgresServer.USER,
                PostgresServer.PASSWORD, OutboxContract.kafka()));
        var log = dir.resolve("router.log");
        try (var router = RouterProcess.start(config, 0, log, Map.of("OUTBOX_ROUTER_LOG_FORMAT", "json"))) {
            assertThat(router.awaitExit(Duration.ofSeconds(60))).isEqualTo(1);
        }
        var lines = Files.readAllLines(log);
        var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
        assertThat(lines).isNotEmpty().allSatisfy(line -> {
            if (!line.startsWith("outbox-router: ")) {
                assertThat(mapper.readTree(line).get("level").asText()).isNotBlank();
            }
        });
        assertThat(lines.get(lines.size() - 1)).startsWith("outbox-router: the source database is not set up");
    }

    /** WAL protection: with only other tables written, the heartbeat still moves the slot's confirmed position. */
    @Test
    void theHeartbeatMovesTheSlotWhileOnlyOtherTablesAreWritten() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), unique("heartbeat"));
        db.execute("CREATE TABLE public.busy (id serial PRIMARY KEY, data text)");
        String topics = unique("heartbeat");
        String name = unique("heartbeat-router").replace('_', '-');
        var config = RouterConfigLoader.parse(yaml(db, name, topics, "", 0).replace("  tables: [", "  postgres: { heartbeat-interval: 200ms }\n  tables: ["),
                Map.of());
        String slot = config.source().postgres().slot();
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var event = TestEvent.of("Order", "o-1", 1);
            db.insert(c, event);
            c.commit();
            kafka.awaitIds(Set.of(event.id()), Duration.ofSeconds(60));

            try (var st = c.createStatement()) {
                for (int i = 0; i < 20; i++) {
                    st.execute("INSERT INTO public.busy (data) SELECT repeat('x', 500) FROM generate_series(1, 500)");
                    c.commit();
                }
            }
            String busyEnd;
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_current_wal_lsn()::text")) {
                rs.next();
                busyEnd = rs.getString(1);
            }
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
                try (var ps = c.prepareStatement("SELECT pg_wal_lsn_diff(confirmed_flush_lsn, ?::pg_lsn) >= 0 FROM pg_replication_slots "
                        + "WHERE slot_name = ?")) {
                    ps.setString(1, busyEnd);
                    ps.setString(2, slot);
                    try (var rs = ps.executeQuery()) {
                        boolean moved = rs.next() && rs.getBoolean(1);
                        c.commit();
                        return moved;
                    }
                }
            });
            assertThat(kafka.settle(Duration.ofMillis(500))).as("heartbeats publish nothing").hasSize(1);
        }
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
}
