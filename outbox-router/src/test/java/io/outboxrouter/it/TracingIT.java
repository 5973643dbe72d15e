package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * tracing.enabled with the OpenTelemetry SDK's in-memory exporter (set up as an agent would, before the router starts):
 * each publish is a producer span in the writer's trace, and the record carries the span's context on.
 */
class TracingIT {
    private static final InMemorySpanExporter SPANS = InMemorySpanExporter.create();

    @BeforeAll
    static void installOpenTelemetry() {
        // As an agent would, first thing; an earlier test in this JVM may have loaded Debezium's EventRouter, which takes
        // the global instance (a no-op one) when it loads.
        GlobalOpenTelemetry.resetForTest();
        GlobalOpenTelemetry.set(OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(SPANS)).build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                .build());
    }

    @Test
    void eachPublishIsASpanInTheWritersTraceAndTheRecordCarriesItOn() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("trace"));
        String topics = OutboxContract.unique("trace");
        var config = RouterConfigLoader.parse("name: " + OutboxContract.unique("trace-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "outbox:\n  headers:\n    tracingspancontext: traceparent\n"
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\nhttp:\n  enabled: false\ntracing:\n  enabled: true\n",
                Map.of());
        String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
        String writerSpan = "00f067aa0ba902b7";
        var traced = TestEvent.of("Order", "o-1", 1);
        var untraced = TestEvent.of("Order", "o-2", 1);
        try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            try (var ps = c.prepareStatement("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload, tracingspancontext) "
                    + "VALUES (?::uuid, ?, ?, ?, ?::jsonb, ?)")) {
                for (var e : new TestEvent[] {traced, untraced}) {
                    ps.setString(1, e.id().toString());
                    ps.setString(2, e.aggregateType());
                    ps.setString(3, e.aggregateId());
                    ps.setString(4, e.type());
                    ps.setString(5, e.payload());
                    ps.setString(6, e == traced ? "00-" + traceId + "-" + writerSpan + "-01" : null);
                    ps.executeUpdate();
                }
            }
            c.commit();
            var received = kafka.awaitIds(Set.of(traced.id(), untraced.id()), Duration.ofSeconds(60));

            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> span(traced) != null && span(untraced) != null);
            var publish = span(traced);
            assertThat(publish.getName()).isEqualTo("send " + topics + ".Order");
            assertThat(publish.getKind()).isEqualTo(SpanKind.PRODUCER);
            assertThat(publish.getTraceId()).as("in the writer's trace").isEqualTo(traceId);
            assertThat(publish.getParentSpanId()).as("a child of the writer's span").isEqualTo(writerSpan);
            assertThat(publish.getAttributes().get(AttributeKey.stringKey("messaging.destination.name"))).isEqualTo(topics + ".Order");
            var record = received.stream().filter(r -> r.id().equals(traced.id())).findFirst().orElseThrow();
            assertThat(record.header("traceparent")).as("the consumer continues from the publish")
                    .isEqualTo("00-" + traceId + "-" + publish.getSpanId() + "-01");

            var root = span(untraced);
            assertThat(root.getParentSpanContext().isValid()).as("no writer's trace: a trace of its own").isFalse();
            var other = received.stream().filter(r -> r.id().equals(untraced.id())).findFirst().orElseThrow();
            assertThat(other.header("traceparent")).contains(root.getTraceId()).contains(root.getSpanId());
        }
    }

    private static SpanData span(TestEvent e) {
        return SPANS.getFinishedSpanItems().stream()
                .filter(s -> e.id().toString().equals(s.getAttributes().get(AttributeKey.stringKey("messaging.message.id"))))
                .findFirst().orElse(null);
    }
}
