package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.cdc.SourcePosition;
import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.kafka.OffsetsTopic;
import io.outboxrouter.kafka.TransactionalPublisher;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.offsets.EngineOffsets;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.retry.Retry;
import io.outboxrouter.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once delivery on Postgres, beyond the contract suite's crash tests: the Kafka producer fences a process that
 * lost the stream without knowing it, and the offsets topic and table are reconciled at start.
 */
class PostgresExactlyOnceIT {
    private static final String EXACTLY_ONCE = "delivery: exactly-once\n";
    @TempDir
    Path dir;

    private static PostgresOutbox newDatabase(String label) throws Exception {
        return new PostgresOutbox(TestServers.postgres(), OutboxContract.unique(label));
    }

    private static String routerName(String label) {
        return OutboxContract.unique(label + "-router").replace('_', '-');
    }

    /**
     * Terminates the router's lock session and its replication connection, as a network partition from the database
     * would; returns how many of each. An offset write left open is ended by the router's own session setting.
     */
    private static String cutOffFromTheDatabase(PostgresOutbox db, String slot) throws Exception {
        try (var c = db.connect(); var st = c.createStatement()) {
            int locks;
            try (var rs = st.executeQuery("SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l JOIN pg_stat_activity a "
                    + "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()")) {
                rs.next();
                locks = rs.getInt(1);
            }
            int streams;
            try (var rs = st.executeQuery("SELECT count(pg_terminate_backend(active_pid)) FROM pg_replication_slots WHERE slot_name = '"
                    + slot + "' AND active_pid IS NOT NULL")) {
                rs.next();
                streams = rs.getInt(1);
            }
            // An offset write the pause caught inside its transaction is left to the router's own setting: the server ends
            // that session after 15 s idle in it, and the next router's fencing token, which waits on its row, follows.
            c.commit();
            return locks + " lock session(s), " + streams + " replication connection(s)";
        }
    }

