package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.cloudevents.CloudEvent;
import io.cloudevents.kafka.CloudEventDeserializer;
import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * routing.envelope: cloudevents on a real Postgres and a real broker, read back as a CloudEvents consumer reads it: with
 * the CloudEvents SDK's Kafka deserializer.
 */
class CloudEventsIT {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    @ParameterizedTest
    @ValueSource(strings = {"binary", "structured"})
    void everyEventIsACloudEventTheSdkReadsBack(String mode) throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("ce"));
        String topics = OutboxContract.unique("ce");
        var config = RouterConfigLoader.parse("name: " + OutboxContract.unique("ce-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "outbox:\n  payload-format: json\n"
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n  envelope: cloudevents\n"
                + "  cloudevents:\n    mode: " + mode + "\n    source: \"https://shop.example/${aggregatetype}\"\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\nhttp:\n  enabled: false\n", Map.of());
        var events = List.of(TestEvent.of("Order", "o-1", 1), TestEvent.of("Order", "o-2", 1), TestEvent.of("Order", "o-1", 2));
        try (var router = Router.start(config); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            for (var e : events) {
                db.insert(c, e);
            }
            c.commit();
            var read = readCloudEvents(Pattern.compile(Pattern.quote(topics) + "\\..*"), events.size());
            assertThat(read).extracting(CloudEvent::getId).containsExactlyInAnyOrderElementsOf(events.stream().map(e -> e.id().toString()).toList());
            for (var e : events) {
                var ce = read.stream().filter(r -> r.getId().equals(e.id().toString())).findFirst().orElseThrow();
                assertThat(ce.getSpecVersion().toString()).isEqualTo("1.0");
                assertThat(ce.getType()).isEqualTo(e.type());
                assertThat(ce.getSource()).isEqualTo(URI.create("https://shop.example/Order"));
                assertThat(ce.getSubject()).isEqualTo(e.aggregateId());
                assertThat(ce.getExtension("partitionkey")).isEqualTo(e.aggregateId());
                assertThat(ce.getTime()).as("the commit time").isNotNull();
                assertThat(ce.getDataContentType()).isEqualTo("application/json");
                if (mode.equals("binary")) {
                    assertThat(new String(ce.getData().toBytes(), StandardCharsets.UTF_8)).as("the payload as stored").isEqualTo(e.payload());
                } else {
                    // Structured: the payload is a JSON value inside the envelope, read back as that value.
                    assertThat(JSON.readTree(ce.getData().toBytes())).isEqualTo(JSON.readTree(e.payload()));
                }
            }
            assertThat(read.stream().filter(r -> "o-1".equals(r.getSubject())).map(r -> r.getId()))
                    .as("order per aggregate").containsExactly(events.get(0).id().toString(), events.get(2).id().toString());
        }
    }

    private static List<CloudEvent> readCloudEvents(Pattern topics, int count) {
        var props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, OutboxContract.kafka());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "ce-" + System.nanoTime());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500");
        var read = new ArrayList<CloudEvent>();
        try (var consumer = new KafkaConsumer<>(props, new StringDeserializer(), new CloudEventDeserializer())) {
            consumer.subscribe(topics);
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> read.add(r.value()));
                return read.size() >= count;
            });
        }
        return read;
    }
}
