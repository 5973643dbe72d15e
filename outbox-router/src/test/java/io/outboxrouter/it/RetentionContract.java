package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.retention.Retention;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Outbox retention ({@code outbox.retention}) on a real database: old rows the router has published are deleted, newer
 * rows stay, and a row the router has not published is never deleted however old it is (router stopped, rows backdated).
 */
abstract class RetentionContract {
    private static final Retention.Listener NONE = new Retention.Listener() {
        @Override
        public void deleted(String table, int rows) {
        }

        @Override
        public void oldest(String table, Duration age) {
        }
    };

    /** A fresh database with the outbox tables. */
    abstract OutboxDatabase newDatabase(String name) throws SQLException;

    /** The source block with only the main outbox table (the binary one has no time column) and a 1 s heartbeat. */
    abstract String sourceYaml(OutboxDatabase db);

    /** The SQL parameter for a JSON payload. */
    abstract String payloadParameter();

    /** The SQL for "now minus two hours" (or a day) in this database. */
    abstract String hoursAgo(int hours);

    private RouterConfig config(OutboxDatabase db, String name, String topics, String retention, int port) {
        return RouterConfigLoader.parse("name: " + name + "\n" + sourceYaml(db) + """
                outbox:
                  retention: %s
                  retention-batch-size: 7
                routing:
                  topic: "%s.${aggregatetype}"
                kafka:
                  bootstrap-servers: %s
                http:
                  enabled: %s
                  listen: 127.0.0.1:%d
                """.formatted(retention, topics, OutboxContract.kafka(), port > 0, Math.max(port, 0)), Map.of());
    }

    private void insert(OutboxDatabase db, Connection c, List<TestEvent> events, String createdAt) throws SQLException {
        for (var e : events) {
            try (var ps = c.prepareStatement("INSERT INTO " + db.outboxTable() + " (id, aggregatetype, aggregateid, type, payload, created_at) "
                    + "VALUES (" + db.idParameter() + ", ?, ?, ?, " + payloadParameter() + ", " + createdAt + ")")) {
                ps.setString(1, e.id().toString());
                ps.setString(2, e.aggregateType());
                ps.setString(3, e.aggregateId());
                ps.setString(4, e.type());
                ps.setString(5, e.payload());
                ps.executeUpdate();
            }
        }
        c.commit();
    }

    private static List<TestEvent> events(String aggregate, int n) {
        var events = new ArrayList<TestEvent>();
        for (int i = 1; i <= n; i++) {
            events.add(TestEvent.of("Order", aggregate, i));
        }
        return events;
    }

    private static Set<UUID> ids(List<TestEvent> events) {
        var ids = new HashSet<UUID>();
        events.forEach(e -> ids.add(e.id()));
        return ids;
    }

