package io.outboxrouter.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.outboxrouter.config.ConfigException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The SDK set up from the standard settings, on the classpath the runnable jar has (OTLP's HTTP sender only). */
class PublishTracingSetupTest {
    @Test
    void theDocumentedSettingsStartAnHttpExporter() {
        // As docs/delivery.md says: an endpoint and nothing else. The SDK's own default protocol (gRPC) would fail here.
        var sdk = (OpenTelemetrySdk) PublishTracing.autoConfigured(Map.of("otel.exporter.otlp.endpoint", "http://127.0.0.1:4318"));
        try {
            assertThat(sdk.getSdkTracerProvider().toString()).contains("OtlpHttpSpanExporter").contains("outbox-router");
        } finally {
            sdk.close();
        }
    }

    @Test
    void grpcIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> PublishTracing.autoConfigured(Map.of("otel.exporter.otlp.protocol", "grpc")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("otel.exporter.otlp.protocol (OTEL_EXPORTER_OTLP_PROTOCOL) is grpc")
                .hasMessageContaining("http/protobuf");
        assertThatThrownBy(() -> PublishTracing.autoConfigured(Map.of("otel.exporter.otlp.traces.protocol", "grpc")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    }
}
