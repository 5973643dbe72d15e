package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * State and configuration that changed behind the router's back, on Postgres: refused loudly with the fix, never a
 * silent start-over (a dropped slot, lost offsets, a table named otherwise, a missing column), and what it supports
 * (a partitioned outbox table).
 */
class PostgresDriftIT {
    @TempDir
    Path dir;

    private String yaml(PostgresOutbox db, String name, String topics) {
        return "name: " + name + "\n" + db.sourceYaml() + """
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(topics, OutboxContract.kafka());
    }

    /** Runs the router until one event is published and its position stored, then stops it. */
    private static void runOnce(RouterConfig config, PostgresOutbox db, KafkaEvents kafka, TestEvent event) throws Exception {
        try (var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, event);
            c.commit();
            kafka.awaitIds(Set.of(event.id()), Duration.ofSeconds(60));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> router.metrics().lastOffsetStored() != null);
        }
    }

    private static String check(Path file) {
        return RouterStops.cli("check", "--config", file.toString());
    }

    @Test
    void aSlotDroppedWhileStoppedIsRefusedWithTheLossNamedAndAcceptedOnlyWithAcceptGap() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("slotgone"));
        String topics = OutboxContract.unique("slotgone");
        String name = OutboxContract.unique("slotgone-router");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, name.replace('_', '-'), topics));
        var config = RouterConfigLoader.load(file, Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 1));
            db.execute("SELECT pg_drop_replication_slot('" + config.source().postgres().slot() + "')");
            var lost = TestEvent.of("Order", "o-1", 2); // committed while there is no slot: gone from the stream
            try (var c = db.connect()) {
                db.insert(c, lost);
                c.commit();
            }

            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("replication slot " + config.source().postgres().slot() + " does not exist")
                    .hasMessageContaining("stored position ").hasMessageContaining("--accept-gap");
            assertThat(check(file)).contains("FAIL  stored position: replication slot");

            var after = TestEvent.of("Order", "o-1", 3);
            try (var router = Router.start(config, true); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
            // Accepted once: the next start is an ordinary one.
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            }
        }
    }

    /**
     * A publication dropped while the router is stopped is not created again behind its slot: the slot decodes each change
     * with the catalog as it was when it was written, and pgoutput would fail on everything before the new publication.
     */
    @Test
    void aPublicationDroppedWhileStoppedIsRefusedNotCreatedBehindTheSlot() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("pubgone"));
        String topics = OutboxContract.unique("pubgone");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("pubgone-router").replace('_', '-'), topics));
        var config = RouterConfigLoader.load(file, Map.of());
        String slot = config.source().postgres().slot();
        String publication = config.source().postgres().publication();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 1));
            db.execute("DROP PUBLICATION " + publication);
            try (var c = db.connect()) {
                db.insert(c, TestEvent.of("Order", "o-1", 2));
                c.commit();
            }

            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("publication " + publication + " is missing while slot " + slot + " exists")
                    .hasMessageContaining("pg_drop_replication_slot").hasMessageContaining("--accept-gap").hasMessageContaining("replay");
            assertThat(check(file)).contains("FAIL  publication: publication " + publication + " is missing");
            try (var c = db.connect(); var st = c.createStatement();
                 var rs = st.executeQuery("SELECT count(*) FROM pg_publication WHERE pubname = '" + publication + "'")) {
                rs.next();
                assertThat(rs.getInt(1)).as("not created behind the slot").isZero();
            }

            // The fix as the message gives it: drop the slot, start once accepting the gap.
            db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
            var after = TestEvent.of("Order", "o-1", 3);
            try (var router = Router.start(config, true); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
        }
    }

    @Test
    void aSlotDroppedAndCreatedAgainWhileStoppedIsRefusedAsAheadOfTheStoredPosition() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("slotnew"));
        String topics = OutboxContract.unique("slotnew");
        String name = OutboxContract.unique("slotnew-router");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, name.replace('_', '-'), topics));
        var config = RouterConfigLoader.load(file, Map.of());
        String slot = config.source().postgres().slot();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 1));
            // A clean restart is not a drift: the slot is never confirmed beyond the stored position.
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 2));
            db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
            var lost = TestEvent.of("Order", "o-1", 3); // between the two slots: in neither
            try (var c = db.connect()) {
                db.insert(c, lost);
                c.commit();
            }
            db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");

            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("replication slot " + slot + " is at ")
                    .hasMessageContaining("ahead of router").hasMessageContaining("--accept-gap");
            assertThat(check(file)).contains("FAIL  stored position: replication slot " + slot + " is at ");

            var after = TestEvent.of("Order", "o-1", 4);
            try (var router = Router.start(config, true); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
        }
    }

    /**
     * A stored position past the end of the server's WAL comes from another history: a standby promoted before it
     * received what the router had read, or a database restored to an earlier point. Resuming there would skip this
     * server's transactions up to it: refused, named, and accepted only with --accept-gap.
     */
    @Test
    void aStoredPositionAheadOfTheServersWalIsRefusedAsAnotherHistory() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("otherhist"));
        String topics = OutboxContract.unique("otherhist");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("otherhist-router").replace('_', '-'), topics));
        var config = RouterConfigLoader.load(file, Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 1));
            // As a promoted standby's copy of an offsets table kept elsewhere would read: a position this WAL never reached.
            db.execute("UPDATE outbox_router_offsets SET offset_value = jsonb_set(offset_value::jsonb, '{lsn}', '999999999999999')::text "
                    + "WHERE router_name = '" + config.name() + "' AND offset_key LIKE '[%'");
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("is ahead of this server's WAL").hasMessageContaining("--accept-gap");
            assertThat(check(file)).contains("FAIL  stored position: router " + config.name() + "'s stored position");

            var after = TestEvent.of("Order", "o-1", 2);
            try (var router = Router.start(config, true); var c = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
        }
    }

    /**
     * The same while the router runs: its walsender ended, its slot dropped and created again by hand. Debezium restarts
     * its task inside the process, and its check of the stored position against the slot (the slot's restart position
     * is after it) fails the task: the router stops, instead of streaming on from the new slot past what was committed
     * in between. (Had the restart found no slot, Debezium would create one, and the same check fails.)
     */
    @Test
    void aSlotDroppedAndCreatedAgainWhileRunningStopsTheRouter() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("slotrun"));
        String topics = OutboxContract.unique("slotrun");
        String name = OutboxContract.unique("slotrun-router");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, name.replace('_', '-'), topics)
                + "debezium: { slot.retry.delay.ms: \"200\", slot.max.retries: \"3\" }\n");
        var config = RouterConfigLoader.load(file, Map.of());
        String slot = config.source().postgres().slot();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var first = TestEvent.of("Order", "o-1", 1);
            db.insert(c, first);
            c.commit();
            kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> router.metrics().lastOffsetStored() != null);

            var lost = TestEvent.of("Order", "o-1", 2); // committed while there is no slot: in neither
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
                db.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '" + slot
                        + "' AND active_pid IS NOT NULL");
                db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
                return true;
            });
            db.insert(c, lost);
            c.commit();
            db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");

            assertThatThrownBy(() -> router.completion().get(180, java.util.concurrent.TimeUnit.SECONDS))
                    .hasStackTraceContaining("no longer available on the server");
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
        }
    }

    /**
     * A publication dropped under a running router stops it with the fix, whether it stays dropped (Debezium's restart
     * then fails in words of its own) or is created again (Debezium would restart its task for ever).
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aPublicationDroppedWhileRunningStopsTheRouterWithTheFix(boolean createdAgain) throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("pubrun"));
        String topics = OutboxContract.unique("pubrun");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("pubrun-router").replace('_', '-'), topics));
        var config = RouterConfigLoader.load(file, Map.of());
        String publication = config.source().postgres().publication();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var first = TestEvent.of("Order", "o-1", 1);
            db.insert(c, first);
            c.commit();
            kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));

            db.execute("DROP PUBLICATION " + publication);
            var whileDropped = TestEvent.of("Order", "o-1", 2);
            db.insert(c, whileDropped);
            c.commit();
            if (createdAgain) {
                db.execute("CREATE PUBLICATION " + publication + " FOR TABLE public.outbox, public.outbox_binary");
            }
            var after = TestEvent.of("Order", "o-1", 3);
            db.insert(c, after);
            c.commit();

            assertThatThrownBy(() -> router.completion().get(120, java.util.concurrent.TimeUnit.SECONDS))
                    .hasStackTraceContaining("While the router ran, publication " + publication + " was dropped"
                            + (createdAgain ? " and created again" : ""))
                    .hasStackTraceContaining("pg_drop_replication_slot").hasStackTraceContaining("--accept-gap")
                    .hasStackTraceContaining("replay");
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id)
                    .as("nothing past the change the slot cannot decode").doesNotContain(whileDropped.id(), after.id());
        }
    }

    @Test
    void offsetsDeletedOrTruncatedWhileTheSlotRemainsResumeFromTheSlotAndLoseNothing() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("offsetsgone"));
        String topics = OutboxContract.unique("offsetsgone");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("offsetsgone-router").replace('_', '-'), topics));
        var config = RouterConfigLoader.load(file, Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 1));
            db.execute("DELETE FROM outbox_router_offsets WHERE router_name = '" + config.name() + "' AND offset_key LIKE '[%'");
            var whileDeleted = TestEvent.of("Order", "o-1", 2); // committed while stopped, its position gone
            runOnce(config, db, kafka, whileDeleted);

            db.execute("TRUNCATE outbox_router_offsets");
            var whileTruncated = TestEvent.of("Order", "o-1", 3);
            try (var c = db.connect()) {
                db.insert(c, whileTruncated);
                c.commit();
            }
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).as("the slot still holds the stream").isTrue();
                kafka.awaitIds(Set.of(whileTruncated.id()), Duration.ofSeconds(60));
            }
            assertThat(kafka.receivedIds()).contains(whileDeleted.id(), whileTruncated.id());
        }
    }

    /**
     * {@code snapshot: initial} with a slot and no stored position (its offsets truncated): the snapshot publishes the rows
     * in the table again, and a row inserted and deleted while the router was stopped (the insert-then-delete pattern,
     * which no snapshot sees) still comes from the slot.
     */
    @Test
    void anInitialSnapshotWithASlotButNoStoredPositionLosesNothingTheSnapshotCannotSee() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("snapslot"));
        String topics = OutboxContract.unique("snapslot");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("snapslot-router").replace('_', '-'),
                topics).replace("  kind: postgres\n", "  kind: postgres\n  snapshot: initial\n"));
        var config = RouterConfigLoader.load(file, Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            var first = TestEvent.of("Order", "o-1", 1);
            runOnce(config, db, kafka, first);
            db.execute("TRUNCATE outbox_router_offsets");
            var deleted = TestEvent.of("Order", "o-1", 2);
            var kept = TestEvent.of("Order", "o-1", 3);
            try (var c = db.connect(); var st = c.createStatement()) {
                db.insert(c, deleted);
                st.execute("DELETE FROM public.outbox WHERE id = '" + deleted.id() + "'");
                c.commit();
                db.insert(c, kept);
                c.commit();
            }
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                kafka.awaitIds(Set.of(deleted.id(), kept.id()), Duration.ofSeconds(60));
            }
            assertThat(kafka.receivedIds()).contains(first.id(), deleted.id(), kept.id());
        }
    }

    /**
     * {@code snapshot: initial}, a first start stopped before its snapshot stored a position (its mark still in the
     * offsets table): the next start takes the snapshot again, so the rows already in the table are published.
     */
    @Test
    void aFirstStartStoppedBeforeItsSnapshotStoredAPositionTakesTheSnapshotAgain() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("snapagain"));
        String topics = OutboxContract.unique("snapagain");
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("snapagain-router").replace('_', '-'),
                topics).replace("  kind: postgres\n", "  kind: postgres\n  snapshot: initial\n"));
        var config = RouterConfigLoader.load(file, Map.of());
        var before = TestEvent.of("Order", "o-1", 1);
        try (var c = db.connect()) {
            db.insert(c, before);
            c.commit();
        }
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            runOnce(config, db, kafka, TestEvent.of("Order", "o-1", 2));
            assertThat(kafka.receivedIds()).contains(before.id());
            // As a first start leaves it when stopped before its snapshot stored anything: a slot, no position, the mark.
            db.execute("DELETE FROM outbox_router_offsets WHERE router_name = '" + config.name() + "'");
            db.execute("INSERT INTO outbox_router_offsets (router_name, offset_key, offset_value, updated_at) VALUES ('" + config.name()
                    + "', 'outbox-router.first-start', '{}', CURRENT_TIMESTAMP)");
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() ->
                        kafka.settle(Duration.ofMillis(200)).stream().filter(r -> r.id().equals(before.id())).count() == 2);
            }
        }
    }

    @Test
    void aTableNameThePostgresFoldsOtherwiseIsRefusedWithTheRightName() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("cased"));
        var config = RouterConfigLoader.parse(yaml(db, OutboxContract.unique("cased-router").replace('_', '-'), "cased")
                .replace("tables: [public.outbox, public.outbox_binary]", "tables: [public.Outbox]"), Map.of());
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("source.tables names public.Outbox, but the table is called public.outbox")
                .hasMessageContaining("source.tables: [public.outbox]");
    }

    @Test
    void aHeaderColumnTheTableLacksIsRefusedAtStartAndByCheck() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("nocolumn"));
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("nocolumn-router").replace('_', '-'), "nocolumn")
                + "outbox: { headers: { tenant_id: tenant } }\n");
        var config = RouterConfigLoader.load(file, Map.of());
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("table public.outbox has no column tenant_id");
        assertThat(check(file)).contains("FAIL  columns of public.outbox: table public.outbox has no column tenant_id");
    }

    @Test
    void aPartitionedOutboxTablePublishesTheRowsOfEveryPartition() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("partitioned"));
        db.execute("""
                CREATE TABLE public.outbox_parted (
                  id uuid NOT NULL, aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL,
                  type varchar(255) NOT NULL, payload jsonb, PRIMARY KEY (id, aggregateid)
                ) PARTITION BY HASH (aggregateid)""");
        db.execute("CREATE TABLE public.outbox_parted_0 PARTITION OF public.outbox_parted FOR VALUES WITH (MODULUS 2, REMAINDER 0)");
        db.execute("CREATE TABLE public.outbox_parted_1 PARTITION OF public.outbox_parted FOR VALUES WITH (MODULUS 2, REMAINDER 1)");
        String topics = OutboxContract.unique("partitioned");
        var config = RouterConfigLoader.parse(yaml(db, OutboxContract.unique("partitioned-router").replace('_', '-'), topics)
                .replace("tables: [public.outbox, public.outbox_binary]", "tables: [public.outbox_parted]"), Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var events = new java.util.ArrayList<TestEvent>();
            try (var ps = c.prepareStatement("INSERT INTO public.outbox_parted (id, aggregatetype, aggregateid, type, payload) "
                    + "VALUES (?::uuid, ?, ?, ?, ?::jsonb)")) {
                for (int i = 1; i <= 20; i++) {
                    var e = TestEvent.of("Order", "o-" + i, 1);
                    ps.setString(1, e.id().toString());
                    ps.setString(2, e.aggregateType());
                    ps.setString(3, e.aggregateId());
                    ps.setString(4, e.type());
                    ps.setString(5, e.payload());
                    ps.executeUpdate();
                    events.add(e);
                }
            }
            c.commit();
            try (var st = c.createStatement();
                 var rs = st.executeQuery("SELECT count(DISTINCT tableoid) FROM public.outbox_parted")) {
                rs.next();
                assertThat(rs.getInt(1)).as("rows in both partitions").isEqualTo(2);
            }
            kafka.awaitIds(events.stream().map(TestEvent::id).collect(java.util.stream.Collectors.toSet()), Duration.ofSeconds(60));
            assertThat(kafka.all()).allSatisfy(r -> assertThat(r.header("source.table")).isEqualTo("public.outbox_parted"));
        }
    }

    /**
     * An existing publication that would hand the router rows without what it reads is refused at start and by check, with
     * the statement that fixes it: a column list (Postgres 15+) without the payload, a publish option without inserts.
     */
    @Test
    void aPublicationWithoutInsertsOrAColumnTheRouterReadsIsRefusedWithTheFix() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("pubcols"));
        var file = Files.writeString(dir.resolve("router.yml"), yaml(db, OutboxContract.unique("pubcols-router").replace('_', '-'),
                OutboxContract.unique("pubcols")));
        var config = RouterConfigLoader.load(file, Map.of());
        String publication = config.source().postgres().publication();
        db.execute("CREATE PUBLICATION " + publication + " FOR TABLE public.outbox (id, aggregatetype, aggregateid, type), "
                + "public.outbox_binary");
        String fix = "BEGIN; ALTER PUBLICATION " + publication + " DROP TABLE public.outbox; ALTER PUBLICATION " + publication
                + " ADD TABLE public.outbox (id, aggregatetype, aggregateid, type, payload); COMMIT";
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("publishes public.outbox without column(s) payload").hasMessageContaining(fix);
        assertThat(check(file)).contains("FAIL  published rows");
        // The printed fix, as an operator runs it: the publication keeps its other table.
        db.execute(fix.substring("BEGIN; ".length(), fix.length() - "; COMMIT".length()));
        assertThat(check(file)).contains("PASS  published rows").doesNotContain("a column list would leave out created_at");
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT count(*) FROM pg_publication_tables "
                + "WHERE pubname = '" + publication + "'")) {
            rs.next();
            assertThat(rs.getInt(1)).isEqualTo(2);
        }

        // Without a list, check says what one would save, and how to add it.
        db.execute("ALTER PUBLICATION " + publication + " SET TABLE public.outbox, public.outbox_binary");
        assertThat(check(file)).contains("sends every column of public.outbox; a column list would leave out created_at, "
                + "tracingspancontext").contains("ADD TABLE public.outbox (id, aggregatetype, aggregateid, type, payload)");
        db.execute("ALTER PUBLICATION " + publication + " SET (publish = 'update')");
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("publication " + publication + " does not publish inserts")
                .hasMessageContaining("ALTER PUBLICATION " + publication + " SET (publish = 'insert')");
    }
}
