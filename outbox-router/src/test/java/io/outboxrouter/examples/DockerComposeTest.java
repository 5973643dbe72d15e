package io.outboxrouter.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * No Docker engine runs here, so the compose file is checked for what can go wrong without one: the router config it
 * mounts is valid for the current config model, and hosts, ports, names and passwords agree across services.
 */
class DockerComposeTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static JsonNode services;
    private static RouterConfig routerConfig;
    private static String initSql;

    @BeforeAll
    static void load() throws Exception {
        var compose = new ObjectMapper(new YAMLFactory()).readTree(ROOT.resolve("docker-compose.yml").toFile());
        services = compose.get("services");
        var router = services.get("router");
        String mount = volumes(router).stream().filter(v -> v.endsWith(":ro") && v.contains("router.yml")).findFirst().orElseThrow();
        String[] parts = mount.split(":");
        List<String> command = strings(router.get("command"));
        assertThat(command).as("the router reads the mounted config").containsSubsequence("run", "--config", parts[1]);
        routerConfig = RouterConfigLoader.load(ROOT.resolve(parts[0]), env(router));
        initSql = Files.readString(ROOT.resolve(volumes(services.get("postgres")).get(0).split(":")[0]));
    }

    @Test
    void theRouterConfigPointsAtTheComposeServices() {
        var address = routerConfig.source().address();
        assertThat(services.has(address.host())).as("source host is a service").isTrue();
        assertThat(address.port()).isEqualTo(5432);
        assertThat(address.database()).isEqualTo(env(services.get("postgres")).get("POSTGRES_DB"));
        String bootstrap = routerConfig.kafka().bootstrapServers();
        assertThat(env(services.get("kafka")).get("KAFKA_ADVERTISED_LISTENERS")).contains("PLAINTEXT://" + bootstrap);
        assertThat(strings(services.get("router").get("ports"))).contains(routerConfig.http().port() + ":" + routerConfig.http().port());
        assertThat(routerConfig.http().host()).as("reachable from outside the container").isEqualTo("0.0.0.0");
    }

    @Test
    void postgresIsSetUpForTheRouter() {
        assertThat(strings(services.get("postgres").get("command"))).contains("wal_level=logical");
        var user = routerConfig.source().connection().user();
        assertThat(initSql).contains("CREATE ROLE " + user + " WITH LOGIN REPLICATION PASSWORD '"
                + routerConfig.source().connection().password().reveal() + "'");
        assertThat(initSql).contains("CREATE PUBLICATION " + routerConfig.source().postgres().publication() + " FOR TABLE "
                + String.join(", ", routerConfig.source().tables()));
        for (String table : routerConfig.source().tables()) {
            assertThat(initSql).contains("CREATE TABLE " + table.substring(table.indexOf('.') + 1) + " (");
        }
    }

    @Test
    void theWriterUsesARoleTheDatabaseHas() throws Exception {
        var writer = env(services.get("writer"));
        assertThat(services.has(writer.get("PGHOST"))).isTrue();
        assertThat(initSql).contains("CREATE ROLE " + writer.get("PGUSER") + " WITH LOGIN PASSWORD '" + writer.get("PGPASSWORD") + "'");
        String script = Files.readString(ROOT.resolve(volumes(services.get("writer")).get(0).split(":")[0]));
        assertThat(script).contains("INSERT INTO outbox");
    }

    private static Map<String, String> env(JsonNode service) {
        var env = new HashMap<String, String>();
        var node = service.get("environment");
        if (node != null) {
            node.fields().forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
        }
        return env;
    }

    private static List<String> volumes(JsonNode service) {
        return strings(service.get("volumes"));
    }

    private static List<String> strings(JsonNode list) {
        return StreamSupport.stream(list.spliterator(), false).map(JsonNode::asText).toList();
    }
}
