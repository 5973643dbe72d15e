package io.outboxrouter.routing;

import io.cloudevents.core.builder.CloudEventBuilder;
import io.cloudevents.core.format.EventFormat;
import io.cloudevents.core.provider.EventFormatProvider;
import io.cloudevents.jackson.JsonFormat;
import io.cloudevents.kafka.KafkaMessageFactory;
import io.outboxrouter.config.RoutingConfig;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * An outbox event as a CloudEvent 1.0 in the Kafka protocol binding, made with the CloudEvents SDK: {@code id} from the
 * event id, {@code type} from the type column, {@code source} from a template of the row, {@code subject} and the
 * {@code partitionkey} extension from the aggregate id (the record's key), {@code time} from the source transaction's
 * commit time, {@code aggregatetype} as an extension. Binary mode keeps the payload as the value and puts the attributes
 * in {@code ce_*} headers; structured mode makes the value one JSON envelope. The router's own headers stay either way.
 */
final class CloudEventsEnvelope {
    private static final String JSON_CONTENT = "application/json";
    private static final String BYTES_CONTENT = "application/octet-stream";

    private final RoutingConfig.CloudEvents config;
    private final String dataContentType;
    private final EventFormat structured;

    /** @param json whether payloads are checked JSON ({@code outbox.payload-format: json}): the data content type says so */
    CloudEventsEnvelope(RoutingConfig.CloudEvents config, boolean json) {
        this.config = config;
        this.dataContentType = json ? JSON_CONTENT : BYTES_CONTENT;
        this.structured = config.mode() == RoutingConfig.CloudEvents.Mode.STRUCTURED
                ? EventFormatProvider.getInstance().resolveFormat(JsonFormat.CONTENT_TYPE) : null;
        if (config.mode() == RoutingConfig.CloudEvents.Mode.STRUCTURED && structured == null) {
            throw new IllegalStateException("the CloudEvents JSON format (cloudevents-json-jackson) is not on the class path");
        }
    }

    /** The event wrapped, or the reason it cannot be (a {@code source} that is not a URI reference, say). */
    Result wrap(ProducerRecord<byte[], byte[]> plain, String id, String type, String aggregateType, String aggregateId,
                Instant commitTime, Function<String, String> column) {
        Optional<String> source = config.source().render(column);
        if (source.isEmpty()) {
            return new Result(null, "CloudEvents source template " + config.source() + " needs a value that is null in this row");
        }
        URI sourceUri;
        try {
            sourceUri = new URI(source.get());
        } catch (URISyntaxException e) {
            return new Result(null, "CloudEvents source \"" + source.get() + "\" is not a URI reference: " + e.getReason());
        }
        if (type == null) {
            return new Result(null, "event type is null: a CloudEvent needs a type");
        }
        var event = CloudEventBuilder.v1()
                .withId(id)
                .withSource(sourceUri)
                .withType(type)
                .withSubject(aggregateId)
                .withExtension("partitionkey", aggregateId);
        if (aggregateType != null && !aggregateType.isEmpty()) {
            event.withExtension("aggregatetype", aggregateType);
        }
        if (commitTime != null) {
            event.withTime(commitTime.atOffset(ZoneOffset.UTC));
        }
        if (plain.value() != null) {
            event.withDataContentType(dataContentType).withData(plain.value());
        }
        var writer = KafkaMessageFactory.createWriter(plain.topic(), null, null, plain.key());
        ProducerRecord<byte[], byte[]> wrapped = structured == null ? writer.writeBinary(event.build())
                : writer.writeStructured(event.build(), structured);
        for (Header h : plain.headers()) {
            wrapped.headers().add(h);
        }
        return new Result(wrapped, null);
    }

    /** A wrapped record, or the reason why not. */
    record Result(ProducerRecord<byte[], byte[]> record, String refused) {
    }
}
