package io.outboxrouter.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Kafka client and every database connection the router makes goes through one factory, which carries the
 * user's connection and security settings: a client made anywhere else fails this test with the file and line, before
 * it fails in production on the day its feature is first used.
 */
class OneClientFactoryTest {
    /** The modules of the product (not the benchmark, the demo or the test servers). */
    private static final List<String> MODULES = List.of("config", "retry", "routing", "offset-store", "cdc-engine", "outbox-router",
            "connect-transform");

    /** What makes a client, and the one file allowed to. */
    private static final Map<Pattern, String> FACTORIES = Map.of(
            Pattern.compile("new\\s+[\\w.]*Kafka(Producer|Consumer|ShareConsumer)\\s*[<(]|\\bAdmin(Client)?\\s*\\.\\s*create\\s*\\(|KafkaAdminClient"),
            "outbox-router/src/main/java/io/outboxrouter/kafka/KafkaClients.java",
            Pattern.compile("\\bDriverManager\\b|\\.getDriver\\("),
            "config/src/main/java/io/outboxrouter/config/JdbcConnection.java",
            Pattern.compile("new\\s+[\\w.]*(HikariConfig|DataSource)\\s*\\("),
            "offset-store/src/main/java/io/outboxrouter/offsets/JdbcStore.java",
            // The connector's own connections (the replication stream among them) get source.url's TLS settings there.
            Pattern.compile("\"database\\.password\""),
            "cdc-engine/src/main/java/io/outboxrouter/cdc/ConnectorProperties.java");

    @Test
    void everyClientIsMadeByItsFactory() throws IOException {
        Path root = Path.of("").toAbsolutePath().getParent();
        var bypasses = new ArrayList<String>();
        int files = 0;
        for (String module : MODULES) {
            Path main = root.resolve(module).resolve("src/main/java");
            if (!Files.isDirectory(main)) {
                continue;
            }
            try (Stream<Path> sources = Files.walk(main)) {
                for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
                    files++;
                    String relative = root.relativize(source).toString();
                    List<String> lines = read(source);
                    for (int i = 0; i < lines.size(); i++) {
                        for (var rule : FACTORIES.entrySet()) {
                            if (rule.getKey().matcher(lines.get(i)).find() && !relative.equals(rule.getValue())
                                    && !relative.startsWith("outbox-router/src/main/java/io/outboxrouter/migrate/")) {
                                bypasses.add(relative + ":" + (i + 1) + ": " + lines.get(i).strip() + "  (use " + rule.getValue() + ")");
                            }
                        }
                    }
                }
            }
        }
        assertThat(files).as("sources scanned").isGreaterThan(100);
        assertThat(bypasses).as("clients made outside their factory").isEmpty();
    }

    private static List<String> read(Path p) {
        try {
            return Files.readAllLines(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
