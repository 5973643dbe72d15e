package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** State and configuration that changed behind the router's back, on MariaDB: refused loudly with the fix. */
class MariaDbDriftIT {

    @Test
    void aQuietOutboxOnABusyServerStillMovesTheStoredPositionWithTheBinlog() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("quiet"));
        var config = RouterConfigLoader.parse("name: " + OutboxContract.unique("quiet-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n"
, Map.of());
        try (var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            // Keep the binlog busy with other tables until the stored position moves (it is stored at most every few
            // seconds when a batch has nothing to publish).
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofSeconds(1)).until(() -> {
                writeOtherTables(db, c);
                return !storedPosition(db, config.name()).isEmpty();
            });
            String before = storedPosition(db, config.name());
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofSeconds(1)).until(() -> {
                writeOtherTables(db, c);
                return !storedPosition(db, config.name()).equals(before);
            });
        }
    }

    /** Transactions on a table that is not an outbox: nothing to publish, but the binlog moves. */
    private static void writeOtherTables(BinlogOutbox db, java.sql.Connection c) throws Exception {
        for (int i = 0; i < 20; i++) {
            db.nextSequence(c, "other-" + i, 1);
            c.commit();
        }
    }

    private static String storedPosition(BinlogOutbox db, String router) throws Exception {
        try (var c = db.connect(); var st = c.createStatement();
             var rs = st.executeQuery("SELECT offset_value FROM outbox_router_offsets WHERE router_name = '" + router
                     + "' AND offset_key LIKE '[%'")) {
            return rs.next() ? rs.getString(1) : "";
        }
    }

    @Test
    void binlogOffsetsDeletedWhileStoppedAreRefusedNotSkippedAndAcceptedOnlyWithAcceptGap() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("drift"));
        String topics = OutboxContract.unique("drift");
        var config = RouterConfigLoader.parse("name: " + OutboxContract.unique("drift-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "routing: { topic: \"" + topics + ".${aggregatetype}\" }\n"
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n", Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            var first = TestEvent.of("Order", "o-1", 1);
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, first);
                c.commit();
                kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> router.metrics().lastOffsetStored() != null);
            }
            var meanwhile = TestEvent.of("Order", "o-1", 2); // written while stopped: must not be skipped silently
            db.insert(c, meanwhile);
            c.commit();
            db.execute("DELETE FROM outbox_router_offsets WHERE router_name = '" + config.name() + "' AND offset_key LIKE '[%'");

            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("stored binlog position is gone from outbox_router_offsets").hasMessageContaining("--accept-gap");
            db.execute("TRUNCATE TABLE outbox_router_offsets");
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("yet its schema history in outbox_router_schema_history has");

            var after = TestEvent.of("Order", "o-1", 3);
            try (var router = Router.start(config, true)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
        }
    }

    /**
     * {@code binlog_format} is a session setting: a writer that logs its INSERT as a statement passes the start-time check,
     * and Debezium skips the statement with a warning. The router stops, names the statement, refuses to start until the
     * loss is accepted, and replay publishes the row; a statement-format UPDATE of another table stops nothing.
     */
    @Test
    void anOutboxInsertLoggedAsAStatementStopsTheRouterAndReplayPublishesIt(@TempDir Path dir) throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("stmt"));
        String topics = OutboxContract.unique("stmt");
        var file = Files.writeString(dir.resolve("router.yml"), "name: " + OutboxContract.unique("stmt-router").replace('_', '-') + "\n"
                + db.sourceYaml() + "routing: { topic: \"" + topics + ".${aggregatetype}\" }\n"
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n");
        var config = RouterConfigLoader.load(file, Map.of());
        var first = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            try (var router = Router.start(config); var statements = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, first);
                c.commit();
                kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));

                statements.setAutoCommit(true);
                try (var st = statements.createStatement()) {
                    st.execute("SET SESSION binlog_format = 'STATEMENT'");
                    st.execute("INSERT INTO aggregate_seq (aggregateid, seq) VALUES ('other', 1)");
                }
                db.insert(statements, lost);

                assertThat(RouterStops.failure(router)).contains("an INSERT into outbox table " + db.outboxTable()
                        + " reached the binlog in statement format").contains(lost.id().toString()).contains("--accept-gap");
            }
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());

            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("the router stopped at").hasMessageContaining("statement format");
            var after = TestEvent.of("Order", "o-1", 3);
            try (var router = Router.start(config, true)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
            RouterStops.cli("replay", "--config", file.toString(), "--id", lost.id().toString());
            assertThat(kafka.awaitIds(Set.of(lost.id()), Duration.ofSeconds(60))).filteredOn(r -> r.id().equals(lost.id()))
                    .allSatisfy(r -> assertThat(r.header("replayed")).isEqualTo("true"));
        }
    }

    /**
     * The connector resumes by GTID, so the GTIDs decide: a stored GTID past the server's newest in its domain, or one the
     * server logged under another server's transaction, comes from another history (after a failover to a replica that
     * missed it, say) and is refused with what accepting it does.
     */
    @Test
    void aStoredGtidThisServersBinlogDoesNotHoldIsRefusedAsAnotherHistory() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("gtid"));
        String topics = OutboxContract.unique("gtid");
        var config = RouterConfigLoader.parse("name: " + OutboxContract.unique("gtid-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "routing: { topic: \"" + topics + ".${aggregatetype}\" }\n"
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n", Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            var first = TestEvent.of("Order", "o-1", 1);
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, first);
                c.commit();
                kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> storedPosition(db, config.name()).contains("gtids"));
            }
            String newest;
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT @@GLOBAL.gtid_binlog_pos")) {
                rs.next();
                newest = rs.getString(1);
            }
            String[] parts = newest.split("-");
            String ahead = parts[0] + "-" + parts[1] + "-" + (Long.parseLong(parts[2]) + 1_000_000);
            setStoredGtids(db, config.name(), ahead);
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("stored GTID " + ahead + " is ahead of this server's binlog")
                    .hasMessageContaining("another history").hasMessageContaining("--accept-gap");
            setStoredGtids(db, config.name(), parts[0] + "-4242-1");
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("stored GTID " + parts[0] + "-4242-1 is not in this server's binlog")
                    .hasMessageContaining("it has no transaction of server 4242");
            // A table shape recorded at a GTID this server never logged (read from a former primary just before a failover).
            setStoredGtids(db, config.name(), newest);
            try (var h = db.connect(); var st = h.createStatement()) {
                assertThat(st.executeUpdate("UPDATE outbox_router_schema_history SET record = JSON_SET(record, '$.position.gtids', '"
                        + parts[0] + "-4242-2') WHERE router_name = '" + config.name() + "' ORDER BY seq LIMIT 1")).isEqualTo(1);
                h.commit();
            }
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("schema history in outbox_router_schema_history holds a change of its tables' shape read at "
                            + "GTID " + parts[0] + "-4242-2");

            var after = TestEvent.of("Order", "o-1", 2);
            try (var router = Router.start(config, true)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, after);
                c.commit();
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            }
        }
    }

    static void setStoredGtids(BinlogOutbox db, String router, String gtids) throws Exception {
        try (var c = db.connect(); var ps = c.prepareStatement("UPDATE outbox_router_offsets SET offset_value = "
                + "JSON_SET(offset_value, '$.gtids', ?) WHERE router_name = ? AND offset_key LIKE '[%'")) {
            ps.setString(1, gtids);
            ps.setString(2, router);
            assertThat(ps.executeUpdate()).isEqualTo(1);
            c.commit();
        }
    }
}