    @Test
    void aPausedRouterThatLostTheStreamIsFencedByKafkaWhenItWakesAndNothingIsDuplicated() throws Exception {
        var db = newDatabase("fence");
        String topics = OutboxContract.unique("fence");
        String name = routerName("fence");
        int firstPort = OutboxContract.freePort();
        int secondPort = OutboxContract.freePort();
        var first = Files.writeString(dir.resolve("first.yml"), OutboxContract.configYaml(db, name, topics, firstPort) + EXACTLY_ONCE);
        var second = Files.writeString(dir.resolve("second.yml"), OutboxContract.configYaml(db, name, topics, secondPort) + EXACTLY_ONCE);
        var firstLog = dir.resolve("first.log");
        var written = Collections.synchronizedSet(new HashSet<UUID>());
        var stopLoad = new AtomicBoolean();
        var load = Executors.newSingleThreadExecutor();
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*");
             var a = RouterProcess.start(first, firstPort, firstLog).awaitReady(Duration.ofSeconds(90))) {
            var writer = load.submit(() -> {
                OutboxContract.writeSteadily(db, written, stopLoad);
                return null;
            });
            Thread.sleep(1_500);
            a.pause();
            System.out.printf("fence: SIGSTOP of the first router with %d events written%n", written.size());
            String cut = cutOffFromTheDatabase(db, name.replace('-', '_'));
            System.out.printf("fence: terminated %s of the paused router%n", cut);
            assertThat(cut).startsWith("1 lock session(s)");
            try (var b = RouterProcess.start(second, secondPort, dir.resolve("second.log")).awaitReady(Duration.ofSeconds(90))) {
                Thread.sleep(2_000); // the second streams, its producer took the transactional id over
                a.resume();
                int exit = a.awaitExit(Duration.ofSeconds(90));
                String log = Files.readString(firstLog);
                System.out.printf("fence: the first router exited with %d after SIGCONT (%s)%n", exit,
                        log.contains("fenced: another process started router stream") ? "fenced by Kafka" : "lost its lock");
                assertThat(exit).as("the woken router stops").isNotZero();
                stopLoad.set(true);
                writer.get();
                kafka.awaitIds(Set.copyOf(written), Duration.ofSeconds(120));
                var received = kafka.settle(Duration.ofSeconds(2));
                long duplicates = received.size() - kafka.receivedIds().size();
                System.out.printf("fence: %d events written, %d read, %d duplicates%n", written.size(), received.size(), duplicates);
                assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(written);
                assertThat(duplicates).as("duplicates seen by a read_committed consumer").isZero();
                OutboxContract.assertOrderPerAggregate(received);
                assertThat(b.ready()).as("the second router streams on").isTrue();
            }
        } finally {
            stopLoad.set(true);
            load.shutdownNow();
        }
    }

    @Test
    void aSecondProducerOfTheSameStreamFencesTheFirstWhoseCommitThenFailsForGood() throws Exception {
        var kafka = RouterConfigLoader.parse(OutboxContract.configYaml(newDatabase("zombie"), "zombie-router", "zombie", 0)
                .replace("  bootstrap-servers: " + OutboxContract.kafka() + "\n", "  bootstrap-servers: " + OutboxContract.kafka()
                        + "\n  give-up-after: 30s\n") + EXACTLY_ONCE, Map.of()).kafka();
        String stream = routerName("zombie");
        String topic = OutboxContract.unique("zombie");
        var position = new SourcePosition(Map.of("server", stream), Map.of("lsn", 1L));
        try (var first = TransactionalPublisher.of(kafka, stream, KafkaConfig.transactionalId(stream), 1, Duration.ofMillis(50), RouterListener.NONE);
             var second = TransactionalPublisher.of(kafka, stream, KafkaConfig.transactionalId(stream), 1, Duration.ofMillis(50), RouterListener.NONE);
             var events = KafkaEvents.readCommitted(OutboxContract.kafka(), topic)) {
            var committed = event(topic, "from the first, committed");
            var zombie = event(topic, "from the first, after the second started");
            var fromSecond = event(topic, "from the second");
            first.activate();
            first.send(List.of(committed));
            first.commit(position);
            first.send(List.of(zombie));
            second.activate();
            assertThatThrownBy(() -> first.commit(position)).isInstanceOf(Retry.GaveUpException.class)
                    .hasMessageContaining("fenced: another process started router stream " + stream);
            second.send(List.of(fromSecond));
            second.commit(position);
            events.awaitIds(Set.of(idOf(committed), idOf(fromSecond)), Duration.ofSeconds(60));
            var values = events.settle(Duration.ofSeconds(2)).stream().map(KafkaEvents.Received::valueText).toList();
            assertThat(values).containsExactly("from the first, committed", "from the second");
        }
    }

    /**
     * A transaction the coordinator aborts for outliving transaction.timeout.ms (2 s here; the broker looks every 10 s) is
     * not a fencing: the producer recovers its epoch, and the records are sent again and committed once.
     */
    @Test
    void aTransactionAbortedByTheCoordinatorForItsTimeoutIsSentAgainNotTakenForAFencing() throws Exception {
        var kafka = RouterConfigLoader.parse(OutboxContract.configYaml(newDatabase("txtimeout"), "txtimeout-router", "txtimeout", 0)
                .replace("  bootstrap-servers: " + OutboxContract.kafka() + "\n", "  bootstrap-servers: " + OutboxContract.kafka()
                        + "\n  producer: { transaction.timeout.ms: \"2000\" }\n") + EXACTLY_ONCE, Map.of()).kafka();
        String stream = routerName("txtimeout");
        String topic = OutboxContract.unique("txtimeout");
        try (var publisher = TransactionalPublisher.of(kafka, stream, KafkaConfig.transactionalId(stream), 1, Duration.ofMillis(50), RouterListener.NONE);
             var events = KafkaEvents.readCommitted(OutboxContract.kafka(), topic)) {
            publisher.activate();
            var late = event(topic, "sent, then the transaction outlived its timeout");
            publisher.send(List.of(late));
            Thread.sleep(14_000);
            publisher.commit(new SourcePosition(Map.of("server", stream), Map.of("lsn", 1L)));
            events.awaitIds(Set.of(idOf(late)), Duration.ofSeconds(60));
            assertThat(events.settle(Duration.ofSeconds(2))).hasSize(1);
        }
    }

    private static UUID idOf(ProducerRecord<byte[], byte[]> record) {
        return UUID.fromString(new String(record.headers().lastHeader("id").value(), StandardCharsets.UTF_8));
    }

    private static ProducerRecord<byte[], byte[]> event(String topic, String value) {
        var r = new ProducerRecord<>(topic, "k".getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
        r.headers().add("id", UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
        return r;
    }

    // --- the offsets topic and the offsets table disagree at start ------------------------------------------------

    private record Setup(PostgresOutbox db, RouterConfig config, String topics, Map<String, String> earlier, Map<String, String> later) {
    }

    /** Three events through two runs: the table's position after the first run, and after the second (== the topic's). */
    private Setup twoRuns(String label, KafkaEvents kafka, String topics) throws Exception {
        var db = newDatabase(label);
        var config = RouterConfigLoader.parse(OutboxContract.configYaml(db, routerName(label), topics, 0) + EXACTLY_ONCE, Map.of());
        Map<String, String> earlier;
        try (var router = OutboxContract.startRouter(config)) {
            publish(db, kafka, TestEvent.of("Order", "o-1", 1));
        }
        earlier = read(config);
        try (var router = OutboxContract.startRouter(config)) {
            publish(db, kafka, TestEvent.of("Order", "o-1", 2));
            publish(db, kafka, TestEvent.of("Order", "o-1", 3));
        }
        var later = read(config);
        assertThat(later).hasSize(1);
        assertThat(EngineOffsets.samePosition(earlier.values().iterator().next(), later.values().iterator().next())).isFalse();
        var committed = new OffsetsTopic(config.kafka()).read(config.name());
        assertThat(EngineOffsets.samePosition(committed.get(later.keySet().iterator().next()), later.values().iterator().next()))
                .as("the table mirrors the topic after a clean stop").isTrue();
        return new Setup(db, config, topics, earlier, later);
    }

    @Test
    void aTableBehindTheOffsetsTopicIsCorrectedFromItAndNothingIsPublishedTwice() throws Exception {
        String topics = OutboxContract.unique("tablebehind");
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*"); var log = new CapturedLog()) {
            var s = twoRuns("tablebehind", kafka, topics);
            try (var table = table(s.config())) {
                table.write(s.config().name(), s.earlier()); // behind the topic, as after a failed mirror write
            }
            try (var router = OutboxContract.startRouter(s.config())) {
                publish(s.db(), kafka, TestEvent.of("Order", "o-1", 4));
                var received = kafka.settle(Duration.ofSeconds(2));
                assertThat(received).as("each event once: the position the topic holds was resumed from").hasSize(4);
                assertThat(kafka.receivedIds()).hasSize(4);
            }
            assertThat(log.lines()).anyMatch(l -> l.contains("the offsets table and the offsets topic " + s.config().kafka().offsetsTopic()
                    + " disagree") && l.contains("Resuming from the topic's"));
        }
    }

    @Test
    void aTableAheadOfTheOffsetsTopicLosesToItTheTopicsPositionIsResumedFrom() throws Exception {
        String topics = OutboxContract.unique("tableahead");
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*"); var log = new CapturedLog()) {
            var s = twoRuns("tableahead", kafka, topics);
            // The topic goes back to the first run's position (restored from a backup, say): it is what exactly-once
            // trusts; the slot, confirmed up to the later position, cannot go back, and that is refused as drift.
            var key = s.earlier().keySet().iterator().next();
            var p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, OutboxContract.kafka());
            try (var producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
                producer.send(new ProducerRecord<>(s.config().kafka().offsetsTopic(), key, s.earlier().get(key))).get();
            }
            Router router = null;
            String refused = null;
            try {
                router = Router.start(s.config());
                if (!router.awaitStreaming(Duration.ofSeconds(60))) {
                    router.completion().join();
                }
            } catch (RuntimeException e) {
                refused = e.getMessage();
            } finally {
                if (router != null) {
                    router.close();
                }
            }
            assertThat(log.lines()).anyMatch(l -> l.contains("disagree") && l.contains("Resuming from the topic's"));
            assertThat(EngineOffsets.samePosition(read(s.config()).get(key), s.earlier().get(key)))
                    .as("the table holds the topic's position").isTrue();
            if (refused != null) {
                // The slot was confirmed past the topic's position (on the clean stop): it cannot go back, and that is
                // refused as drift, with the fix.
                assertThat(refused).contains("ahead of router " + s.config().name()).contains("--accept-gap");
                assertThat(kafka.settle(Duration.ofSeconds(1))).as("nothing published").hasSize(3);
            } else {
                // The slot was not confirmed past it: the two events after it, which the topic says were never
                // committed, are published again.
                assertThat(kafka.settle(Duration.ofSeconds(2))).as("o-1 #2 and #3 again").hasSize(5);
            }
        }
    }

    /**
     * Two routers of one name, each on its own database, on one Kafka cluster: the second is refused before it fences the
     * first (a shared transactional id) or resumes from its positions; the first goes on. A router whose offsets table
     * lost its rows is refused the same way, and --accept-gap resumes it from the topic's positions with nothing twice.
     */
    @Test
    void aSecondRouterOfTheSameNameOnAnotherDatabaseIsRefusedBeforeItFencesTheFirst() throws Exception {
        String name = routerName("samename");
        String topics = OutboxContract.unique("samename");
        var first = newDatabase("samename1");
        var other = newDatabase("samename2");
        var config = RouterConfigLoader.parse(OutboxContract.configYaml(first, name, topics, 0) + EXACTLY_ONCE, Map.of());
        var otherConfig = RouterConfigLoader.parse(OutboxContract.configYaml(other, name, topics, 0) + EXACTLY_ONCE, Map.of());
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*")) {
            try (var router = OutboxContract.startRouter(config)) {
                publish(first, kafka, TestEvent.of("Order", "o-1", 1));
                assertThatThrownBy(() -> Router.start(otherConfig).close()).isInstanceOf(SourceSetupException.class)
                        .hasMessageContaining("holds positions of router " + name + " that came from another offsets table")
                        .hasMessageContaining("give each router a name of its own");
                publish(first, kafka, TestEvent.of("Order", "o-1", 2)); // not fenced
                assertThat(router.isReady()).isTrue();
            }
            try (var c = first.connect(); var st = c.createStatement()) {
                st.execute("DELETE FROM " + config.offsets().table() + " WHERE router_name = '" + name + "'");
                c.commit();
            }
            assertThatThrownBy(() -> Router.start(config).close()).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("or this router's offsets table lost its rows").hasMessageContaining("run --accept-gap");
            try (var router = Router.start(config, true)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                publish(first, kafka, TestEvent.of("Order", "o-1", 3));
                assertThat(kafka.settle(Duration.ofSeconds(2))).as("each event once, resumed from the topic's position").hasSize(3);
            }
            // Taken over once: the next start, without the flag, goes on.
            try (var router = OutboxContract.startRouter(config)) {
                publish(first, kafka, TestEvent.of("Order", "o-1", 4));
            }
        }
    }

    /** A shard sharing a partition of the offsets topic could read a stale position: refused, with the fix. */
    @Test
    void anOffsetsTopicWithFewerPartitionsThanShardsIsRefusedWithTheFix() throws Exception {
        var db = newDatabase("eosparts");
        String name = routerName("eosparts");
        String topic = OutboxContract.unique("eosparts-offsets");
        try (var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()))) {
            admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 1, (short) 1)
                    .configs(Map.of("cleanup.policy", "compact")))).all().get();
        }
        String yaml = OutboxContract.configYaml(db, name, OutboxContract.unique("eosparts"), 0)
                .replace("  tables: [public.outbox, public.outbox_binary]\n", "  tables: [public.outbox]\n  postgres: { shards: 2 }\n")
                .replace("  bootstrap-servers: " + OutboxContract.kafka() + "\n", "  bootstrap-servers: " + OutboxContract.kafka()
                        + "\n  offsets-topic: " + topic + "\n") + EXACTLY_ONCE;
        assertThatThrownBy(() -> Router.start(RouterConfigLoader.parse(yaml, Map.of())).close())
                .hasMessageContaining("the offsets topic " + topic + " has 1 partition(s), fewer than the 2 shards")
                .hasMessageContaining("kafka-topics.sh --alter --topic " + topic + " --partitions 2");
    }

    /** {@code run --once} in exactly-once mode: everything committed before the start, committed to Kafka once, then exit 0. */
    @Test
    void runOnceCommitsEverythingCommittedBeforeItStartedThenExitsZero() throws Exception {
        var db = newDatabase("eosonce");
        String topics = OutboxContract.unique("eosonce");
        var config = Files.writeString(dir.resolve("once.yml"), OutboxContract.configYaml(db, routerName("eosonce"), topics, 0) + EXACTLY_ONCE);
        var log = dir.resolve("once.log");
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("first run: %s", log).isZero();
            var expected = new HashSet<UUID>();
            for (int round = 1; round <= 2; round++) {
                for (int i = 0; i < 60; i++) {
                    var e = TestEvent.of("Order", "o-" + (i % 6), (round - 1) * 10 + i / 6 + 1);
                    db.insert(c, e);
                    if (i % 3 == 2) {
                        c.commit();
                    }
                    expected.add(e.id());
                }
                c.commit();
                assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("run %d", round).isZero();
                kafka.awaitIds(expected, Duration.ofSeconds(10)); // committed before the exit
            }
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).as("each of the 120 events exactly once").hasSize(120);
            OutboxContract.assertOrderPerAggregate(received);
        }
    }

    /** {@code offsets show} prints the committed position beside the table's; {@code offsets reset --yes} forgets both. */
    @Test
    void offsetsShowAndResetCoverTheOffsetsTopic() throws Exception {
        var db = newDatabase("eosoffsets");
        String topics = OutboxContract.unique("eosoffsets");
        String name = routerName("eosoffsets");
        var file = Files.writeString(dir.resolve("router.yml"), OutboxContract.configYaml(db, name, topics, 0) + EXACTLY_ONCE);
        var config = RouterConfigLoader.parse(Files.readString(file), Map.of());
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*")) {
            try (var router = OutboxContract.startRouter(config)) {
                publish(db, kafka, TestEvent.of("Order", "o-1", 1));
            }
        }
        var show = cli("offsets", "show", "--config", file.toString());
        assertThat(show.exit()).isZero();
        assertThat(show.out()).contains("router " + name + "  committed to " + config.kafka().offsetsTopic() + " (the table agrees)");
        var reset = cli("offsets", "reset", "--yes", "--config", file.toString());
        assertThat(reset.exit()).as(reset.out()).isZero();
        assertThat(reset.out()).contains("written to the offsets topic " + config.kafka().offsetsTopic() + " too");
        assertThat(new OffsetsTopic(config.kafka()).read(name)).as("forgotten in the topic").isEmpty();
        assertThat(read(config)).as("and in the table").isEmpty();
        assertThat(cli("offsets", "show", "--config", file.toString()).out())
                .contains("router " + name + ": no position committed to the offsets topic");
    }

    private record Cli(int exit, String out) {
    }

    private static Cli cli(String... args) {
        var out = new java.io.ByteArrayOutputStream();
        var old = System.out;
        System.setOut(new java.io.PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            int exit = new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute(args);
            return new Cli(exit, out.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
    }

    private static OffsetTable table(RouterConfig config) {
        return OffsetTable.open(OffsetTableSettings.offsets(config));
    }

    private static Map<String, String> read(RouterConfig config) {
        try (var table = table(config)) {
            return table.read(config.name());
        }
    }

    private static void publish(PostgresOutbox db, KafkaEvents kafka, TestEvent e) throws Exception {
        try (var c = db.connect()) {
            db.insert(c, e);
            c.commit();
        }
        kafka.awaitIds(Set.of(e.id()), Duration.ofSeconds(60));
    }

    /** What the router logs about its offsets at start, in this JVM. */
    private static final class CapturedLog implements AutoCloseable {
        private final ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("io.outboxrouter.app.CommittedPosition");
        private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

        CapturedLog() {
            appender.start();
            logger.addAppender(appender);
        }

        List<String> lines() {
            return appender.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        }

        @Override
        public void close() {
            logger.detachAppender(appender);
        }
    }

    /**
     * One source transaction of 30,000 rows with 1 KB payloads, the first write to four topics that do not exist yet, through
     * a router run as the README says (128 MB of heap): one Kafka transaction, committed whole, and the router goes on.
     */
    @Test
    void aThirtyThousandRowTransactionToNewTopicsIsCommittedWholeInTheRecommendedHeap() throws Exception {
        var db = newDatabase("bigtx");
        String topics = OutboxContract.unique("bigtx");
        int port = OutboxContract.freePort();
        var file = Files.writeString(dir.resolve("big.yml"), OutboxContract.configYaml(db, routerName("bigtx"), topics, port) + EXACTLY_ONCE);
        var log = dir.resolve("big.log");
        try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*");
             var router = RouterProcess.start(file, port, log).awaitReady(Duration.ofSeconds(90))) {
            var ids = new HashSet<UUID>();
            String pad = "x".repeat(1000);
            try (var c = db.connect(); var ps = c.prepareStatement("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, "
                    + "payload) VALUES (?::uuid, ?, ?, 'Big', ?::jsonb)")) {
                for (int i = 0; i < 30_000; i++) {
                    var id = UUID.randomUUID();
                    ids.add(id);
                    ps.setString(1, id.toString());
                    ps.setString(2, "Type" + (i % 4));
                    ps.setString(3, "agg-" + (i % 500));
                    ps.setString(4, "{\"seq\": " + (i / 500 + 1) + ", \"pad\": \"" + pad + "\"}");
                    ps.addBatch();
                    if (i % 1000 == 999) {
                        ps.executeBatch();
                    }
                }
                c.commit();
            }
            try {
                kafka.awaitIds(ids, Duration.ofSeconds(120));
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; router log:\n" + tail(log), e);
            }
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).hasSize(30_000);
            OutboxContract.assertOrderPerAggregate(received);
            assertThat(router.ready()).as("the router streams on").isTrue();
        }
    }

    private static String tail(Path log) throws java.io.IOException {
        var lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
