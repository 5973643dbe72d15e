package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** Fencing on MariaDB, where no replication slot keeps two readers apart: a killed lock session stops the stream at once. */
class MariaDbOutageIT {

    @Test
    void aKilledLockSessionStopsTheStreamThenTheRouterTakesItsLockAgainAndLosesNothing() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("lockkill"));
        String topics = OutboxContract.unique("lockkill");
        String name = OutboxContract.unique("lockkill-router").replace('_', '-');
        var config = RouterConfigLoader.parse("name: " + name + "\n" + db.sourceYaml()
                + "routing: { topic: \"" + topics + ".${aggregatetype}\" }\n"
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n", Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var first = TestEvent.of("Order", "o-1", 1);
            db.insert(c, first);
            c.commit();
            kafka.awaitIds(Set.of(first.id()), Duration.ofSeconds(60));

            long killed = System.nanoTime();
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT IS_USED_LOCK(CONCAT('outbox-router:', DATABASE(), '/" + name + "'))")) {
                rs.next();
                long session = rs.getLong(1);
                assertThat(session).as("the router's lock session").isPositive();
                st.execute("KILL " + session);
            }
            Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> !router.isStreaming());
            long stopped = System.nanoTime();
            var during = TestEvent.of("Order", "o-1", 2);
            db.insert(c, during);
            c.commit();
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).as("took its lock again").isTrue();
            System.out.printf("MariaDB lock session killed: stream stopped after %d ms, streaming again after %d ms%n",
                    (stopped - killed) / 1_000_000, (System.nanoTime() - killed) / 1_000_000);
            kafka.awaitIds(Set.of(during.id()), Duration.ofSeconds(60));
            assertThat(router.completion()).isNotDone();
        }
    }
}