    private Set<UUID> rows(OutboxDatabase db) throws SQLException {
        var ids = new HashSet<UUID>();
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT id FROM " + db.outboxTable())) {
            while (rs.next()) {
                ids.add(UUID.fromString(rs.getString(1)));
            }
        }
        return ids;
    }

    @Test
    void oldRowsAreDeletedOnlyOncePublishedAndNewerRowsStay() throws Exception {
        var db = newDatabase(OutboxContract.unique("retain"));
        String topics = OutboxContract.unique("retain");
        var config = config(db, OutboxContract.unique("retain-router").replace('_', '-'), topics, "1h", 0);
        var first = TestEvent.of("Order", "o-0", 1);
        var old = events("o-old", 25);
        var recent = events("o-new", 5);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var retention = new Retention(config, Source.of(config).outboxSql(), NONE)) {
            try (var router = OutboxContract.startRouter(config); var c = db.connect()) {
                insert(db, c, List.of(first), hoursAgo(0));
                kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));
            }
            // The router is stopped: rows written now, backdated, are old but not published.
            try (var c = db.connect()) {
                insert(db, c, old, hoursAgo(2));
                insert(db, c, recent, hoursAgo(0));
            }
            var cycle = retention.runOnce(Duration.ofSeconds(2));
            assertThat(cycle.total()).as("rows deleted while the router was stopped").isZero();
            assertThat(cycle.waiting()).as("the log mark retention waited for").isNotNull();
            assertThat(rows(db)).hasSize(31);

            try (var router = OutboxContract.startRouter(config)) {
                var all = new HashSet<>(ids(old));
                all.addAll(ids(recent));
                kafka.awaitIds(all, Duration.ofSeconds(60));
                var deleted = new AtomicInteger();
                // New events, as an outbox in use has: they move the router's position past the old rows' log mark.
                var traffic = new ArrayList<TestEvent>();
                await().atMost(Duration.ofSeconds(60)).pollDelay(Duration.ZERO).until(() -> {
                    try (var c = db.connect()) {
                        var next = TestEvent.of("Order", "o-traffic", traffic.size() + 1);
                        insert(db, c, List.of(next), hoursAgo(0));
                        traffic.add(next);
                    }
                    deleted.addAndGet(retention.runOnce(Duration.ofSeconds(3)).total());
                    return deleted.get() >= old.size();
                });
                assertThat(deleted.get()).isEqualTo(old.size());
                var kept = new HashSet<>(ids(recent));
                kept.add(first.id());
                kept.addAll(ids(traffic));
                assertThat(rows(db)).as("rows newer than the retention").containsExactlyInAnyOrderElementsOf(kept);
                assertThat(retention.runOnce(Duration.ofSeconds(1)).total()).isZero();

                // An operator moved the position (offsets set|reset, run --accept-gap): the rows of the events in between may
                // have to be replayed, so retention holds for one retention period.
                try (var table = io.outboxrouter.offsets.OffsetTable.open(io.outboxrouter.offsets.OffsetTableSettings.offsets(config))) {
                    table.write(config.name(), Map.of(io.outboxrouter.offsets.OffsetTable.RETENTION_HOLD_KEY,
                            io.outboxrouter.offsets.OffsetTable.retentionHoldFromNow()));
                }
                var heldBack = events("o-held", 3);
                try (var c = db.connect()) {
                    insert(db, c, heldBack, hoursAgo(3));
                }
                kafka.awaitIds(ids(heldBack), Duration.ofSeconds(60));
                var held = retention.runOnce(Duration.ofSeconds(1));
                assertThat(held.total()).isZero();
                assertThat(held.waiting()).startsWith("held until ");
                assertThat(rows(db)).containsAll(ids(heldBack));
            }
        }
    }

    /** {@link ScheduledRetentionTier}: the running router deletes on its schedule and reports it. */
    public void runningRouterDeletes() throws Exception {
        var db = newDatabase(OutboxContract.unique("retainrun"));
        String topics = OutboxContract.unique("retainrun");
        int port = OutboxContract.freePort();
        var config = config(db, OutboxContract.unique("retainrun-router").replace('_', '-'), topics, "2s", port);
        var old = events("o-old", 20);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             Router router = OutboxContract.startRouter(config); var c = db.connect()) {
            insert(db, c, old, hoursAgo(24));
            kafka.awaitIds(ids(old), Duration.ofSeconds(60));
            await().atMost(Duration.ofSeconds(60)).until(() -> rows(db).isEmpty());
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                    assertThat(PostgresRouterBehaviourIT.httpGet(port, "/status")).contains("\"retention\":{\"after\":\"2s\",\"deleted_rows\":20"));
            assertThat(PostgresRouterBehaviourIT.httpGet(port, "/metrics"))
                    .containsPattern("outbox_router_retention_deleted_rows_total\\{router=\"[^\"]+\",table=\"[^\"]+\"} 20.0")
                    .contains("outbox_router_retention_oldest_row_age_seconds");
            assertThat(PostgresRouterBehaviourIT.httpGet(port, "/")).contains("Outbox retention", "rows deleted");
        }
    }
}
