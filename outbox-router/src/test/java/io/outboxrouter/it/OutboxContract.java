package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What users rely on, written once and run against each source database: every committed outbox row arrives
 * once on its topic with its key, headers and payload bytes; rollbacks, updates and deletes publish nothing;
 * order per aggregate equals commit order; nothing is lost across graceful restarts and SIGKILL crashes.
 */
abstract class OutboxContract {
    private static final java.util.regex.Pattern SEQ = java.util.regex.Pattern.compile("\"seq\":\\s*(\\d+)");
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
    @TempDir
    Path dir;

    /** A fresh database with the outbox tables, private to one test. */
    abstract OutboxDatabase newDatabase(String name) throws SQLException;

    static String kafka() {
        return TestServers.kafka().bootstrapServers();
    }

    static String unique(String prefix) {
        return prefix + "_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFFFFFFL);
    }

    static String configYaml(OutboxDatabase db, String name, String topicPrefix, int httpPort) {
        return "name: " + name + "\n" + db.sourceYaml() + """
                outbox:
                  headers: { tracingspancontext: traceparent }
                  audit: { interval: 500ms, lag: 1s }
                routing:
                  topic: "%s.${aggregatetype}"
                kafka:
                  bootstrap-servers: %s
                http:
                  enabled: %s
                  listen: 127.0.0.1:%d
                debezium:
                  slot.retry.delay.ms: "500"
                """.formatted(topicPrefix, kafka(), httpPort > 0, Math.max(httpPort, 0));
    }

    static Router startRouter(OutboxDatabase db, String name, String topicPrefix) throws InterruptedException {
        return startRouter(RouterConfigLoader.parse(configYaml(db, name, topicPrefix, 0), Map.of()));
    }

    static Router startRouter(io.outboxrouter.config.RouterConfig config) throws InterruptedException {
        var router = Router.start(config);
        if (!router.awaitStreaming(Duration.ofSeconds(60))) {
            router.completion().join(); // shows why the engine stopped
            throw new AssertionError("not streaming within 60 s");
        }
        return router;
    }

    // --- 1. routing: topic, key, headers, payload bytes --------------------------------------------------------

