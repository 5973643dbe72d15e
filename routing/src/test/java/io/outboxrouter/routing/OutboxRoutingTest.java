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

class OutboxRoutingTest {
    private static final OutboxConfig OUTBOX = new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of("tracingspancontext", "traceparent"));
    private static final OutboxRouting ROUTING = new OutboxRouting(List.of("public.outbox"), OUTBOX, TopicTemplate.parse("outbox.event.${aggregatetype}"));

    private static Map<String, Object> row() {
        var row = new LinkedHashMap<String, Object>();
        row.put("id", "6f1f1c7e-0000-4000-8000-000000000001");
        row.put("aggregatetype", "Order");
        row.put("aggregateid", "42");
        row.put("type", "OrderPaid");
        row.put("payload", "{\"orderId\": 42, \"note\": \"caf\u00e9 \\\"x\\\"\"}");
        row.put("tracingspancontext", "00-abc-01");
        return row;
    }

    private static ChangeEvent change(Operation op, Map<String, Object> row) {
        return new ChangeEvent("public.outbox", op, row, "lsn:0/16B3748", Instant.parse("2026-11-21T10:00:00.123Z"));
    }

    private static ProducerRecord<byte[], byte[]> published(RoutingResult result) {
        assertThat(result).isInstanceOf(RoutingResult.Publish.class);
        return ((RoutingResult.Publish) result).record();
    }

    private static String header(ProducerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Test
    void anInsertBecomesARecordKeyedByAggregateIdWithPayloadBytesAsStored() {
        var r = published(ROUTING.route(change(Operation.INSERT, row())));
        assertThat(r.topic()).isEqualTo("outbox.event.Order");
        assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("42");
        assertThat(r.value()).isEqualTo(((String) row().get("payload")).getBytes(StandardCharsets.UTF_8));
        assertThat(header(r, "id")).isEqualTo("6f1f1c7e-0000-4000-8000-000000000001");
        assertThat(header(r, "type")).isEqualTo("OrderPaid");
        assertThat(header(r, "aggregatetype")).isEqualTo("Order");
        assertThat(header(r, "source.position")).isEqualTo("lsn:0/16B3748");
        assertThat(header(r, "source.table")).isEqualTo("public.outbox");
        assertThat(header(r, "source.commit.time")).isEqualTo("2026-11-21T10:00:00.123Z");
        assertThat(header(r, "traceparent")).isEqualTo("00-abc-01");
    }

    @Test
    void snapshotRowsPublishLikeInsertsAndUpdatesAndDeletesPublishNothing() {
        assertThat(ROUTING.route(change(Operation.SNAPSHOT, row()))).isInstanceOf(RoutingResult.Publish.class);
        assertThat(ROUTING.route(change(Operation.UPDATE, row()))).isInstanceOf(RoutingResult.Ignore.class);
        assertThat(ROUTING.route(change(Operation.DELETE, row()))).isInstanceOf(RoutingResult.Ignore.class);
    }

    @Test
    void changesOfOtherCapturedTablesSuchAsTheHeartbeatPublishNothing() {
        var heartbeat = new ChangeEvent("public.outbox_router_heartbeat", Operation.INSERT, row(), "lsn:0/1", null);
        var routing = new OutboxRouting(List.of("public.outbox"), List.of("public.outbox_router_heartbeat"), OUTBOX,
                TopicTemplate.parse("outbox.event.${aggregatetype}"));
        assertThat(routing.route(heartbeat)).isInstanceOf(RoutingResult.Ignore.class);
    }

    @Test
    void aChangeFromATableNoOutboxIsConfiguredForIsUnroutedNotIgnored() {
        // source.tables says public.Outbox; Postgres delivers public.outbox: never dropped without a trace.
        var routing = new OutboxRouting(List.of("public.Outbox"), OUTBOX, TopicTemplate.parse("outbox.event.${aggregatetype}"));
        assertThat(routing.route(change(Operation.INSERT, row()))).isEqualTo(new RoutingResult.Unrouted("public.outbox"));
    }

    @Test
    void binaryPayloadsPassThroughAndNullPayloadsBecomeTombstones() {
        var row = row();
        byte[] bytes = {0, (byte) 0xff, 0x7f, (byte) 0x80};
        row.put("payload", bytes);
        assertThat(published(ROUTING.route(change(Operation.INSERT, row))).value()).isEqualTo(bytes);
        row.put("payload", null);
        assertThat(published(ROUTING.route(change(Operation.INSERT, row))).value()).isNull();
    }

    @Test
    void nullOptionalColumnsAreLeftOutOfTheHeaders() {
        var row = row();
        row.put("type", null);
        row.put("tracingspancontext", null);
        var r = published(ROUTING.route(change(Operation.INSERT, row)));
        assertThat(r.headers().lastHeader("type")).isNull();
        assertThat(r.headers().lastHeader("traceparent")).isNull();
    }

    @Test
    void topicTemplatesUseLogicalNamesAndAnyConfiguredColumn() {
        var outbox = new OutboxConfig(new OutboxConfig.Columns("event_id", "kind", "entity", "event", "body"), Map.of("tenant", "x-tenant"));
        var routing = new OutboxRouting(List.of("public.outbox"), outbox, TopicTemplate.parse("${tenant}.${aggregatetype}.${type}"));
        var row = new LinkedHashMap<String, Object>(Map.of("event_id", 7L, "kind", "Order", "entity", "o-1", "event", "Created",
                "body", "{}", "tenant", "acme"));
        var r = published(routing.route(change(Operation.INSERT, row)));
        assertThat(r.topic()).isEqualTo("acme.Order.Created");
        assertThat(header(r, "id")).isEqualTo("7");
        assertThat(header(r, "x-tenant")).isEqualTo("acme");
    }

    @Test
    void rowsThatCannotBecomeEventsAreRejectedWithTheReason() {
        var noAggregate = row();
        noAggregate.put("aggregateid", null);
        assertThat(reason(noAggregate)).isEqualTo("aggregate id (column aggregateid) is null");

        var noId = row();
        noId.put("id", null);
        assertThat(reason(noId)).isEqualTo("event id (column id) is null");

        var missingColumn = row();
        missingColumn.remove("type");
        assertThat(reason(missingColumn)).isEqualTo("column type is missing from table public.outbox (set its name under outbox.columns)");

        var missingHeader = row();
        missingHeader.remove("tracingspancontext");
        assertThat(reason(missingHeader)).isEqualTo("column tracingspancontext named in outbox.headers is missing from table public.outbox");

        var badTopic = row();
        badTopic.put("aggregatetype", "Order Line");
        assertThat(reason(badTopic)).isEqualTo("topic template outbox.event.${aggregatetype} renders \"outbox.event.Order Line\", "
                + "which is not a legal Kafka topic name");

        var nullTopicPart = row();
        nullTopicPart.put("aggregatetype", null);
        assertThat(reason(nullTopicPart)).isEqualTo("topic template outbox.event.${aggregatetype} needs a value that is null in this row");
    }

    @Test
    void withPayloadFormatJsonAPayloadThatDoesNotParseIsRejectedAndValidOnesPassUnchanged() {
        var json = new OutboxRouting(List.of("public.outbox"), new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of(),
                OutboxConfig.PayloadFormat.JSON), TopicTemplate.parse("outbox.event.${aggregatetype}"));
        for (String valid : new String[] {"{\"a\": [1, 2, {\"b\": null}]}", "42", "\"text\"", "  [] \n"}) {
            var row = row();
            row.put("payload", valid);
            assertThat(published(json.route(change(Operation.INSERT, row))).value()).as(valid).isEqualTo(valid.getBytes(StandardCharsets.UTF_8));
        }
        var tombstone = row();
        tombstone.put("payload", null);
        assertThat(published(json.route(change(Operation.INSERT, tombstone))).value()).isNull();
        for (var invalid : Map.of("{\"a\": 1", "Unexpected end-of-input", "{} {}", "more than one JSON value", "", "it is empty",
                "not json", "Unrecognized token 'not'").entrySet()) {
            var row = row();
            row.put("payload", invalid.getKey().getBytes(StandardCharsets.UTF_8));
            var result = json.route(change(Operation.INSERT, row));
            assertThat(result).as(invalid.getKey()).isInstanceOfSatisfying(RoutingResult.Reject.class, r -> {
                assertThat(r.kind()).isEqualTo("invalid_json");
                assertThat(r.reason()).contains("payload (column payload) is not valid JSON", invalid.getValue());
            });
        }
        var unchecked = row();
        unchecked.put("payload", "not json");
        assertThat(ROUTING.route(change(Operation.INSERT, unchecked))).as("bytes: unchecked").isInstanceOf(RoutingResult.Publish.class);
    }

    @Test
    void aDeadLetterCarriesThePayloadBytesTheReasonAndThePosition() {
        var row = row();
        row.put("aggregatetype", "Order Line");
        var reject = (RoutingResult.Reject) ROUTING.route(change(Operation.INSERT, row));
        var dl = new DeadLetters("outbox.dead-letters", OutboxConfig.Columns.DEFAULTS).record(reject);
        assertThat(dl.topic()).isEqualTo("outbox.dead-letters");
        assertThat(new String(dl.key(), StandardCharsets.UTF_8)).isEqualTo("42");
        assertThat(dl.value()).isEqualTo(((String) row.get("payload")).getBytes(StandardCharsets.UTF_8));
        assertThat(header(dl, "dead-letter.reason")).contains("not a legal Kafka topic name");
        assertThat(header(dl, "source.position")).isEqualTo("lsn:0/16B3748");
        assertThat(header(dl, "id")).isEqualTo("6f1f1c7e-0000-4000-8000-000000000001");
        assertThat(header(dl, "dead-letter.columns")).contains("\"aggregatetype\":\"Order Line\"").doesNotContain("payload");
    }

    private static String reason(Map<String, Object> row) {
        var result = ROUTING.route(change(Operation.INSERT, row));
        assertThat(result).isInstanceOf(RoutingResult.Reject.class);
        return ((RoutingResult.Reject) result).reason();
    }
}
