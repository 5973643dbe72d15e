package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The docker-compose demo without Docker: its init.sql, its router.yml and its writer script, against an embedded
 * Postgres and the test broker. The writer starts first, as compose may start it, and its first order still reaches Kafka;
 * the router service's health check passes once it streams.
 */
class DockerComposeDemoIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @Test
    void theDemosFirstOrderReachesKafka() throws Exception {
        try (var server = PostgresServer.start()) {
            server.createDatabase("shop");
            var init = psql(server, server.user(), server.password(), "-v", "ON_ERROR_STOP=1", "-f",
                    ROOT.resolve("examples/docker/init.sql").toString()).start();
            assertThat(init.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(init.exitValue()).as(new String(init.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).isZero();

            var writer = psql(server, "shop_app", "shop-password").command("bash", ROOT.resolve("examples/docker/writer.sh").toString())
                    .start();
            String topics = OutboxContract.unique("demo");
            try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
                Thread.sleep(3000); // the writer is up before the router, as compose may order them
                int port = PostgresServer.freePort();
                var env = Map.of("ROUTER_DB_PASSWORD", "router-password",
                        "OUTBOX_ROUTER_SOURCE_URL", server.jdbcUrl("shop"),
                        "OUTBOX_ROUTER_KAFKA_BOOTSTRAP_SERVERS", OutboxContract.kafka(),
                        "OUTBOX_ROUTER_ROUTING_TOPIC", topics + ".${aggregatetype}",
                        "OUTBOX_ROUTER_HTTP_LISTEN", "127.0.0.1:" + port);
                try (var router = Router.start(RouterConfigLoader.load(ROOT.resolve("examples/docker/router.yml"), env))) {
                    assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                    // The compose file's health check, as the container runs it, on this router's port.
                    var test = new ObjectMapper(new YAMLFactory()).readTree(ROOT.resolve("docker-compose.yml").toFile())
                            .at("/services/router/healthcheck/test");
                    assertThat(test.get(0).asText()).isEqualTo("CMD");
                    var command = new java.util.ArrayList<String>();
                    test.forEach(n -> command.add(n.asText().replace("127.0.0.1/8080", "127.0.0.1/" + port)));
                    Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
                        var check = new ProcessBuilder(command.subList(1, command.size())).redirectErrorStream(true).start();
                        return check.waitFor(10, TimeUnit.SECONDS) && check.exitValue() == 0;
                    });
                    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
                        kafka.poll();
                        return kafka.all().stream().anyMatch(r -> "order-1".equals(r.key()));
                    });
                }
                var first = kafka.all().stream().filter(r -> "order-1".equals(r.key())).findFirst().orElseThrow();
                assertThat(first.topic()).isEqualTo(topics + ".Order");
                assertThat(new String(first.value(), StandardCharsets.UTF_8)).contains("\"orderId\": 1", "PLACED");
            } finally {
                writer.destroy();
                writer.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** psql (or the writer, which runs it) against the embedded server as the given role. */
    private static ProcessBuilder psql(PostgresServer server, String user, String password, String... args) {
        var command = new java.util.ArrayList<>(java.util.List.of("psql", "-q", "-h", "127.0.0.1", "-d", "shop"));
        command.addAll(java.util.List.of(args));
        var pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().putAll(Map.of("PGHOST", "127.0.0.1", "PGPORT", Integer.toString(server.port()), "PGDATABASE", "shop",
                "PGUSER", user, "PGPASSWORD", password));
        pb.command().addAll(java.util.List.of("-p", Integer.toString(server.port()), "-U", user));
        return pb;
    }
}