    @Test
    void everyCommittedRowArrivesOnceOnItsTopicWithKeyHeadersAndPayloadBytes() throws Exception {
        var db = newDatabase(unique("routing"));
        String topics = unique("routing");
        var written = new ArrayList<TestEvent>();
        var binary = new LinkedHashMap<UUID, byte[]>();
        var config = RouterConfigLoader.parse(configYaml(db, unique("routing-router").replace('_', '-'), topics, 0), Map.of());
        try (var router = startRouter(config);
             var kafka = new KafkaEvents(kafka(), topics + "\\..*");
             var c = db.connect()) {
            var types = List.of("Order", "Customer", "Invoice", "Shipment");
            var seq = new HashMap<String, Integer>();
            // 200 transactions of 1, 4 and 14 rows: 100 x 1 + 50 x 4 + 50 x 14 = 1,000 rows.
            for (int tx = 0; tx < 200; tx++) {
                int size = tx < 100 ? 1 : tx < 150 ? 4 : 14;
                var events = new ArrayList<TestEvent>();
                for (int i = 0; i < size; i++) {
                    String type = types.get((tx + i) % types.size());
                    String aggregate = type.toLowerCase() + "-" + ((tx * 7 + i) % 25);
                    events.add(TestEvent.of(type, aggregate, seq.merge(aggregate, 1, Integer::sum)));
                }
                if (size == 4) {
                    for (var e : events) {
                        db.insert(c, e); // several statements in one transaction
                    }
                } else {
                    db.insertMultiRow(c, events);
                }
                c.commit();
                written.addAll(events);
            }
            // A second outbox table with a binary payload and a column mapped to a header.
            for (int i = 0; i < 20; i++) {
                var id = UUID.randomUUID();
                byte[] payload = new byte[64 + i];
                new Random(i).nextBytes(payload);
                try (var ps = c.prepareStatement("INSERT INTO " + db.binaryTable() + " (id, aggregatetype, aggregateid, type, payload, tracingspancontext) "
                        + "VALUES (" + db.idParameter() + ", 'Blob', ?, 'BlobStored', ?, ?)")) {
                    ps.setString(1, id.toString());
                    ps.setString(2, "blob-" + i);
                    ps.setBytes(3, payload);
                    ps.setString(4, "00-trace-" + i + "-01");
                    ps.executeUpdate();
                }
                binary.put(id, payload);
            }
            c.commit();

            var expected = new HashSet<UUID>();
            written.forEach(e -> expected.add(e.id()));
            expected.addAll(binary.keySet());
            kafka.awaitIds(expected, Duration.ofSeconds(60));
            var received = kafka.settle(Duration.ofSeconds(1));

            assertThat(received).hasSize(1020);
            var byId = received.stream().collect(Collectors.toMap(KafkaEvents.Received::id, r -> r));
            for (var e : written) {
                var r = byId.get(e.id());
                assertThat(r.topic()).isEqualTo(topics + "." + e.aggregateType());
                assertThat(r.key()).isEqualTo(e.aggregateId());
                if (db.jsonKeptAsWritten()) {
                    assertThat(r.value()).isEqualTo(e.payload().getBytes(StandardCharsets.UTF_8));
                } else { // MySQL's JSON type keeps a parsed form: the same JSON, not the same text
                    assertThat(JSON.readTree(r.value())).as(r.valueText()).isEqualTo(JSON.readTree(e.payload()));
                }
                assertThat(r.header("type")).isEqualTo(e.type());
                assertThat(r.header("aggregatetype")).isEqualTo(e.aggregateType());
                assertThat(r.header("source.table")).isEqualTo(db.outboxTable());
                assertThat(r.header("source.position")).isNotBlank();
                assertThat(Instant.parse(r.header("source.commit.time"))).isBefore(Instant.now().plusSeconds(5));
                assertThat(r.headers()).doesNotContainKey("traceparent");
            }
            binary.forEach((id, payload) -> {
                var r = byId.get(id);
                assertThat(r.topic()).isEqualTo(topics + ".Blob");
                assertThat(r.value()).isEqualTo(payload);
                assertThat(r.header("traceparent")).startsWith("00-trace-");
                assertThat(r.header("source.table")).isEqualTo(db.binaryTable());
            });

            // A replay of the same rows gives the streamed records: topic, key, value bytes (MySQL's JSON included) and headers.
            var replayed = new HashMap<UUID, org.apache.kafka.clients.producer.ProducerRecord<byte[], byte[]>>();
            new io.outboxrouter.app.Replay(config).run(java.util.Optional.empty(),
                    rec -> replayed.put(UUID.fromString(new String(rec.headers().lastHeader("id").value(), StandardCharsets.UTF_8)), rec),
                    reason -> {
                        throw new AssertionError(reason);
                    }, new io.outboxrouter.app.ReplayFilter(null, null, null, null, null, "created_at", List.of()));
            var inTables = expected.stream().filter(id -> !byId.get(id).header("source.table").startsWith("message:")).collect(Collectors.toSet());
            assertThat(replayed.keySet()).as("replayed: the rows of outbox tables (messages are not kept)").isEqualTo(inTables);
            replayed.forEach((id, rec) -> {
                var r = byId.get(id);
                assertThat(rec.topic()).isEqualTo(r.topic());
                assertThat(new String(rec.key(), StandardCharsets.UTF_8)).isEqualTo(r.key());
                assertThat(rec.value()).as("replayed value of %s: %s", id, r.valueText()).isEqualTo(r.value());
                for (String header : List.of("type", "aggregatetype", "source.table", "traceparent")) {
                    var h = rec.headers().lastHeader(header);
                    assertThat(h == null ? null : new String(h.value(), StandardCharsets.UTF_8)).as(header).isEqualTo(r.header(header));
                }
            });
        }
    }

    // --- 2. rollback, update, delete, insert-then-delete --------------------------------------------------------

