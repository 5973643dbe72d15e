package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.TcpProxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A MariaDB primary fails over to its GTID replica while the router streams under load. The replica logs what it
 * applies under the primary's GTIDs (log_slave_updates), so the router, which resumes by GTID, goes on from its
 * stored position on the promoted replica: nothing lost, order per aggregate kept. A later process resumes there too,
 * and binlogs purged past the stored GTID are refused.
 */
class MariaDbFailoverIT {

    @Test
    void aPromotedReplicaTakesOverByGtidWithNothingLostAndOrderKept(@TempDir Path dir) throws Exception {
        var primary = MariaDbServer.start();
        MariaDbServer replica = null;
        try {
            replica = primary.startReplica();
            String database = OutboxContract.unique("failover");
            var db = new BinlogOutbox(new BinlogOutbox.Server("mariadb", primary.jdbcUrl(""), MariaDbServer.USER, MariaDbServer.PASSWORD),
                    database);
            try (var address = TcpProxy.to(primary.port())) {
                String url = "jdbc:mariadb://127.0.0.1:" + address.port() + "/" + database;
                String topics = OutboxContract.unique("failover");
                String name = OutboxContract.unique("failover-router").replace('_', '-');
                String yaml = "name: " + name + "\n" + db.sourceYaml().replace(primary.jdbcUrl(database), url)
                        + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\nkafka:\n  bootstrap-servers: " + OutboxContract.kafka()
                        + "\nhttp:\n  enabled: false\n";
                var config = RouterConfigLoader.parse(yaml, Map.of());
                try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
                    assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                    var written = Collections.synchronizedList(new ArrayList<TestEvent>());
                    var lost = Collections.synchronizedList(new ArrayList<TestEvent>());
                    var stop = new AtomicBoolean();
                    var writer = Executors.newSingleThreadExecutor().submit(() -> new FailoverWriter(url, MariaDbServer.USER,
                            MariaDbServer.PASSWORD, "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, ?, ?)",
                            "SELECT 1 FROM outbox WHERE id = ?").write(written, lost, stop));
                    Thread.sleep(3_000);

                    var atReplica = Files.writeString(dir.resolve("replica.yml"), yaml.replace(url, replica.jdbcUrl(database)));
                    assertThat(RouterStops.cli("check", "--config", atReplica.toString()))
                            .contains("failover: this server is a replica that logs what it applies (log_slave_updates = ON)");

                    primary.kill();
                    int before = written.size();
                    replica.promote();
                    address.switchTo(replica.port());
                    System.out.printf("mariadb failover test: primary killed after %d events, replica promoted%n", before);
                    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> written.size() > before + 200);
                    stop.set(true);
                    writer.get();

                    var ids = new HashSet<UUID>();
                    written.forEach(e -> ids.add(e.id()));
                    kafka.awaitIds(ids, Duration.ofSeconds(120));
                    var received = kafka.settle(Duration.ofSeconds(1));
                    System.out.printf("mariadb failover test: %d events committed, %d records read, %d duplicates%n", ids.size(),
                            received.size(), received.size() - kafka.receivedIds().size());
                    assertThat(kafka.receivedIds()).containsAll(ids);
                    // A replica applies the binlog after the primary committed: an event whose commit the failover hid from its
                    // writer may have reached Kafka, and its place in the aggregate's sequence was given again.
                    var extra = new HashSet<>(kafka.receivedIds());
                    extra.removeAll(ids);
                    assertThat(extra).isSubsetOf(lost.stream().map(TestEvent::id).toList());
                    OutboxContract.assertOrderPerAggregate(received.stream().filter(r -> !extra.contains(r.id())).toList());
                    assertThat(router.isStreaming()).as("the same process streams from the promoted replica").isTrue();
                }

                // A new process resumes from what the first stored on the promoted replica.
                var later = TestEvent.of("Account", "acct-later", 1);
                try (var c = java.sql.DriverManager.getConnection(url, MariaDbServer.USER, MariaDbServer.PASSWORD);
                     var ps = c.prepareStatement("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, ?, ?)")) {
                    ps.setString(1, later.id().toString());
                    ps.setString(2, later.aggregateType());
                    ps.setString(3, later.aggregateId());
                    ps.setString(4, later.type());
                    ps.setString(5, later.payload());
                    ps.executeUpdate();
                }
                try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
                    assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                    kafka.awaitIds(java.util.Set.of(later.id()), Duration.ofSeconds(60));
                }

                // Binlogs purged past a stored GTID: refused, not resumed at whatever the server has next.
                try (var c = replica.connect(database); var st = c.createStatement()) {
                    st.execute("FLUSH BINARY LOGS");
                    String newest;
                    try (var rs = st.executeQuery("SHOW MASTER STATUS")) {
                        rs.next();
                        newest = rs.getString(1);
                    }
                    // The server keeps a file until its binlog checkpoint has passed it, whatever PURGE says.
                    Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
                        st.execute("PURGE BINARY LOGS TO '" + newest + "'");
                        try (var rs = st.executeQuery("SHOW BINARY LOGS")) {
                            return rs.next() && rs.getString(1).equals(newest);
                        }
                    });
                    assertThat(st.executeUpdate("UPDATE outbox_router_offsets SET offset_value = JSON_SET(offset_value, '$.gtids', "
                            + "'0-1-10') WHERE router_name = '" + name + "' AND offset_key LIKE '[%'")).isEqualTo(1);
                }
                assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                        .hasMessageContaining("the binlogs holding the transactions after router " + name + "'s stored GTID 0-1-10 are purged");
            }
        } finally {
            if (replica != null) {
                replica.close();
            }
            try {
                primary.close();
            } catch (RuntimeException alreadyDead) {
                // killed by the test
            }
        }
    }
}
