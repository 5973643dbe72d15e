package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The database changed under a running Postgres router so that its slot stops sending outbox rows: the router stops
 * within seconds, names the rows that may not be published, refuses to start again until the loss is accepted, and
 * {@code replay --from-xid} publishes exactly those rows.
 */
class PostgresLiveDriftIT {
    private static final Pattern FROM_XID = Pattern.compile("--from-xid (\\d+)");

    @TempDir
    Path dir;

    private Path config(PostgresOutbox db, String prefix, String topics) throws Exception {
        return Files.writeString(dir.resolve(prefix + ".yml"), "name: " + OutboxContract.unique(prefix).replace('_', '-') + "\n"
                + db.sourceYaml() + """
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(topics, OutboxContract.kafka()));
    }

    private static final String OUTBOX = """
            CREATE TABLE public.outbox (
              id uuid PRIMARY KEY,
              aggregatetype varchar(255) NOT NULL,
              aggregateid varchar(255) NOT NULL,
              type varchar(255) NOT NULL,
              payload jsonb,
              created_at timestamptz NOT NULL DEFAULT now(),
              tracingspancontext varchar(256))""";

    /**
     * A migration that re-creates the outbox table (in one transaction), or a publication edited to leave it out: the
     * slot sends none of its rows from then on, and adding the table back does not bring them back.
     */
    @ParameterizedTest
    @ValueSource(strings = {"recreated", "unpublished"})
    void anOutboxTableThatLeavesThePublicationStopsTheRouterWithTheRowsToReplay(String change) throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("live" + change));
        String topics = OutboxContract.unique("live" + change);
        var file = config(db, "live-" + change, topics);
        var config = RouterConfigLoader.load(file, Map.of());
        String publication = config.source().postgres().publication();
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            String message;
            try (var router = Router.start(config); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, before);
                c.commit();
                kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));
                // The range a stop names starts at the router's last look that found everything in order (every 2 s): give it
                // two, so that the range shows it leaves out what was published before the change.
                Awaitility.await().pollDelay(Duration.ofSeconds(5)).until(() -> true);

                try (var st = c.createStatement()) {
                    if (change.equals("recreated")) {
                        st.execute("DROP TABLE public.outbox");
                        st.execute(OUTBOX);
                    } else {
                        st.execute("ALTER PUBLICATION " + publication + " DROP TABLE public.outbox");
                    }
                }
                c.commit();
                db.insert(c, lost);
                c.commit();

                message = RouterStops.failure(router);
                assertThat(message).contains(change.equals("recreated") ? "outbox table public.outbox was dropped and created again"
                        : "outbox table public.outbox was removed from publication " + publication)
                        .contains("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox").contains("--accept-gap")
                        .containsPattern(FROM_XID);
                assertThat(router.isReady()).as("unready once stopped").isFalse();
            }
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());

            db.execute("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox");
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("the router stopped at").hasMessageContaining("--from-xid").hasMessageContaining("--accept-gap");
            assertThat(RouterStops.cli("check", "--config", file.toString())).contains("FAIL  stored position: the router stopped at");

            var after = TestEvent.of("Order", "o-1", 3);
            try (var router = Router.start(config, true); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }

            var xid = FROM_XID.matcher(message);
            assertThat(xid.find()).isTrue();
            String dryRun = RouterStops.cli("replay", "--config", file.toString(), "--from-xid", xid.group(1), "--dry-run");
            assertThat(dryRun).contains(lost.id().toString()).doesNotContain(before.id().toString());
            RouterStops.cli("replay", "--config", file.toString(), "--from-xid", xid.group(1));
            var replayed = kafka.awaitIds(Set.of(lost.id()), Duration.ofSeconds(60));
            assertThat(replayed).filteredOn(r -> r.id().equals(lost.id())).allSatisfy(r -> assertThat(r.header("replayed")).isEqualTo("true"));
        }
    }

    /**
     * The same migration while no router runs: the table is re-created and added back to the publication before the next
     * start. The catalog the router streamed with is kept in its offsets table, so the start refuses with the rows to
     * replay, instead of taking the new table for the one it always read.
     */
    @Test
    void anOutboxTableRecreatedWhileTheRouterIsStoppedIsNamedAtTheNextStart() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("downrecreate"));
        String topics = OutboxContract.unique("downrecreate");
        var file = config(db, "down-recreate", topics);
        var config = RouterConfigLoader.load(file, Map.of());
        String publication = config.source().postgres().publication();
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            try (var router = Router.start(config); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, before);
                c.commit();
                kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> kept(db, config.offsets().table(), config.name()));
            }
            try (var c = db.connect(); var st = c.createStatement()) {
                st.execute("DROP TABLE public.outbox");
                st.execute(OUTBOX);
                c.commit();
                db.insert(c, lost);
                c.commit();
                st.execute("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox");
                c.commit();
            }

            String refused = refusal(config);
            assertThat(refused).contains("while the router was stopped, outbox table public.outbox was dropped and created again")
                    .contains("--accept-gap").containsPattern(FROM_XID);
            assertThat(RouterStops.cli("check", "--config", file.toString()))
                    .contains("FAIL  stored position: while the router was stopped");

            var xid = FROM_XID.matcher(refused);
            assertThat(xid.find()).isTrue();
            String dryRun = RouterStops.cli("replay", "--config", file.toString(), "--from-xid", xid.group(1), "--dry-run");
            assertThat(dryRun).contains(lost.id().toString());
            RouterStops.cli("replay", "--config", file.toString(), "--from-xid", xid.group(1));
            kafka.awaitIds(Set.of(lost.id()), Duration.ofSeconds(60));

            var after = TestEvent.of("Order", "o-1", 3);
            try (var router = Router.start(config, true); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
            // Accepted once: the next start compares with the new table and goes on.
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            }
        }
    }

    private static String refusal(io.outboxrouter.config.RouterConfig config) {
        try (var router = Router.start(config)) {
            throw new AssertionError("started: " + router);
        } catch (SourceSetupException e) {
            return e.getMessage();
        }
    }

    private static boolean kept(PostgresOutbox db, String table, String router) throws Exception {
        try (var c = db.connect(); var ps = c.prepareStatement("SELECT 1 FROM " + table
                + " WHERE router_name = ? AND offset_key = 'outbox-router.catalog'")) {
            ps.setString(1, router);
            try (var rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /**
     * A slot invalidated by max_slot_wal_keep_size while a long transaction pins it: the router stops, instead of
     * Debezium's half hour of retries with the health check saying "still trying", and check and start refuse the slot.
     */
    @Test
    void aSlotInvalidatedByTheServerStopsTheRouterAndIsRefusedAtStartAndByCheck() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("lostslot"));
        String topics = OutboxContract.unique("lostslot");
        var file = config(db, "lost-slot", topics);
        var config = RouterConfigLoader.load(file, Map.of());
        String slot = config.source().postgres().slot();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config);
             var open = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var first = TestEvent.of("Order", "o-1", 1);
            try (var c = db.connect()) {
                db.insert(c, first);
                c.commit();
            }
            kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));
            // An open transaction holds the slot's restart position back while WAL is written past the limit.
            db.insert(open, TestEvent.of("Order", "o-2", 1));
            try {
                system(db, "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
                Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
                    db.execute("CREATE TABLE IF NOT EXISTS filler (v text)");
                    db.execute("INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 3000)");
                    system(db, "SELECT pg_switch_wal()");
                    system(db, "CHECKPOINT");
                    return "lost".equals(walStatus(db, slot));
                });
            } finally {
                system(db, "ALTER SYSTEM RESET max_slot_wal_keep_size");
            }
            open.commit();

            assertThat(RouterStops.failure(router)).contains("replication slot " + slot + " was invalidated by the server")
                    .contains("pg_drop_replication_slot('" + slot + "')").contains("max_slot_wal_keep_size").containsPattern(FROM_XID);
        }
        assertThat(RouterStops.cli("check", "--config", file.toString())).contains("FAIL  replication slot: replication slot " + slot
                + " was invalidated");
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("was invalidated by the server").hasMessageContaining("pg_drop_replication_slot");
        db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
        try (var router = Router.start(config, true)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
        }
    }

    /** A statement that cannot run in a transaction block, then a reload of the server's settings. */
    private static void system(PostgresOutbox db, String sql) throws Exception {
        try (var c = db.connect(); var st = c.createStatement()) {
            c.setAutoCommit(true);
            st.execute(sql);
            st.execute("SELECT pg_reload_conf()");
        }
    }

    private static String walStatus(PostgresOutbox db, String slot) throws Exception {
        try (var c = db.connect(); var st = c.createStatement();
             var rs = st.executeQuery("SELECT wal_status FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    /**
     * A quiet outbox on a busy database, with no setting: the router's heartbeat message moves the slot's confirmed
     * position past the WAL the other tables write, so the server does not keep it for the slot.
     */
    @Test
    void aQuietOutboxOnABusyDatabaseDoesNotPinTheWal() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("quietpg"));
        var config = RouterConfigLoader.load(config(db, "quiet-pg", OutboxContract.unique("quietpg")), Map.of());
        String slot = config.source().postgres().slot();
        try (var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.execute("CREATE TABLE busy (v text)");
            String mark;
            try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_current_wal_lsn()::text")) {
                rs.next();
                mark = rs.getString(1);
            }
            Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).until(() -> {
                db.execute("INSERT INTO busy SELECT repeat('x', 200) FROM generate_series(1, 500)");
                try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT confirmed_flush_lsn >= '"
                        + mark + "'::pg_lsn FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
                    return rs.next() && rs.getBoolean(1);
                }
            });
        }
    }
}