    @Test
    void rollbacksUpdatesAndDeletesPublishNothingButInsertThenDeletePublishes() throws Exception {
        var db = newDatabase(unique("txn"));
        String topics = unique("txn");
        try (var router = startRouter(db, unique("txn-router").replace('_', '-'), topics);
             var kafka = new KafkaEvents(kafka(), topics + "\\..*");
             var c = db.connect()) {
            var rolledBack = List.of(TestEvent.of("Order", "o-1", 1), TestEvent.of("Order", "o-1", 2));
            db.insertMultiRow(c, rolledBack);
            c.rollback();

            var kept = TestEvent.of("Order", "o-2", 1);
            db.insert(c, kept);
            c.commit();
            try (var st = c.createStatement()) {
                st.executeUpdate("UPDATE " + db.outboxTable() + " SET type = 'Changed' WHERE id = '" + kept.id() + "'");
                c.commit();
                st.executeUpdate("DELETE FROM " + db.outboxTable() + " WHERE id = '" + kept.id() + "'");
                c.commit();
            }

            var insertThenDelete = TestEvent.of("Order", "o-3", 1);
            db.insert(c, insertThenDelete);
            try (var st = c.createStatement()) {
                st.executeUpdate("DELETE FROM " + db.outboxTable() + " WHERE id = '" + insertThenDelete.id() + "'");
            }
            c.commit();
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT count(*) FROM " + db.outboxTable())) {
                rs.next();
                assertThat(rs.getInt(1)).as("the outbox table is empty").isZero();
            }

            var sentinel = TestEvent.of("Order", "o-4", 1);
            db.insert(c, sentinel);
            c.commit();

            kafka.awaitIds(Set.of(kept.id(), insertThenDelete.id(), sentinel.id()), Duration.ofSeconds(60));
            var received = kafka.settle(Duration.ofMillis(1500));
            // Three aggregates, so three partitions: order across them is not promised, only within each.
            assertThat(received).extracting(KafkaEvents.Received::id)
                    .containsExactlyInAnyOrder(kept.id(), insertThenDelete.id(), sentinel.id());
            assertThat(received.stream().filter(r -> r.id().equals(kept.id())).findFirst().orElseThrow().header("type"))
                    .as("published as inserted, not as later updated").isEqualTo(kept.type());
        }
    }

    // --- 3. order per aggregate under concurrent writers -------------------------------------------------------

    @Test
    void orderPerAggregateEqualsCommitOrderUnderEightConcurrentWriters() throws Exception {
        var db = newDatabase(unique("order"));
        String topics = unique("order");
        int writers = 8;
        int perWriter = 2_500;
        int aggregates = 200;
        try (var router = startRouter(db, unique("order-router").replace('_', '-'), topics);
             var kafka = new KafkaEvents(kafka(), topics + "\\..*")) {
            ExecutorService pool = Executors.newFixedThreadPool(writers);
            var ids = new ArrayList<Future<List<UUID>>>();
            try {
                for (int w = 0; w < writers; w++) {
                    ids.add(pool.submit(() -> writeSequenced(db, perWriter, aggregates)));
                }
                var expected = new HashSet<UUID>();
                for (var f : ids) {
                    expected.addAll(f.get());
                }
                assertThat(expected).hasSize(writers * perWriter);
                kafka.awaitIds(expected, Duration.ofSeconds(120));
            } finally {
                pool.shutdownNow();
            }
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).hasSize(writers * perWriter);
            assertOrderPerAggregate(received);
        }
    }

    /**
     * Writes events in transactions of 1-3 events of one aggregate. The aggregate's sequence number is taken from a
     * row locked in the same transaction, so sequence order is the aggregate's commit order.
     */
    static List<UUID> writeSequenced(OutboxDatabase db, int count, int aggregates) throws SQLException {
        var ids = new ArrayList<UUID>();
        var random = ThreadLocalRandom.current();
        try (Connection c = db.connect()) {
            while (ids.size() < count) {
                String aggregate = "agg-" + random.nextInt(aggregates);
                int n = Math.min(1 + random.nextInt(3), count - ids.size());
                int last = db.nextSequence(c, aggregate, n);
                var events = new ArrayList<TestEvent>();
                for (int i = n - 1; i >= 0; i--) {
                    events.add(TestEvent.of("Account", aggregate, last - i));
                }
                db.insertMultiRow(c, events);
                c.commit();
                events.forEach(e -> ids.add(e.id()));
            }
        }
        return ids;
    }

    /**
     * Per key, in partition order, the first delivery of each event must follow the aggregate's sequence 1, 2, 3...
     * (duplicates after a crash may repeat earlier events; they never take an event's first place early).
     */
    static void assertOrderPerAggregate(List<KafkaEvents.Received> received) {
        Map<String, List<KafkaEvents.Received>> byKey = received.stream()
                .sorted(java.util.Comparator.comparing(KafkaEvents.Received::partition).thenComparing(KafkaEvents.Received::offset))
                .collect(Collectors.groupingBy(KafkaEvents.Received::key, LinkedHashMap::new, Collectors.toList()));
        Function<KafkaEvents.Received, Integer> seqOf = r -> {
            var m = SEQ.matcher(r.valueText()); // "seq": 1 as written; "seq":1 from MySQL's JSON type
            assertThat(m.find()).as(r.valueText()).isTrue();
            return Integer.parseInt(m.group(1));
        };
        byKey.forEach((key, records) -> {
            assertThat(records.stream().map(KafkaEvents.Received::partition).distinct()).as("one partition for key %s", key).hasSize(1);
            var firstSeen = new ArrayList<Integer>();
            var seen = new HashSet<UUID>();
            for (var r : records) {
                if (seen.add(r.id())) {
                    firstSeen.add(seqOf.apply(r));
                }
            }
            for (int i = 0; i < firstSeen.size(); i++) {
                assertThat(firstSeen.get(i)).as("event %d of aggregate %s", i + 1, key).isEqualTo(i + 1);
            }
        });
    }

    // --- 4. graceful stop and restart --------------------------------------------------------------------------

    /** {@link StopAndRestartTier}: a SIGTERM, rows written while stopped, and a restart. */
    public void gracefulStopThenRestart() throws Exception {
        var db = newDatabase(unique("restart"));
        String topics = unique("restart");
        String name = unique("restart-router").replace('_', '-');
        int port = freePort();
        var config = Files.writeString(dir.resolve("router.yml"), configYaml(db, name, topics, port));
        var log = dir.resolve("router.log");
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*"); var c = db.connect()) {
            var before = new HashSet<UUID>();
            try (var router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(90))) {
                for (int i = 0; i < 100; i++) {
                    var e = TestEvent.of("Order", "o-" + (i % 10), i / 10 + 1);
                    db.insert(c, e);
                    c.commit();
                    before.add(e.id());
                }
                kafka.awaitIds(before, Duration.ofSeconds(60));
                assertThat(router.stop(Duration.ofSeconds(60))).as("exit code after SIGTERM").isZero();
            }
            assertThat(Files.readString(log)).contains("Router " + name + " stopped after publishing 100 events");

            var whileStopped = new HashSet<UUID>();
            for (int i = 0; i < 500; i++) {
                var e = TestEvent.of("Order", "o-" + (i % 10), 11 + i / 10);
                db.insert(c, e);
                if (i % 5 == 4) {
                    c.commit();
                }
                whileStopped.add(e.id());
            }
            c.commit();

            try (var router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(90))) {
                kafka.awaitIds(whileStopped, Duration.ofSeconds(60));
                var received = kafka.settle(Duration.ofMillis(1500));
                assertThat(router.stop(Duration.ofSeconds(60))).isZero();
                assertThat(received).as("each of the 600 events exactly once").hasSize(600);
                assertThat(kafka.receivedIds()).containsAll(before).containsAll(whileStopped);
                assertOrderPerAggregate(received);
            }
        }
    }

    /**
     * A backlog of rows of a quarter of a megabyte, drained by a router with a 64 MB heap: without a queue bounded by the
     * heap the connector would read several hundred of them ahead (its queue holds 8,192 rows) and run out of memory.
     */
    @Test
    void aBacklogOfLargeRowsPassesThroughASmallHeap() throws Exception {
        var db = newDatabase(unique("large"));
        String topics = unique("large");
        String name = unique("large-router").replace('_', '-');
        int port = freePort();
        var config = Files.writeString(dir.resolve("router.yml"), configYaml(db, name, topics, port));
        var log = dir.resolve("router.log");
        var smallHeap = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx64m", "-XX:+ExitOnOutOfMemoryError");
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*"); var c = db.connect()) {
            try (var router = RouterProcess.start(config, port, log, Map.of(), smallHeap).awaitReady(Duration.ofSeconds(90))) {
                assertThat(router.stop(Duration.ofSeconds(60))).isZero(); // its position taken: what follows is a backlog
            }
            var random = new Random(7);
            var written = new HashSet<UUID>();
            for (int i = 0; i < 240; i++) {
                var chars = new char[256 * 1024]; // random letters: the producer's compression does not shrink them
                for (int k = 0; k < chars.length; k++) {
                    chars[k] = (char) ('a' + random.nextInt(26));
                }
                var e = new TestEvent(UUID.randomUUID(), "Order", "o-" + (i % 8), "OrderChanged", i / 8 + 1,
                        "{\"seq\": " + (i / 8 + 1) + ", \"blob\": \"" + new String(chars) + "\"}");
                db.insert(c, e);
                if (i % 10 == 9) {
                    c.commit();
                }
                written.add(e.id());
            }
            c.commit();
            try (var router = RouterProcess.start(config, port, log, Map.of(), smallHeap).awaitReady(Duration.ofSeconds(90))) {
                kafka.awaitIds(written, Duration.ofSeconds(120), router);
                assertThat(router.stop(Duration.ofSeconds(60))).as("exit code after SIGTERM: %s", log).isZero();
            }
            assertThat(Files.readString(log)).doesNotContain("OutOfMemoryError").contains("serial collector, client compiler only");
        }
    }

    /** {@link StopAndRestartTier}: {@code run --once} twice, each after a backlog. */
    public void runOnceDrains() throws Exception {
        var db = newDatabase(unique("once"));
        String topics = unique("once");
        var config = Files.writeString(dir.resolve("once.yml"), configYaml(db, unique("once-router").replace('_', '-'), topics, 0));
        var log = dir.resolve("once.log");
        try (var kafka = new KafkaEvents(kafka(), topics + "\\..*"); var c = db.connect()) {
            assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("first run, nothing to drain: %s", log).isZero();
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
                long started = System.nanoTime();
                assertThat(RouterProcess.runOnce(config, log, Duration.ofSeconds(120))).as("run %d", round).isZero();
                System.out.printf("[%s] run --once %d: %d ms from start to exit%n", getClass().getSimpleName(), round,
                        (System.nanoTime() - started) / 1_000_000);
                // Acknowledged by Kafka before the exit: the consumer only needs its fetch time.
                kafka.awaitIds(expected, Duration.ofSeconds(10));
            }
            var received = kafka.settle(Duration.ofSeconds(1));
            assertThat(received).as("each of the 120 events exactly once").hasSize(120);
            assertOrderPerAggregate(received);
            assertThat(Files.readString(log)).contains("--once: everything committed before the start is published");
        }
    }

    // --- 5. SIGKILL under load -------------------------------------------------------------------------------

    @Test
    void sigkillUnderLoadLosesNothingAndKeepsOrderPerAggregate() throws Exception {
        sigkillUnderLoad("crash", "", 4);
    }

    /** SIGKILLs of a router process under mixed load; returns how many duplicates the consumer read. */
    public long sigkillUnderLoad(String label, String extraYaml, int kills) throws Exception {
        var db = newDatabase(unique(label));
        String topics = unique(label);
        String name = unique(label + "-router").replace('_', '-');
        int port = freePort();
        var config = Files.writeString(dir.resolve("router.yml"), configYaml(db, name, topics, port) + extraYaml);
        var log = dir.resolve("router.log");
        boolean exactlyOnce = !extraYaml.isEmpty();
        // Seeded, and printed, so that a failing run's kill timing can be repeated: -Doutbox.it.crash-seed=<seed>.
        long seed = Long.getLong("outbox.it.crash-seed", System.nanoTime());
        System.out.printf("%s test: seed %d (repeat with -Doutbox.it.crash-seed=%d)%n", label, seed, seed);
        var random = new Random(seed);
        var written = java.util.Collections.synchronizedSet(new HashSet<UUID>());
        var stopLoad = new AtomicBoolean();
        ExecutorService load = Executors.newSingleThreadExecutor();
        RouterProcess router = null;
        try (var kafka = exactlyOnce ? KafkaEvents.readCommitted(kafka(), topics + "\\..*") : new KafkaEvents(kafka(), topics + "\\..*")) {
            // The first start creates the slot: rows committed before it are, by design, not published.
            router = RouterProcess.start(config, port, log).awaitReady(Duration.ofSeconds(90));
            Future<?> writer = load.submit(() -> {
                // Tens of thousands of events between kills, in every transaction shape; a shorter pause only makes the backlog
                // each restart and the final check wait for longer, on a machine the other test fork shares.
                writeMixedLoad(db, written, stopLoad, new Random(seed), 5);
                return null;
            });
            for (int kill = 1; kill <= kills; kill++) {
                Thread.sleep(1_000 + random.nextInt(3_000));
                kafka.poll();
                router.kill();
                System.out.printf("%s test: SIGKILL %d of %d with %d events written%n", label, kill, kills, written.size());
                Thread.sleep(random.nextInt(1_000));
                router = RouterProcess.start(config, port, log);
                router.awaitReady(Duration.ofSeconds(90));
            }
            Thread.sleep(1_000);
            stopLoad.set(true);
            writer.get();
            kafka.awaitIds(Set.copyOf(written), Duration.ofSeconds(120));
            var received = kafka.settle(Duration.ofSeconds(2));
            assertThat(router.stop(Duration.ofSeconds(60))).isZero();

            long duplicates = received.size() - kafka.receivedIds().size();
            System.out.printf("%s test: %d events written, %d records read, %d distinct, %d duplicates (%.2f%%), %d SIGKILLs%n",
                    label, written.size(), received.size(), kafka.receivedIds().size(), duplicates, 100.0 * duplicates / written.size(), kills);
            assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(written);
            assertOrderPerAggregate(received);
            return duplicates;
        } finally {
            stopLoad.set(true);
            load.shutdownNow();
            if (router != null) {
                router.close(); // a failed run must not leave a router process behind
            }
        }
    }

    // --- 6. Kafka crashes mid-stream ------------------------------------------------------------------------

    /** SIGKILL of the broker under steady load, restarted 3 s later, ridden out in-process; returns the duplicates read. */
    public long kafkaCrashMidStream(String label, String extraYaml) throws Exception {
        var db = newDatabase(unique(label));
        String topics = unique(label);
        String name = unique(label + "-router").replace('_', '-');
        var written = java.util.Collections.synchronizedSet(new HashSet<UUID>());
        var stopLoad = new AtomicBoolean();
        ExecutorService load = Executors.newSingleThreadExecutor();
        try (var broker = io.outboxrouter.testing.KafkaProcess.start(dir.resolve("kafka"))) {
            String yaml = configYaml(db, name, topics, 0).replace(kafka(), broker.bootstrapServers()) + extraYaml;
            if (!extraYaml.isEmpty()) { // short timeouts: the outage fails the transaction instead of being waited out
                yaml = yaml.replace("  bootstrap-servers: " + broker.bootstrapServers() + "\n", "  bootstrap-servers: " + broker.bootstrapServers()
                        + "\n  producer: { delivery.timeout.ms: \"3000\", request.timeout.ms: \"1000\", max.block.ms: \"2000\" }\n");
            }
            var config = RouterConfigLoader.parse(yaml, Map.of());
            try (var router = Router.start(config);
                 var kafka = extraYaml.isEmpty() ? new KafkaEvents(broker.bootstrapServers(), topics + "\\..*")
                         : KafkaEvents.readCommitted(broker.bootstrapServers(), topics + "\\..*")) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                Future<?> writer = load.submit(() -> {
                    writeSteadily(db, written, stopLoad);
                    return null;
                });
                Thread.sleep(1_500);
                broker.kill();
                System.out.printf("%s: SIGKILL of the broker with %d events written%n", label, written.size());
                Thread.sleep(extraYaml.isEmpty() ? 3_000 : 6_000); // the load goes on: the router retries, publishes nothing, skips nothing
                broker.restart();
                long restarted = System.nanoTime();
                Thread.sleep(1_000);
                stopLoad.set(true);
                writer.get();
                kafka.awaitIds(Set.copyOf(written), Duration.ofSeconds(120));
                long caughtUp = System.nanoTime();
                var received = kafka.settle(Duration.ofSeconds(2));
                assertThat(router.completion()).as("rode the outage out in-process").isNotDone();
                long duplicates = received.size() - kafka.receivedIds().size();
                System.out.printf("%s: %d events written, %d duplicates, caught up %d ms after the broker's restart%n",
                        label, written.size(), duplicates, (caughtUp - restarted) / 1_000_000);
                assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(written);
                assertOrderPerAggregate(received);
                // A loose bound, far above what the router takes: the publisher tries a returned broker within seconds.
                assertThat(Duration.ofNanos(caughtUp - restarted)).as("caught up after the broker's restart").isLessThan(Duration.ofSeconds(30));
                if (!extraYaml.isEmpty()) {
                    // The outage failed commits, which were retried: as a commit when it timed out, or aborted and sent
                    // again in a new transaction when its records expired (which of the two depends on the timing).
                    System.out.printf("%s: %d retries, %d transactions aborted and sent again%n", label, router.metrics().retriesTotal(),
                            router.metrics().kafkaTransactionsAborted());
                    assertThat(router.metrics().retriesTotal()).as("the outage failed commits, retried").isPositive();
                }
                return duplicates;
            }
        } finally {
            stopLoad.set(true);
            load.shutdownNow();
        }
    }

    /**
     * One writer, so program order is commit order: single-row transactions, multi-statement transactions,
     * 50-row multi-row INSERTs and 500-row bulk loads (COPY), events spread over 100 aggregates.
     */
    /** About 400 events a second, in transactions of one and of three rows, over 50 aggregates, until stopped. */
    static void writeSteadily(OutboxDatabase db, Set<UUID> written, AtomicBoolean stop) throws SQLException, InterruptedException {
        var seq = new HashMap<String, Integer>();
        var random = new Random(1);
        try (var c = db.connect()) {
            for (int round = 0; !stop.get(); round++) {
                var events = new ArrayList<TestEvent>();
                for (int i = 0; i < (round % 2 == 0 ? 1 : 3); i++) {
                    String aggregate = "acct-" + random.nextInt(50);
                    events.add(TestEvent.of("Account", aggregate, seq.merge(aggregate, 1, Integer::sum)));
                }
                db.insertMultiRow(c, events);
                c.commit();
                events.forEach(e -> written.add(e.id()));
                Thread.sleep(5);
            }
        }
    }

    /** @param pauseMillis between transactions: a longer pause writes a smaller backlog for the same kills */
    static void writeMixedLoad(OutboxDatabase db, Set<UUID> written, AtomicBoolean stop, Random random, long pauseMillis)
            throws SQLException, InterruptedException {
        var seq = new HashMap<String, Integer>();
        Function<Integer, List<TestEvent>> next = n -> {
            var events = new ArrayList<TestEvent>(n);
            for (int i = 0; i < n; i++) {
                String aggregate = "acct-" + random.nextInt(100);
                events.add(TestEvent.of("Account", aggregate, seq.merge(aggregate, 1, Integer::sum)));
            }
            return events;
        };
        try (var c = db.connect()) {
            for (long round = 0; !stop.get(); round++) {
                List<TestEvent> events;
                switch ((int) (round % 10)) {
                    case 6, 7 -> db.insertMultiRow(c, events = next.apply(50));
                    case 8 -> db.insertBulk(c, events = next.apply(500));
                    case 9 -> {
                        events = next.apply(5);
                        for (var e : events) {
                            db.insert(c, e);
                        }
                    }
                    default -> db.insert(c, (events = next.apply(1)).get(0));
                }
                c.commit();
                events.forEach(e -> written.add(e.id()));
                Thread.sleep(pauseMillis);
            }
        }
    }

    // --- latency, printed -------------------------------------------------------------------------------------

    /** {@link LatencyProbeTier}: prints commit-to-consumer latency of single-row transactions, for the record. */
    public void latencyProbe() throws Exception {
        var db = newDatabase(unique("latency"));
        String topics = unique("latency");
        try (var router = startRouter(db, unique("latency-router").replace('_', '-'), topics);
             var kafka = new KafkaEvents(kafka(), topics + "\\..*");
             var c = db.connect()) {
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
            System.out.printf("latency probe (%s, single-row transactions, %d events, commit -> consumer): "
                            + "p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms%n", getClass().getSimpleName(), us.length,
                    us[us.length / 2] / 1000.0, us[us.length * 9 / 10] / 1000.0, us[us.length * 99 / 100] / 1000.0,
                    us[us.length - 1] / 1000.0);
            assertThat(kafka.receivedIds()).hasSize(301);
        }
    }

    static int freePort() throws IOException {
        try (var s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
