package io.outboxrouter.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.cloudevents.CloudEvent;
import io.cloudevents.kafka.CloudEventDeserializer;
import io.outboxrouter.change.ChangeEvent.Operation;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RoutingConfig;
import io.outboxrouter.config.TopicTemplate;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

class CloudEventsEnvelopeTest {
    private static final String PAYLOAD = "{\"orderId\":42,\"note\":\"caf\u00e9\"}";

    private static OutboxRouting routing(RoutingConfig.CloudEvents.Mode mode, String source, OutboxConfig.PayloadFormat format) {
        return new OutboxRouting(List.of("public.outbox"), List.of(), null,
                new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of(), format), TopicTemplate.parse("outbox.event.${aggregatetype}"),
                new RoutingConfig.CloudEvents(mode, TopicTemplate.parseText(source)));
    }

    private static ChangeEvent insert(String type) {
        var row = new LinkedHashMap<String, Object>();
        row.put("id", "6f1f1c7e-0000-4000-8000-000000000001");
        row.put("aggregatetype", "Order");
        row.put("aggregateid", "42");
        row.put("type", type);
        row.put("payload", PAYLOAD);
        return new ChangeEvent("public.outbox", Operation.INSERT, row, "lsn:0/16B3748", Instant.parse("2026-11-21T10:00:00.123456Z"));
    }

    private static ProducerRecord<byte[], byte[]> published(RoutingResult result) {
        assertThat(result).isInstanceOf(RoutingResult.Publish.class);
        return ((RoutingResult.Publish) result).record();
    }

    /** What a consumer with the SDK's Kafka deserializer reads. */
    private static CloudEvent read(ProducerRecord<byte[], byte[]> r) {
        try (var deserializer = new CloudEventDeserializer()) {
            return deserializer.deserialize(r.topic(), r.headers(), r.value());
        }
    }

    private static String header(ProducerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Test
    void binaryModeKeepsThePayloadAsTheValueAndPutsTheAttributesInHeaders() {
        var r = published(routing(RoutingConfig.CloudEvents.Mode.BINARY, "/orders/${aggregatetype}", OutboxConfig.PayloadFormat.JSON)
                .route(insert("OrderPaid")));
        assertThat(r.value()).isEqualTo(PAYLOAD.getBytes(StandardCharsets.UTF_8));
        assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("42");
        assertThat(header(r, "ce_specversion")).isEqualTo("1.0");
        assertThat(header(r, "content-type")).isEqualTo("application/json");
        assertThat(header(r, "id")).as("the router's own headers stay").isEqualTo("6f1f1c7e-0000-4000-8000-000000000001");

        var event = read(r);
        assertThat(event.getId()).isEqualTo("6f1f1c7e-0000-4000-8000-000000000001");
        assertThat(event.getType()).isEqualTo("OrderPaid");
        assertThat(event.getSource()).isEqualTo(URI.create("/orders/Order"));
        assertThat(event.getSubject()).isEqualTo("42");
        assertThat(event.getTime()).isEqualTo(OffsetDateTime.parse("2026-11-21T10:00:00.123456Z"));
        assertThat(event.getDataContentType()).isEqualTo("application/json");
        assertThat(event.getExtension("partitionkey")).isEqualTo("42");
        assertThat(event.getExtension("aggregatetype")).isEqualTo("Order");
        assertThat(event.getData().toBytes()).isEqualTo(PAYLOAD.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void structuredModeMakesTheValueOneJsonEnvelope() {
        var r = published(routing(RoutingConfig.CloudEvents.Mode.STRUCTURED, "/outbox/${aggregatetype}", OutboxConfig.PayloadFormat.JSON)
                .route(insert("OrderPaid")));
        assertThat(header(r, "content-type")).startsWith("application/cloudevents+json");
        assertThat(header(r, "ce_id")).isNull();
        String value = new String(r.value(), StandardCharsets.UTF_8);
        assertThat(value).contains("\"specversion\":\"1.0\"").contains("\"data\":{\"orderId\":42");
        var event = read(r);
        assertThat(event.getId()).isEqualTo("6f1f1c7e-0000-4000-8000-000000000001");
        assertThat(event.getSource()).isEqualTo(URI.create("/outbox/Order"));
        assertThat(event.getExtension("partitionkey")).isEqualTo("42");
        assertThat(new String(event.getData().toBytes(), StandardCharsets.UTF_8)).isEqualTo(PAYLOAD);
    }

    @Test
    void bytesPayloadsAreOctetStreamAndStructuredModeCarriesThemAsBase64() {
        var r = published(routing(RoutingConfig.CloudEvents.Mode.STRUCTURED, "/outbox", OutboxConfig.PayloadFormat.BYTES)
                .route(insert("OrderPaid")));
        assertThat(new String(r.value(), StandardCharsets.UTF_8)).contains("\"data_base64\"");
        assertThat(read(r).getData().toBytes()).isEqualTo(PAYLOAD.getBytes(StandardCharsets.UTF_8));
        assertThat(read(r).getDataContentType()).isEqualTo("application/octet-stream");
    }

    @Test
    void aRowThatCannotBeACloudEventIsRejectedWithTheReason() {
        var noType = routing(RoutingConfig.CloudEvents.Mode.BINARY, "/outbox", OutboxConfig.PayloadFormat.BYTES).route(insert(null));
        assertThat(noType).isInstanceOfSatisfying(RoutingResult.Reject.class, r -> assertThat(r.reason()).contains("a CloudEvent needs a type"));
        var badSource = routing(RoutingConfig.CloudEvents.Mode.BINARY, "not a uri ${aggregatetype}", OutboxConfig.PayloadFormat.BYTES)
                .route(insert("OrderPaid"));
        assertThat(badSource).isInstanceOfSatisfying(RoutingResult.Reject.class,
                r -> assertThat(r.reason()).contains("is not a URI reference"));
    }
}
