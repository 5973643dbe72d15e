package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The running self-audit, against rows written where no replication stream can see them: each is reported by the
 * running router with its id within seconds (the audit's lag here is one second), stays in the table for retention, and
 * with {@code on-loss: replay} is published again while the router goes on.
 */
class SelfAuditIT {

    /**
     * @param audit  more settings of {@code outbox.audit}, each starting with a comma
     * @param outbox more lines under {@code outbox}
     * @param source more lines under {@code source}
     */
    private static RouterConfig config(OutboxDatabase db, String name, String topics, String audit, String outbox, String source) {
        // Retention needs the time column on every table, which the second table of the test databases lacks.
        String tables = outbox.contains("retention") ? db.sourceYaml().replaceAll(", [a-z0-9_.]*outbox_binary", "") : db.sourceYaml();
        return RouterConfigLoader.parse("name: " + name + "\n" + tables + source + """
                outbox:
                  audit: { interval: 500ms, lag: 1s%s }
                %s
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(audit, outbox, topics, OutboxContract.kafka()), Map.of());
    }

    private static boolean present(OutboxDatabase db, TestEvent e) throws SQLException {
        try (var c = db.connect(); var ps = c.prepareStatement("SELECT 1 FROM " + db.outboxTable() + " WHERE id = " + db.idParameter())) {
            ps.setString(1, e.id().toString());
            try (var rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /**
     * {@code ALTER TABLE outbox SET UNLOGGED} under a FOR ALL TABLES publication: Postgres stops writing the table's rows
     * to the WAL, so no slot can send them and no watch of the publication sees a change. The audit finds the row, and
     * retention, which deleted the row published before, keeps it.
     */
    @Test
    void aPostgresRowTheWalDoesNotCarryStopsTheRouterWithItsIdAndRetentionKeepsIt() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("auditunlogged"));
        String topics = OutboxContract.unique("auditunlogged");
        String publication = OutboxContract.unique("all_tables");
        db.execute("CREATE PUBLICATION " + publication + " FOR ALL TABLES");
        var config = config(db, OutboxContract.unique("audit-unlogged").replace('_', '-'), topics, ", on-loss: stop", "  retention: 1s",
                "  postgres: { publication: " + publication + " }\n");
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-2", 1);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));
            // Retention deletes a row once the audit proved it published, and the slot passed the position it read it at: a
            // row a second moves the slot on.
            int[] seq = {0};
            Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).until(() -> {
                db.insert(c, TestEvent.of("Order", "o-9", ++seq[0]));
                c.commit();
                return !present(db, before);
            });

            db.execute("ALTER TABLE public.outbox SET UNLOGGED");
            db.insert(c, lost);
            c.commit();
            db.execute("ALTER TABLE public.outbox SET LOGGED");
            db.insert(c, after);
            c.commit();

            String message = RouterStops.failure(router);
            assertThat(message).contains("self-audit found 1 outbox row(s)").contains(lost.id().toString()).contains("--repair")
                    .contains("--accept-gap");
            assertThat(router.isReady()).isFalse();
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).contains(after.id()).doesNotContain(lost.id());
        }
        assertThat(present(db, lost)).as("the lost row is kept for its replay").isTrue();
    }

    /** A MariaDB session with {@code sql_log_bin = 0} writes rows that no binlog reader receives. */
    @Test
    void aMariaDbRowWrittenWithoutTheBinlogStopsTheRouterWithItsId() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("auditnobinlog"));
        String topics = OutboxContract.unique("auditnobinlog");
        var config = config(db, OutboxContract.unique("audit-nobinlog").replace('_', '-'), topics, "", "", "");
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-2", 1);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));

            try (var st = c.createStatement()) {
                st.execute("SET SESSION sql_log_bin = 0");
                db.insert(c, lost);
                c.commit();
                st.execute("SET SESSION sql_log_bin = 1");
            }
            db.insert(c, after);
            c.commit();

            String message = RouterStops.failure(router);
            assertThat(message).contains("self-audit found 1 outbox row(s)").contains(lost.id().toString()).contains("--repair");
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).contains(after.id()).doesNotContain(lost.id());
        }
    }

    /** {@code on-loss: replay}: the lost row is published again at once, marked, and the router streams on. */
    @Test
    void onLossReplayPublishesTheRowAgainAndGoesOn() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("auditreplay"));
        String topics = OutboxContract.unique("auditreplay");
        var config = config(db, OutboxContract.unique("audit-replay").replace('_', '-'), topics, ", on-loss: replay", "", "");
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-2", 1);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));
            try (var st = c.createStatement()) {
                st.execute("SET SESSION sql_log_bin = 0");
                db.insert(c, lost);
                c.commit();
                st.execute("SET SESSION sql_log_bin = 1");
            }
            db.insert(c, after);
            c.commit();

            var received = kafka.awaitIds(Set.of(lost.id(), after.id()), Duration.ofSeconds(60));
            assertThat(received).filteredOn(r -> r.id().equals(lost.id())).singleElement()
                    .satisfies(r -> assertThat(r.header("replayed")).isEqualTo("true"));
            assertThat(router.isReady()).as("still streaming").isTrue();
            var later = TestEvent.of("Order", "o-1", 3);
            db.insert(c, later);
            c.commit();
            kafka.awaitIds(Set.of(later.id()), Duration.ofSeconds(60));
        }
    }

    /**
     * The outbox table taken out of the publication and put back while the router is stopped: the slot skips the rows
     * committed in between, and the next start's audit names them.
     */
    @Test
    void aPublicationFlippedWhileTheRouterIsStoppedIsFoundAfterTheNextStart() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("auditflip"));
        String topics = OutboxContract.unique("auditflip");
        var config = config(db, OutboxContract.unique("audit-flip").replace('_', '-'), topics, "", "", "");
        String publication = config.source().postgres().publication();
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-1", 3);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            try (var router = Router.start(config); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, before);
                c.commit();
                kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));
            }
            try (var c = db.connect()) {
                db.execute("ALTER PUBLICATION " + publication + " DROP TABLE public.outbox");
                db.insert(c, lost);
                c.commit();
                db.execute("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox");
                db.insert(c, after);
                c.commit();
            }
            try (var router = Router.start(config)) {
                String message = RouterStops.failure(router);
                assertThat(message).contains(lost.id().toString()).doesNotContain(before.id().toString());
            }
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).contains(after.id()).doesNotContain(lost.id());
        }
    }

    /**
     * The router's topics changed between two runs (another {@code routing.topic}): the rows the first run published
     * before its audit proved them are matched at the next start with the records in the first run's topics, where they
     * are, and nothing is reported lost.
     */
    @Test
    void aStartWithOtherTopicsMatchesTheEarlierRunsRowsInItsTopics() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("audittopics"));
        String first = OutboxContract.unique("audittopics1");
        String second = OutboxContract.unique("audittopics2");
        String name = OutboxContract.unique("audit-topics").replace('_', '-');
        var events = java.util.stream.IntStream.range(0, 20).mapToObj(i -> TestEvent.of("Order", "o-" + i, 1)).toList();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), first + "\\..*")) {
            // Stopped before the audit stores its proof of these rows (it writes it every ten looks).
            try (var router = Router.start(config(db, name, first, "", "", "")); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                // A first start audits the rows dated after its first look.
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> router.metrics().auditStatus().lastRun() != null);
                for (var e : events) {
                    db.insert(c, e);
                }
                c.commit();
                kafka.awaitIds(events.stream().map(TestEvent::id).collect(java.util.stream.Collectors.toSet()), Duration.ofSeconds(60));
            }
        }
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), second + "\\..*");
             var router = Router.start(config(db, name, second, "", "", "")); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var later = TestEvent.of("Order", "o-0", 2);
            db.insert(c, later);
            c.commit();
            kafka.awaitIds(Set.of(later.id()), Duration.ofSeconds(60));
            // The start's range is matched once its transactions are a lag old: every row of it, with none lost.
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> router.metrics().auditStatus().matched() >= events.size() + 1);
            assertThat(router.metrics().auditStatus().lost()).isZero();
            assertThat(router.isReady()).as("still streaming").isTrue();
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).containsExactly(later.id());
        }
    }
}
