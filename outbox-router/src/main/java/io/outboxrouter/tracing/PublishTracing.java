package io.outboxrouter.tracing;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.outboxrouter.app.BuildInfo;
import io.outboxrouter.config.ConfigException;
import io.outboxrouter.config.RouterConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * An OpenTelemetry span for each event the router publishes ({@code tracing.enabled}): a producer span named
 * {@code send <topic>}, child of the writer's trace when the record carries its {@code traceparent} (from an outbox
 * column, through {@code outbox.headers}), ended when Kafka acknowledges the record. The record then carries the span's
 * own {@code traceparent}, so a consumer's trace continues from the publish. Exported as the standard {@code OTEL_*}
 * settings say (OTLP over HTTP by default), unless OpenTelemetry was set up already (an agent), whose SDK is then used.
 */
public final class PublishTracing {
    /** No spans. */
    public static final PublishTracing NONE = new PublishTracing(null);

    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
    private static final TextMapGetter<Headers> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Headers headers) {
            var keys = new ArrayList<String>();
            headers.forEach(h -> keys.add(h.key()));
            return keys;
        }

        @Override
        public String get(Headers headers, String key) {
            Header h = headers == null ? null : headers.lastHeader(key);
            return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
        }
    };
    private static final TextMapSetter<Headers> SETTER = (headers, key, value) -> {
        headers.remove(key);
        headers.add(key, value.getBytes(StandardCharsets.UTF_8));
    };

    private static OpenTelemetry sdk;

    private final Tracer tracer;

    private PublishTracing(Tracer tracer) {
        this.tracer = tracer;
    }

    /** The router's tracing: none unless {@code tracing.enabled}. */
    public static synchronized PublishTracing of(RouterConfig config) {
        if (!config.tracing().enabled()) {
            return NONE;
        }
        return new PublishTracing(openTelemetry().getTracer("io.outboxrouter", BuildInfo.current().version()));
    }

    /** The process's OpenTelemetry for the router's spans: an agent's, else one set up here once (the streams share it). */
    private static OpenTelemetry openTelemetry() {
        if (sdk == null) {
            // Debezium's EventRouter asks for the global instance when it loads, which makes it a no-op one when nothing set
            // it: the global instance is taken only when it makes real spans (an agent, or an application embedding us). The
            // probe span is never ended, so it is never exported.
            if (GlobalOpenTelemetry.isSet() && GlobalOpenTelemetry.get().getTracer("io.outboxrouter.probe").spanBuilder("probe")
                    .startSpan().getSpanContext().isValid()) {
                sdk = GlobalOpenTelemetry.get();
            } else {
                // Flushed by the SDK's own shutdown hook.
                sdk = autoConfigured(Map.of());
            }
        }
        return sdk;
    }

    /**
     * The SDK as the {@code OTEL_*} settings say, over the router's defaults: OTLP over HTTP (the SDK's own default is
     * gRPC, whose sender this jar leaves out), service name {@code outbox-router}, no metrics or logs exported. A setting
     * that asks for gRPC is refused with its name. {@code overrides} stand for settings a user made (tests).
     */
    static OpenTelemetry autoConfigured(Map<String, String> overrides) {
        var builder = AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesSupplier(() -> Map.of("otel.service.name", "outbox-router", "otel.metrics.exporter", "none",
                        "otel.logs.exporter", "none", "otel.exporter.otlp.protocol", "http/protobuf"));
        if (!overrides.isEmpty()) {
            builder.addPropertiesSupplier(() -> overrides);
        }
        var grpc = new String[1];
        builder.addPropertiesCustomizer(config -> {
            for (String key : List.of("otel.exporter.otlp.traces.protocol", "otel.exporter.otlp.protocol")) {
                String value = config.getString(key);
                if (value != null) {
                    if (value.trim().equalsIgnoreCase("grpc")) {
                        grpc[0] = key;
                    }
                    break; // the traces setting wins over the general one
                }
            }
            return Map.of();
        });
        try {
            return builder.build().getOpenTelemetrySdk();
        } catch (RuntimeException e) {
            if (grpc[0] != null) {
                throw new ConfigException(List.of("tracing.enabled: " + grpc[0] + " (" + envName(grpc[0]) + ") is grpc, and this jar "
                        + "exports OTLP over HTTP only: set it to http/protobuf, or leave it unset, and point OTEL_EXPORTER_OTLP_ENDPOINT "
                        + "at the collector's HTTP port (4318 by default)"));
            }
            throw new ConfigException(List.of("tracing.enabled: OpenTelemetry could not be set up from the OTEL_* settings: "
                    + e.getMessage()));
        }
    }

    private static String envName(String property) {
        return property.toUpperCase(java.util.Locale.ROOT).replace('.', '_');
    }

    public boolean enabled() {
        return tracer != null;
    }

    /**
     * Starts the span of one record's publish and puts its context in the record's headers, in place of the writer's.
     *
     * @return the span; null when tracing is off
     */
    public Span start(ProducerRecord<byte[], byte[]> record) {
        if (tracer == null) {
            return null;
        }
        Context parent = W3C.extract(Context.root(), record.headers(), GETTER);
        var span = tracer.spanBuilder("send " + record.topic())
                .setParent(parent)
                .setSpanKind(SpanKind.PRODUCER)
                .setAttribute("messaging.system", "kafka")
                .setAttribute("messaging.operation.type", "send")
                .setAttribute("messaging.destination.name", record.topic())
                .startSpan();
        String id = GETTER.get(record.headers(), "id");
        if (id != null) {
            span.setAttribute("messaging.message.id", id);
        }
        if (record.key() != null) {
            span.setAttribute("messaging.kafka.message.key", new String(record.key(), StandardCharsets.UTF_8));
        }
        record.headers().remove("tracestate");
        W3C.inject(Context.root().with(span), record.headers(), SETTER);
        return span;
    }

    /** Ends spans of records Kafka acknowledged. */
    public void acknowledged(List<Span> spans) {
        for (var span : spans) {
            if (span != null) {
                span.end();
            }
        }
    }

    /** Ends the span of a record Kafka refused. */
    public void refused(Span span, Throwable error) {
        if (span != null) {
            span.recordException(error);
            span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
            span.end();
        }
    }
}
