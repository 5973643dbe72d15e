package io.outboxrouter.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.change.ChangeEvent.Operation;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.TopicTemplate;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A tableless outbox: logical decoding messages routed like outbox rows. */
class MessageRoutingTest {
    private static final OutboxConfig OUTBOX = new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of("tenant", "tenant"));
    private static final OutboxRouting ROUTING = new OutboxRouting(List.of("public.outbox"), List.of(), "outbox", OUTBOX,
            TopicTemplate.parse("outbox.event.${aggregatetype}"));

    private static ChangeEvent message(Operation op, String prefix, String content) {
        var row = new LinkedHashMap<String, Object>();
        row.put(ChangeEvent.MESSAGE_PREFIX, prefix);
        row.put(ChangeEvent.MESSAGE_CONTENT, content.getBytes(StandardCharsets.UTF_8));
        return new ChangeEvent(ChangeEvent.messageSource(prefix), op, row, "lsn:0/16B3748", Instant.parse("2026-11-21T10:00:00.123Z"));
    }

    private static ChangeEvent message(String content) {
        return message(Operation.MESSAGE, "outbox", content);
    }

    private static ProducerRecord<byte[], byte[]> published(RoutingResult result) {
        assertThat(result).isInstanceOf(RoutingResult.Publish.class);
        return ((RoutingResult.Publish) result).record();
    }

    private static String header(ProducerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @Test
    void aMessageBecomesTheSameRecordAsAnOutboxRowWithThePayloadBytesAsTheyAppear() {
        String payload = "{ \"orderId\" : 42,\n  \"note\": \"caf\u00e9 \\\"x\\\" \\u00e9\", \"lines\": [1, 2.50, {\"a\": null}] }";
        var r = published(ROUTING.route(message("{\"id\": \"6f1f1c7e-0000-4000-8000-000000000001\", \"aggregatetype\": \"Order\", "
                + "\"aggregateid\": \"42\", \"type\": \"OrderPaid\", \"payload\": " + payload + ", \"tenant\": \"acme\"}")));
        assertThat(r.topic()).isEqualTo("outbox.event.Order");
        assertThat(text(r.key())).isEqualTo("42");
        assertThat(text(r.value())).isEqualTo(payload);
        assertThat(header(r, "id")).isEqualTo("6f1f1c7e-0000-4000-8000-000000000001");
        assertThat(header(r, "type")).isEqualTo("OrderPaid");
        assertThat(header(r, "aggregatetype")).isEqualTo("Order");
        assertThat(header(r, "source.position")).isEqualTo("lsn:0/16B3748");
        assertThat(header(r, "source.table")).isEqualTo("message:outbox");
        assertThat(header(r, "source.commit.time")).isEqualTo("2026-11-21T10:00:00.123Z");
        assertThat(header(r, "tenant")).isEqualTo("acme");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"text with \\\"quotes\\\" and \\u00e9\"", "12.5e3", "-7", "true", "false", "[]", "{}", "[{\"a\":[1,{}]}]"})
    void anyJsonValueIsThePayloadByteForByte(String payload) {
        var r = published(ROUTING.route(message("{\"id\":1,\"aggregateid\":7,\"aggregatetype\":\"T\",\"payload\":" + payload + "}")));
        assertThat(text(r.value())).isEqualTo(payload);
        assertThat(text(r.key())).isEqualTo("7");
        assertThat(header(r, "id")).isEqualTo("1");
    }

    @Test
    void aNullOrMissingPayloadIsANullValueAndTheOtherFieldsMayComeInAnyOrder() {
        var nul = published(ROUTING.route(message("{\"payload\": null, \"aggregateid\": \"a\", \"aggregatetype\": \"T\", \"id\": \"x\"}")));
        assertThat(nul.value()).isNull();
        assertThat(nul.topic()).isEqualTo("outbox.event.T");
        var missing = published(ROUTING.route(message("{\"id\": \"x\", \"aggregatetype\": \"T\", \"aggregateid\": \"a\"}")));
        assertThat(missing.value()).isNull();
    }

    @Test
    void fieldsFollowTheConfiguredColumnNamesForTemplatesAndHeaders() {
        var columns = new OutboxConfig.Columns("event_id", "agg_type", "agg_id", "event_type", "body");
        var routing = new OutboxRouting(List.of(), List.of(), "outbox", new OutboxConfig(columns, Map.of("region", "x-region")),
                TopicTemplate.parse("${region}.${aggregatetype}.${type}"));
        var r = published(routing.route(message("{\"id\": \"e1\", \"aggregatetype\": \"Order\", \"aggregateid\": \"9\", "
                + "\"type\": \"Paid\", \"payload\": {\"a\": 1}, \"region\": \"eu\"}")));
        assertThat(r.topic()).isEqualTo("eu.Order.Paid");
        assertThat(header(r, "x-region")).isEqualTo("eu");
        assertThat(text(r.value())).isEqualTo("{\"a\": 1}");
    }

    @Test
    void aNonTransactionalMessageIsRefusedWithTheReason() {
        var result = ROUTING.route(message(Operation.NON_TRANSACTIONAL_MESSAGE, "outbox",
                "{\"id\": \"x\", \"aggregateid\": \"a\", \"payload\": {}}"));
        assertThat(result).isInstanceOfSatisfying(RoutingResult.Reject.class, r -> {
            assertThat(r.kind()).isEqualTo("non_transactional_message");
            assertThat(r.reason()).contains("not atomic with the business transaction", "pg_logical_emit_message(true");
        });
    }

    @Test
    void contentThatIsNotTheShapeIsRejectedSayingWhat() {
        assertRejected("", "invalid_message", "empty");
        assertRejected("[1]", "invalid_message", "not a JSON object");
        assertRejected("{\"id\": \"x\", \"aggregateid\": ", "invalid_message", "not valid JSON");
        assertRejected("{\"id\": \"x\", \"aggregateid\": \"a\"} {}", "invalid_message", "more than one JSON value");
        assertRejected("{\"id\": \"x\", \"id\": \"y\", \"aggregateid\": \"a\"}", "invalid_message", "field id appears twice");
        assertRejected("{\"id\": {\"v\": 1}, \"aggregateid\": \"a\"}", "invalid_message", "field id is a JSON object");
        assertRejected("{\"aggregateid\": \"a\", \"payload\": {}}", "null_event_id", "field id");
        assertRejected("{\"id\": \"x\", \"aggregateid\": null}", "null_aggregate_id", "field aggregateid");
        assertRejected("not json", "invalid_message", "not valid JSON");
    }

    @Test
    void messagesOfOtherPrefixesAndRoutersWithoutMessagesPublishNothing() {
        String content = "{\"id\": \"x\", \"aggregateid\": \"a\"}";
        assertThat(ROUTING.route(message(Operation.MESSAGE, "audit", content))).isInstanceOf(RoutingResult.Ignore.class);
        var tablesOnly = new OutboxRouting(List.of("public.outbox"), OUTBOX, TopicTemplate.parse("t"));
        assertThat(tablesOnly.route(message(content))).isInstanceOf(RoutingResult.Ignore.class);
    }

    @Test
    void aRejectedMessageIsDeadLetteredWithItsContentAsWritten() {
        String content = "{\"id\": \"x\", \"aggregateid\": null, \"payload\": {\"k\": 1}}";
        var reject = (RoutingResult.Reject) ROUTING.route(message(content));
        var dl = new DeadLetters("outbox.dead-letters", OUTBOX.columns()).record(reject);
        assertThat(dl.topic()).isEqualTo("outbox.dead-letters");
        assertThat(dl.key()).isNull();
        assertThat(text(dl.value())).isEqualTo(content);
        assertThat(header(dl, DeadLetters.HEADER_REASON)).contains("aggregate id");
        assertThat(header(dl, "source.table")).isEqualTo("message:outbox");
        assertThat(header(dl, DeadLetters.HEADER_COLUMNS)).isEqualTo("{\"prefix\":\"outbox\",\"transactional\":true}");
    }

    private static void assertRejected(String content, String kind, String reason) {
        assertThat(ROUTING.route(message(content))).as(content).isInstanceOfSatisfying(RoutingResult.Reject.class, r -> {
            assertThat(r.kind()).isEqualTo(kind);
            assertThat(r.reason()).contains(reason);
        });
    }
}
