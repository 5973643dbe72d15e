package io.outboxrouter.it;

import static io.outboxrouter.it.OutboxContract.assertOrderPerAggregate;
import static io.outboxrouter.it.OutboxContract.configYaml;
import static io.outboxrouter.it.OutboxContract.freePort;
import static io.outboxrouter.it.OutboxContract.kafka;
import static io.outboxrouter.it.OutboxContract.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One outbox split over several replication slots ({@code source.postgres.shards}) on a real Postgres 17 and Kafka:
 * every event once, the order of each aggregate kept, through concurrent writers, SIGKILLs (with multi-row INSERTs and
 * COPY), a snapshot, one shard per process, and a changed number of shards refused.
 */
class PostgresShardsIT {
    @TempDir
    Path dir;


    /** Shards take slots by the handful: give them back to the shared server, which the other suites use too. */
    @AfterEach
    void dropTheShardsSlots() throws SQLException {
        try (var c = TestServers.postgres().connect("postgres"); var st = c.createStatement()) {
            st.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE '%\\_shard\\_%' "
                    + "AND NOT active");
        }
    }

    private static PostgresOutbox newDatabase(String name) throws SQLException {
        return new PostgresOutbox(TestServers.postgres(), name);
    }

    private static String yaml(OutboxDatabase db, String name, String topics, int httpPort, String postgres) {
        return configYaml(db, name, topics, httpPort).replace("  tables: [public.outbox, public.outbox_binary]\n",
                "  tables: [public.outbox, public.outbox_binary]\n  postgres:\n" + postgres.indent(4));
    }

    private static Router start(String yaml) throws InterruptedException {
        var router = Router.start(RouterConfigLoader.parse(yaml, Map.of()));
        if (!router.awaitStreaming(Duration.ofSeconds(90))) {
            router.completion().join();
            throw new AssertionError("not streaming within 90 s");
        }
        return router;
    }

    @ParameterizedTest(name = "{0} shard(s)")
    @ValueSource(ints = {1, 2, 4})
    void eightWritersOverTwoHundredAggregatesArriveOnceInOrderPerAggregate(int shards) throws Exception {
        var db = newDatabase(unique("shards" + shards));
        String topics = unique("shards" + shards);
        String name = unique("shards-router").replace('_', '-');
        int writers = 8;
        int perWriter = 1_250;
        int port = freePort();
        try (var router = start(yaml(db, name, topics, port, "shards: " + shards + "\nheartbeat-interval: 1s"));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            ExecutorService pool = Executors.newFixedThreadPool(writers);
            var expected = new HashSet<UUID>();
            try {
                var ids = new ArrayList<Future<List<UUID>>>();
                for (int w = 0; w < writers; w++) {
                    ids.add(pool.submit(() -> OutboxContract.writeSequenced(db, perWriter, 200)));
                }
                for (var f : ids) {
                    expected.addAll(f.get());
                }
            } finally {
                pool.shutdownNow();
            }
            kafka.awaitIds(expected, Duration.ofSeconds(120));
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).hasSize(writers * perWriter);
            assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(expected);
            assertOrderPerAggregate(received);
            assertThat(router.metrics().publishedTotal()).isEqualTo(writers * perWriter);

            String metrics = get(port, "/metrics");
            String status = get(port, "/status");
            if (shards == 1) {
                assertThat(metrics).doesNotContain("shard=");
                assertThat(status).contains("\"router\":\"" + name + "\"").doesNotContain("\"shards\"");
            } else {
                for (int i = 0; i < shards; i++) {
                    // every shard carried events: 200 aggregates hash to all of them
                    assertThat(metrics).containsPattern("outbox_router_events_published_total\\{router=\"" + name + "\",shard=\"" + i
                            + "\",topic=\"[^\"]+\"} [1-9]");
                    assertThat(status).contains("\"router\":\"" + name + "-shard-" + i + "-of-" + shards + "\"");
                }
                assertThat(status).contains("\"state\":\"streaming\"", "\"published\":" + writers * perWriter);
                assertThat(get(port, "/")).contains(name + "-shard-" + (shards - 1) + "-of-" + shards);
                try (var c = db.connect(); var st = c.createStatement();
                     var rs = st.executeQuery("SELECT count(*), count(*) FILTER (WHERE failover) FROM pg_replication_slots WHERE slot_name LIKE '"
                             + name.replace('-', '_') + "\\_shard\\_%\\_of\\_" + shards + "'")) {
                    rs.next();
                    assertThat(rs.getInt(1)).as("one slot per shard").isEqualTo(shards);
                    assertThat(rs.getInt(2)).as("each a failover slot (Postgres 17)").isEqualTo(shards);
                }
            }
        }
    }

    @Test
    void sigkillOfAFourShardRouterUnderMixedLoadLosesNothingAndKeepsOrderPerAggregate() throws Exception {
        var db = newDatabase(unique("shardcrash"));
        String topics = unique("shardcrash");
        String name = unique("shardcrash-router").replace('_', '-');
        int port = freePort();
        var config = Files.writeString(dir.resolve("router.yml"), yaml(db, name, topics, port, "shards: 4"));
        var log = dir.resolve("router.log");
        long seed = Long.getLong("outbox.it.crash-seed", System.nanoTime());
        System.out.printf("shard crash test: seed %d (repeat with -Doutbox.it.crash-seed=%d)%n", seed, seed);
        var random = new Random(seed);
        var written = Collections.synchronizedSet(new HashSet<UUID>());
        var stopLoad = new AtomicBoolean();
        ExecutorService load = Executors.newSingleThreadExecutor();
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            var router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(120));
            Future<?> writer = load.submit(() -> {
                // Paced: the kills hit every kind of transaction in flight without a backlog that only lengthens the drain.
                OutboxContract.writeMixedLoad(db, written, stopLoad, new Random(seed), 10);
                return null;
            });
            for (int kill = 1; kill <= 3; kill++) {
                Thread.sleep(1_500 + random.nextInt(3_000));
                kafka.poll();
                router.kill();
                System.out.printf("shard crash test: SIGKILL %d of 3 with %d events written%n", kill, written.size());
                Thread.sleep(random.nextInt(1_000));
                router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(120));
            }
            Thread.sleep(1_000);
            stopLoad.set(true);
            writer.get();
            kafka.awaitIds(Set.copyOf(written), Duration.ofSeconds(120));
            var received = kafka.settle(Duration.ofSeconds(2));
            assertThat(router.stop(Duration.ofSeconds(60))).isZero();
            long duplicates = received.size() - kafka.receivedIds().size();
            System.out.printf("shard crash test: %d events written, %d records read, %d duplicates, 3 SIGKILLs of 4 shards%n",
                    written.size(), received.size(), duplicates);
            assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(written);
            assertOrderPerAggregate(received);
        } finally {
            stopLoad.set(true);
            load.shutdownNow();
        }
    }

    /**
     * Exactly-once with shards: each shard its own transactional id, all shards' positions in the router's one offsets
     * topic under their own names; SIGKILLs under mixed load show each event once to a read_committed consumer.
     */
    @Test
    void exactlyOnceShardsSurviveSigkillsWithEveryEventOnceForReadCommittedConsumers() throws Exception {
        var db = newDatabase(unique("shardeos"));
        String topics = unique("shardeos");
        String name = unique("shardeos-router").replace('_', '-');
        int port = freePort();
        var config = Files.writeString(dir.resolve("router.yml"), yaml(db, name, topics, port, "shards: 2") + "delivery: exactly-once\n");
        var log = dir.resolve("router.log");
        var written = Collections.synchronizedSet(new HashSet<UUID>());
        var stopLoad = new AtomicBoolean();
        ExecutorService load = Executors.newSingleThreadExecutor();
        try (var kafka = KafkaEvents.readCommitted(kafka(), topics + "\\..*")) {
            var router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(120));
            Future<?> writer = load.submit(() -> {
                OutboxContract.writeMixedLoad(db, written, stopLoad, new Random(7), 10);
                return null;
            });
            for (int kill = 1; kill <= 2; kill++) {
                Thread.sleep(2_500);
                router.kill();
                System.out.printf("exactly-once shard test: SIGKILL %d of 2 with %d events written%n", kill, written.size());
                router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(120));
            }
            Thread.sleep(1_000);
            stopLoad.set(true);
            writer.get();
            kafka.awaitIds(Set.copyOf(written), Duration.ofSeconds(120));
            var received = kafka.settle(Duration.ofSeconds(2));
            assertThat(router.stop(Duration.ofSeconds(60))).isZero();
            System.out.printf("exactly-once shard test: %d events written, %d records read%n", written.size(), received.size());
            assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(written);
            assertThat(received).as("no duplicates for a read_committed consumer").hasSize(written.size());
            assertOrderPerAggregate(received);
            var kafkaConfig = RouterConfigLoader.parse(Files.readString(config), Map.of()).kafka();
            assertThat(kafkaConfig.offsetsTopic()).isEqualTo("outbox-router." + name + ".offsets");
            var offsets = new io.outboxrouter.kafka.OffsetsTopic(kafkaConfig);
            for (int i = 0; i < 2; i++) {
                assertThat(offsets.read(name + "-shard-" + i + "-of-2")).as("shard %d's position in the router's offsets topic", i)
                        .hasSize(1);
            }
        } finally {
            stopLoad.set(true);
            load.shutdownNow();
        }
    }

    @Test
    void oneShardPerProcessStartedHoursApartMissNothingAndAShardAlreadyStreamedStandsBy() throws Exception {
        var db = newDatabase(unique("shardproc"));
        String topics = unique("shardproc");
        String name = unique("shardproc-router").replace('_', '-');
        try (var first = start(yaml(db, name, topics, 0, "shard: 0/2"));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            // Written while only shard 0 runs: the first start of the layout created shard 1's slot too.
            var before = OutboxContract.writeSequenced(db, 200, 50);
            try (var second = start(yaml(db, name, topics, 0, "shard: 1/2"))) {
                var ids = new ArrayList<>(before);
                ids.addAll(OutboxContract.writeSequenced(db, 200, 50));
                kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(60));
                var received = kafka.settle(Duration.ofSeconds(1));
                assertThat(received).hasSize(400);
                assertOrderPerAggregate(received);
                assertThat(first.metrics().publishedTotal()).isPositive();
                assertThat(second.metrics().publishedTotal()).isPositive();
                assertThat(first.metrics().publishedTotal() + second.metrics().publishedTotal()).isEqualTo(400);

                // A process for both shards streams neither while these hold their locks.
                try (var both = Router.start(RouterConfigLoader.parse(yaml(db, name, topics, 0, "shards: 2"), Map.of()))) {
                    Thread.sleep(2_000);
                    assertThat(both.isActive()).isFalse();
                    assertThat(both.waitingFor()).isEqualTo("the other process");
                    assertThat(both.isStreaming()).isFalse();
                }
            }
        }
    }

    /** {@code run --once} of a sharded router drains every shard, then exits 0; the next run publishes only what is new. */
    @Test
    void runOnceDrainsEveryShardThenExitsZero() throws Exception {
        var db = newDatabase(unique("shardonce"));
        String topics = unique("shardonce");
        var config = Files.writeString(dir.resolve("once.yml"), yaml(db, unique("shardonce-router").replace('_', '-'), topics, 0, "shards: 3"));
        var log = dir.resolve("once.log");
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("first run creates the slots: %s", log).isZero();
            var ids = new ArrayList<>(OutboxContract.writeSequenced(db, 150, 30));
            assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("second run").isZero();
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(10)); // acknowledged before the exit
            ids.addAll(OutboxContract.writeSequenced(db, 150, 30));
            assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("third run").isZero();
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(10));
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).as("each of the 300 events exactly once").hasSize(300);
            assertOrderPerAggregate(received);
        }
    }

    /** Two processes for every shard, started together (a deployment with a standby): one streams them all, one waits. */
    @Test
    void aSecondProcessForEveryShardStandsByWholeAndTakesOverWhole() throws Exception {
        var db = newDatabase(unique("shardstandby"));
        String topics = unique("shardstandby");
        String name = unique("shardstandby-router").replace('_', '-');
        String yaml = yaml(db, name, topics, 0, "shards: 3");
        var active = Router.start(RouterConfigLoader.parse(yaml, Map.of()));
        try (var standby = Router.start(RouterConfigLoader.parse(yaml, Map.of()));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            assertThat(active.awaitStreaming(Duration.ofSeconds(90))).isTrue();
            assertThat(standby.isActive()).isFalse();
            assertThat(standby.waitingFor()).isEqualTo("the other process");
            var ids = new ArrayList<>(OutboxContract.writeSequenced(db, 300, 60));
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(60));
            // Counted once the batch's last ack is processed, which a consumer can beat to the records.
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
                    .untilAsserted(() -> assertThat(active.metrics().publishedTotal()).isEqualTo(300));

            active.close();
            assertThat(standby.awaitStreaming(Duration.ofSeconds(60))).as("the standby takes every shard over").isTrue();
            ids.addAll(OutboxContract.writeSequenced(db, 300, 60));
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(60));
            assertOrderPerAggregate(kafka.settle(Duration.ofSeconds(1)));
            assertThat(standby.metrics().publishedTotal()).isPositive();
        } finally {
            active.close();
        }
    }

    /** A row without an aggregate id is in shard 0 (a NULL row filter would publish it nowhere): a dead letter, as unsharded. */
    @Test
    void aRowWithoutAnAggregateIdIsADeadLetterNotLost() throws Exception {
        var db = newDatabase(unique("shardnull"));
        db.execute("ALTER TABLE public.outbox ALTER COLUMN aggregateid DROP NOT NULL");
        String topics = unique("shardnull");
        String name = unique("shardnull-router").replace('_', '-');
        String deadLetters = topics + ".dlq";
        String yaml = yaml(db, name, topics, 0, "shards: 2").replace("routing:\n", "routing:\n  dead-letters: { topic: " + deadLetters + " }\n");
        try (var router = start(yaml); var dlq = new KafkaEvents(kafka(), java.util.regex.Pattern.quote(deadLetters));
             var c = db.connect(); var st = c.createStatement()) {
            st.execute("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES "
                    + "(gen_random_uuid(), 'Order', NULL, 'Created', '{}')");
            c.commit();
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> {
                dlq.poll();
                return !dlq.all().isEmpty();
            });
            // Counted once the batch is done, which can be a moment after a consumer sees the acknowledged record.
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> router.metrics().deadLetteredTotal() == 1);
            assertThat(router.metrics().deadLetteredTotal()).isEqualTo(1);
        }
    }

    @Test
    void aSnapshotOfAShardedOutboxPublishesEachRowOnce() throws Exception {
        var db = newDatabase(unique("shardsnap"));
        String topics = unique("shardsnap");
        String name = unique("shardsnap-router").replace('_', '-');
        var ids = OutboxContract.writeSequenced(db, 300, 40); // committed before the first start
        try (var router = start(yaml(db, name, topics, 0, "shards: 3").replace("  kind: postgres\n", "  kind: postgres\n  snapshot: initial\n"));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(60));
            var received = kafka.settle(Duration.ofSeconds(2));
            assertThat(received).hasSize(300);
            assertOrderPerAggregate(received);
        }
    }

    /** Each shard's slot moves with its own heartbeat row, also the slot of a shard that never had an event. */
    @Test
    void theHeartbeatMovesEveryShardsSlotWhileOnlyOtherTablesAreWritten() throws Exception {
        var db = newDatabase(unique("shardbeat"));
        db.execute("CREATE TABLE public.busy (id serial PRIMARY KEY, data text)");
        String topics = unique("shardbeat");
        String name = unique("shardbeat-router").replace('_', '-');
        try (var router = start(yaml(db, name, topics, 0, "shards: 2\nheartbeat-interval: 200ms"));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*"); var c = db.connect()) {
            var event = TestEvent.of("Order", "o-1", 1); // lands in one shard; the other has none
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
            String slot = name.replace('-', '_');
            for (int i = 0; i < 2; i++) {
                String shardSlot = slot + "_shard_" + i + "_of_2";
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
                    try (var ps = c.prepareStatement("SELECT pg_wal_lsn_diff(confirmed_flush_lsn, ?::pg_lsn) >= 0 FROM pg_replication_slots "
                            + "WHERE slot_name = ?")) {
                        ps.setString(1, busyEnd);
                        ps.setString(2, shardSlot);
                        try (var rs = ps.executeQuery()) {
                            boolean moved = rs.next() && rs.getBoolean(1);
                            c.commit();
                            return moved;
                        }
                    }
                });
            }
            assertThat(kafka.settle(Duration.ofMillis(500))).as("heartbeats publish nothing").hasSize(1);
            assertThat(router.metrics().publishedTotal()).isEqualTo(1);
        }
    }

    @Test
    void aChangedNumberOfShardsIsRefusedWithTheSlotsThatHoldEventsAndTheFix() throws Exception {
        var db = newDatabase(unique("reshard"));
        String topics = unique("reshard");
        String name = unique("reshard-router").replace('_', '-');
        String slot = name.replace('-', '_');
        try (var router = start(yaml(db, name, topics, 0, "shards: 2"))) {
            assertThat(router.isStreaming()).isTrue();
        }
        for (String layout : List.of("shards: 4", "shards: 1")) {
            assertThatThrownBy(() -> Router.start(RouterConfigLoader.parse(yaml(db, name, topics, 0, layout), Map.of())).close())
                    .isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("replication slots " + slot + "_shard_0_of_2, " + slot + "_shard_1_of_2")
                    .hasMessageContaining("earlier shard layout")
                    .hasMessageContaining("SELECT pg_drop_replication_slot('" + slot + "_shard_0_of_2')");
        }
    }

    /** Slots gone while stopped are refused shard by shard as drift, never created again quietly with the layout's. */
    @Test
    void slotsDroppedWhileStoppedAreRefusedNotCreatedAgainQuietly() throws Exception {
        var db = newDatabase(unique("shardgone"));
        String topics = unique("shardgone");
        String name = unique("shardgone-router").replace('_', '-');
        String slot = name.replace('-', '_');
        String yaml = yaml(db, name, topics, 0, "shards: 2");
        try (var router = start(yaml); var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            var ids = OutboxContract.writeSequenced(db, 100, 20); // both shards store a position
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(60));
        }
        db.execute("SELECT pg_drop_replication_slot('" + slot + "_shard_0_of_2')");
        db.execute("SELECT pg_drop_replication_slot('" + slot + "_shard_1_of_2')");
        assertThatThrownBy(() -> Router.start(RouterConfigLoader.parse(yaml, Map.of())).close())
                .isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("replication slot " + slot + "_shard_0_of_2 does not exist, but router " + name + "-shard-0-of-2 stored");
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE '" + slot + "\\_%'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("no slot created again").isZero();
        }
    }

    /** A shard's publication dropped while stopped is refused as on an unsharded router, never created again behind its slot. */
    @Test
    void aShardsPublicationDroppedWhileStoppedIsRefusedNotCreatedBehindItsSlot() throws Exception {
        var db = newDatabase(unique("shardpub"));
        String topics = unique("shardpub");
        String name = unique("shardpub-router").replace('_', '-');
        String slot = name.replace('-', '_');
        String yaml = yaml(db, name, topics, 0, "shards: 2");
        try (var router = start(yaml); var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            var ids = OutboxContract.writeSequenced(db, 20, 10);
            kafka.awaitIds(Set.copyOf(ids), Duration.ofSeconds(60));
        }
        String publication;
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery(
                "SELECT pubname FROM pg_publication WHERE pubname LIKE '%shard_1_of_2'")) {
            assertThat(rs.next()).isTrue();
            publication = rs.getString(1);
        }
        db.execute("DROP PUBLICATION " + publication);
        assertThatThrownBy(() -> Router.start(RouterConfigLoader.parse(yaml, Map.of())).close())
                .isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("publication " + publication + " is missing while slot " + slot + "_shard_1_of_2 exists")
                .hasMessageContaining("--accept-gap");
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery(
                "SELECT count(*) FROM pg_publication WHERE pubname = '" + publication + "'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("not created behind the slot").isZero();
        }
    }

    /** A shard whose slot is missing beside its siblings' (dropped, or never finished) is refused, with --accept-gap the way on. */
    @Test
    void aShardWithoutItsSlotBesideItsSiblingsIsRefused() throws Exception {
        var db = newDatabase(unique("shardhalf"));
        String topics = unique("shardhalf");
        String name = unique("shardhalf-router").replace('_', '-');
        String slot = name.replace('-', '_');
        try (var first = start(yaml(db, name, topics, 0, "shard: 0/2"))) {
            assertThat(first.isStreaming()).isTrue(); // created both shards' slots
        }
        db.execute("SELECT pg_drop_replication_slot('" + slot + "_shard_1_of_2')");
        assertThatThrownBy(() -> Router.start(RouterConfigLoader.parse(yaml(db, name, topics, 0, "shard: 1/2"), Map.of())).close())
                .isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("replication slot " + slot + "_shard_1_of_2 of shard 1 of 2 does not exist, while " + slot
                        + "_shard_0_of_2 of the other shards do")
                .hasMessageContaining("--accept-gap");
        try (var second = Router.start(RouterConfigLoader.parse(yaml(db, name, topics, 0, "shard: 1/2"), Map.of()), true)) {
            assertThat(second.awaitStreaming(Duration.ofSeconds(60))).as("accepted with --accept-gap").isTrue();
        }
    }

    private static String get(int port, String path) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    /**
     * A first start while writers keep transactions open: each slot's creation waits for the transactions running then,
     * so the slots are created apart, and a transaction committed in between would reach only the later shards. Every
     * transaction reaches all shards or none; those committed once the router streams reach all.
     */
    @Test
    void shardsFirstStartedBesideOpenTransactionsPublishNoTransactionInPart() throws Exception {
        var db = newDatabase(unique("shardstart"));
        String topics = unique("shardstart");
        var stop = new AtomicBoolean();
        var committed = Collections.synchronizedList(new ArrayList<List<TestEvent>>());
        ExecutorService pool = Executors.newFixedThreadPool(2);
        var writers = new ArrayList<Future<?>>();
        for (int w = 0; w < 2; w++) {
            int writer = w;
            writers.add(pool.submit(() -> {
                Thread.sleep(writer * 250L); // staggered: one transaction is always open
                try (var c = db.connect()) {
                    for (int n = 0; !stop.get(); n++) {
                        var transaction = new ArrayList<TestEvent>();
                        for (int k = 0; k < 8; k++) { // eight aggregates: the rows of one transaction span the shards
                            var e = TestEvent.of("Order", "w" + writer + "-t" + n + "-a" + k, 1);
                            db.insert(c, e);
                            transaction.add(e);
                        }
                        Thread.sleep(500);
                        c.commit();
                        committed.add(transaction);
                    }
                }
                return null;
            }));
        }
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            List<List<TestEvent>> afterStart;
            try (var router = start(yaml(db, unique("shardstart").replace('_', '-'), topics, freePort(), "shards: 4"))) {
                int before = committed.size();
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> committed.size() >= before + 6);
                stop.set(true);
                for (var f : writers) {
                    f.get();
                }
                afterStart = List.copyOf(committed.subList(before + 2, committed.size())); // surely after every slot
                kafka.awaitIds(afterStart.stream().flatMap(List::stream).map(TestEvent::id).collect(java.util.stream.Collectors.toSet()),
                        Duration.ofSeconds(60));
                kafka.settle(Duration.ofSeconds(2));
            } finally {
                pool.shutdownNow();
            }
            var received = kafka.receivedIds();
            var inPart = committed.stream().filter(t -> {
                long arrived = t.stream().filter(e -> received.contains(e.id())).count();
                return arrived > 0 && arrived < t.size();
            }).toList();
            assertThat(inPart).as("transactions published in part, of " + committed.size()).isEmpty();
        }
    }

    /**
     * Re-sharding while the application goes on writing: {@code reshard} creates the new layout's slots, drains the earlier
     * layout past their start and drops it; the new layout then streams. Nothing is lost, and each aggregate's first
     * deliveries keep their order (events in the overlap come twice).
     */
    @ParameterizedTest(name = "from {0} to {1}, after a reshard stopped half way: {2}")
    @org.junit.jupiter.params.provider.CsvSource({"2, 4, true", "1, 3, false"})
    void reshardingWhileWritersGoOnLosesNothingAndKeepsOrderPerAggregate(int from, int to, boolean stoppedBefore) throws Exception {
        var db = newDatabase(unique("reshardlive"));
        String topics = unique("reshardlive");
        String name = unique("reshardlive-router").replace('_', '-');
        var next = Files.writeString(dir.resolve("next.yml"), yaml(db, name, topics, 0, "shards: " + to));
        var stop = new AtomicBoolean();
        var written = Collections.synchronizedList(new ArrayList<UUID>());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<?> writer = null;
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            try (var router = start(yaml(db, name, topics, 0, "shards: " + from))) {
                writer = pool.submit(() -> {
                    while (!stop.get()) {
                        written.addAll(OutboxContract.writeSequenced(db, 10, 40));
                    }
                    return null;
                });
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> written.size() >= 200);
            }
            if (stoppedBefore) {
                // What a reshard stopped while it created the new slots leaves: one of them, never advanced with the others.
                db.execute("SELECT pg_create_logical_replication_slot('" + name.replace('-', '_') + "_shard_1_of_" + to + "', 'pgoutput')");
            }
            assertThat(new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute("reshard", "--config", next.toString()))
                    .as("reshard exit code").isZero();
            int handedOver = written.size();
            try (var router = start(yaml(db, name, topics, 0, "shards: " + to))) {
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> written.size() >= handedOver + 200);
                stop.set(true);
                writer.get();
                kafka.awaitIds(new HashSet<>(written), Duration.ofSeconds(120));
                assertOrderPerAggregate(kafka.settle(Duration.ofSeconds(1)));
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
        try (var c = db.connect(); var st = c.createStatement();
             var rs = st.executeQuery("SELECT string_agg(slot_name, ',' ORDER BY slot_name) FROM pg_replication_slots WHERE slot_name LIKE '"
                     + name.replace('-', '_') + "%'")) {
            rs.next();
            assertThat(rs.getString(1)).as("only the new layout's slots").doesNotContain(from == 1 ? "," + name.replace('-', '_') + ","
                    : "_of_" + from).contains(to == 1 ? name.replace('-', '_') : "_of_" + to);
        }
    }
}
