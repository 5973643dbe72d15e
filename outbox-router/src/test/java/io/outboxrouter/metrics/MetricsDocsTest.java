package io.outboxrouter.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The metrics the router serves, the metrics docs/operations.md lists, and the metrics the Grafana dashboard queries are
 * the same names: a renamed or removed meter fails here rather than leave an empty panel or a dead alert.
 */
class MetricsDocsTest {
    private static final Path DOCS = Path.of("..", "docs");
    private static final Pattern NAME = Pattern.compile("\\b(outbox_router_[a-z_]+|logback_events_total)\\b");

    @Test
    void everyMetricTheDashboardQueriesIsServed() throws IOException {
        Set<String> served = servedSeries();
        var queried = new TreeSet<String>();
        exprs(new ObjectMapper().readTree(DOCS.resolve("grafana/outbox-router.json").toFile()), queried);
        assertThat(queried).as("metrics in the dashboard's queries").isNotEmpty();
        assertThat(queried).as("every metric a panel queries is served").isSubsetOf(served);
    }

    @Test
    void operationsPageListsEveryServedMetricAndNoOther() throws IOException {
        String page = Files.readString(DOCS.resolve("operations.md"));
        var documented = new TreeSet<String>();
        var table = Pattern.compile("(?m)^\\| `(outbox_router_[a-z_]+|logback_events_total)` \\|").matcher(page);
        while (table.find()) {
            documented.add(table.group(1));
        }
        var families = new TreeSet<String>();
        for (String series : servedSeries()) {
            families.add(series.replaceAll("_(bucket|count|sum|max)$", ""));
        }
        assertThat(documented).as("the metrics table of docs/operations.md").isEqualTo(families);
        var known = new TreeSet<>(servedSeries());
        known.addAll(families);
        var mentioned = NAME.matcher(page);
        while (mentioned.find()) {
            assertThat(known).as("named in docs/operations.md").contains(mentioned.group(1));
        }
    }

    /** Every series name a router serves once each of its meters has been used. */
    private static Set<String> servedSeries() {
        try (var metrics = new RouterMetrics("docs")) {
            metrics.offsetStore(() -> Optional.empty());
            metrics.retainedWal(() -> 1);
            metrics.streaming(() -> true);
            metrics.published("outbox.event.Order", Instant.now(), Instant.now());
            metrics.deadLettered("invalid_json");
            metrics.skipped("invalid_json");
            metrics.held();
            metrics.released();
            metrics.parked(() -> 1, () -> List.of(new RouterMetrics.ParkedAggregate("a", Instant.now(), "lsn:0/1", "illegal_topic", 2)));
            metrics.unrouted("public.other");
            metrics.batchPublished(1, Duration.ofMillis(1));
            metrics.retentionDeleted("public.outbox", 1);
            metrics.retentionOldest("public.outbox", Duration.ofSeconds(1));
            metrics.audit(() -> new io.outboxrouter.audit.SelfAudit.Status(List.of(), java.util.Map.of(), 0, null, 1, 0, 0, null, null));
            metrics.kafkaTransaction(true);
            metrics.retrying("kafka_publish", new RuntimeException("test"));
            LoggerFactory.getLogger(MetricsDocsTest.class).warn("a counted warning");
            var names = new TreeSet<String>();
            for (String line : metrics.scrape().split("\n")) {
                if (!line.isBlank() && !line.startsWith("#")) {
                    names.add(line.split("[{ ]", 2)[0]);
                }
            }
            return names;
        }
    }

    private static void exprs(JsonNode node, Set<String> out) {
        if (node.isObject()) {
            node.fields().forEachRemaining(f -> {
                if ((f.getKey().equals("expr") || f.getKey().equals("query")) && f.getValue().isTextual()) {
                    var m = NAME.matcher(f.getValue().asText());
                    while (m.find()) {
                        out.add(m.group(1));
                    }
                } else {
                    exprs(f.getValue(), out);
                }
            });
        } else if (node.isArray()) {
            node.forEach(n -> exprs(n, out));
        }
    }
}
