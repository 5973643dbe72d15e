package io.outboxrouter.publish;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.EventRouterOptions;
import io.outboxrouter.config.RoutingConfig;
import io.outboxrouter.config.TopicTemplate;
import io.outboxrouter.connect.EventRouter;
import io.outboxrouter.routing.Routing;
import io.outboxrouter.routing.RoutingResult;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.StringConverter;

/**
 * {@code routing.event-router}: each outbox row made into a record by Debezium's EventRouter semantics (the Connect
 * drop-in, {@link EventRouter}, run on the connector's record) and serialised with the converters Debezium Server uses for
 * its {@code debezium.format.*}, so that consumers see the bytes Debezium Server gave them. Two things Debezium Server drops
 * are kept, as on Kafka Connect: the {@code partition} placement and the {@code table.field.event.timestamp} timestamp.
 * A row the EventRouter refuses is a rejection for the dead-letter policy; {@code table.op.invalid.behavior: fatal} stops.
 */
public final class EventRouterRouting implements Routing {
    private final Set<String> outboxTables;
    private final Set<String> otherTables;
    private final EventRouter<SourceRecord> router = new EventRouter<>();
    private final Converter keys;
    private final Converter values;
    private final HeaderConverter headers;
    private final boolean timestamps;
    /** The column the record key comes from ({@code table.field.event.key}): the aggregate a parked event belongs to. */
    private final String keyColumn;
    /** The event id column ({@code table.field.event.id}). */
    private final String idColumn;

    /**
     * @param outboxTables the captured tables that are outboxes
     * @param otherTables  captured tables whose changes publish nothing by design (the heartbeat table)
     */
    public EventRouterRouting(Collection<String> outboxTables, Collection<String> otherTables, RoutingConfig.EventRouterMode mode) {
        this.outboxTables = Set.copyOf(outboxTables);
        this.otherTables = Set.copyOf(otherTables);
        router.configure(mode.options().all());
        this.keys = converter(mode.key(), true);
        this.values = converter(mode.value(), false);
        this.headers = (HeaderConverter) converter(mode.header(), false, "header");
        this.timestamps = mode.options().timestampColumn().isPresent();
        this.keyColumn = mode.options().get(EventRouterOptions.KEY);
        this.idColumn = mode.options().get(EventRouterOptions.ID);
    }

    @Override
    public java.util.Optional<String> aggregateOf(ChangeEvent change) {
        return columnText(change, keyColumn);
    }

    @Override
    public java.util.Optional<String> eventIdOf(ChangeEvent change) {
        return columnText(change, idColumn);
    }

    private static java.util.Optional<String> columnText(ChangeEvent change, String column) {
        Object v = column == null ? null : change.row().get(column);
        return v == null ? java.util.Optional.empty()
                : java.util.Optional.of(v instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : v.toString());
    }

    private static Converter converter(RoutingConfig.Format format, boolean isKey) {
        return (Converter) converter(format, isKey, isKey ? "key" : "value");
    }

    /** Configured as Debezium Server configures them: {@code converter.type} and, for JSON, {@code schemas.enable}. */
    private static Object converter(RoutingConfig.Format format, boolean isKey, String type) {
        var settings = new HashMap<String, Object>();
        settings.put("converter.type", type);
        Object c = switch (format) {
            case JSON, SCHEMALESS_JSON -> {
                settings.put("schemas.enable", Boolean.toString(format == RoutingConfig.Format.JSON));
                yield new JsonConverter();
            }
            case STRING -> new StringConverter();
            case BYTES -> new PassThroughBytes();
        };
        if (c instanceof HeaderConverter h && type.equals("header")) {
            h.configure(settings);
        } else {
            ((Converter) c).configure(settings, isKey);
        }
        return c;
    }

    @Override
    public RoutingResult route(ChangeEvent change) {
        if (!outboxTables.contains(change.table())) {
            return otherTables.contains(change.table()) ? new RoutingResult.Ignore(change.table() + " is not an outbox table")
                    : new RoutingResult.Unrouted(change.table());
        }
        if (change.record() == null) {
            return new RoutingResult.Reject("event_router", "no connector record to route (" + change.position() + ")", change);
        }
        SourceRecord out;
        try {
            out = router.apply(change.record());
        } catch (IllegalStateException e) {
            // table.op.invalid.behavior: fatal, as Debezium fails its task
            throw new UnroutableEventException(e.getMessage() + " (" + EventRouterOptions.OP_INVALID + ": fatal)");
        } catch (RuntimeException e) {
            return new RoutingResult.Reject(e instanceof DataException ? "event_router" : "event_router_error",
                    "Debezium's EventRouter refuses the row: " + e.getMessage(), change);
        }
        if (out == null) {
            return new RoutingResult.Ignore(change.operation() + " of an outbox row publishes nothing");
        }
        if (out == change.record()) {
            // Passed on as not being a change event, though it came from an outbox table: never dropped unseen.
            return new RoutingResult.Reject("event_router", "Debezium's EventRouter passed the row on unrouted (not a change event)", change);
        }
        if (!TopicTemplate.isLegalTopic(out.topic())) {
            return new RoutingResult.Reject("illegal_topic", EventRouterOptions.ROUTE_REPLACEMENT + " makes \"" + out.topic()
                    + "\", which is not a legal Kafka topic name", change);
        }
        if (out.kafkaPartition() != null && out.kafkaPartition() < 0) {
            return new RoutingResult.Reject("event_router", "the partition column gives " + out.kafkaPartition() + ", not a partition", change);
        }
        try {
            String topic = out.topic();
            byte[] key = keys.fromConnectData(topic, out.keySchema(), out.key());
            byte[] value = out.value() == null && out.valueSchema() == null ? null : values.fromConnectData(topic, out.valueSchema(), out.value());
            List<Header> kafkaHeaders = new ArrayList<>();
            for (var h : out.headers()) {
                kafkaHeaders.add(new RecordHeader(h.key(), headers.fromConnectHeader(topic, h.key(), h.schema(), h.value())));
            }
            return new RoutingResult.Publish(new ProducerRecord<>(topic, out.kafkaPartition(), timestamps ? out.timestamp() : null, key,
                    value, kafkaHeaders));
        } catch (RuntimeException e) {
            return new RoutingResult.Reject("event_router", "the record cannot be serialised as configured (routing.format): " + e.getMessage(),
                    change);
        }
    }

    /** Debezium Server's {@code binary} format: bytes as they are; anything else is refused with its schema. */
    static final class PassThroughBytes implements Converter, HeaderConverter {
        @Override
        public void configure(Map<String, ?> configs, boolean isKey) {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public byte[] fromConnectData(String topic, Schema schema, Object value) {
            if (value == null) {
                return null;
            }
            if (value instanceof byte[] b) {
                return b;
            }
            if (value instanceof java.nio.ByteBuffer buffer) {
                var b = new byte[buffer.remaining()];
                buffer.duplicate().get(b);
                return b;
            }
            throw new DataException("routing.format bytes takes bytes columns only, not " + (schema == null ? value.getClass().getSimpleName()
                    : schema.type()));
        }

        @Override
        public org.apache.kafka.connect.data.SchemaAndValue toConnectData(String topic, byte[] value) {
            return new org.apache.kafka.connect.data.SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, value);
        }

        @Override
        public byte[] fromConnectHeader(String topic, String headerKey, Schema schema, Object value) {
            return fromConnectData(topic, schema, value);
        }

        @Override
        public org.apache.kafka.connect.data.SchemaAndValue toConnectHeader(String topic, String headerKey, byte[] value) {
            return toConnectData(topic, value);
        }

        @Override
        public org.apache.kafka.common.config.ConfigDef config() {
            return new org.apache.kafka.common.config.ConfigDef();
        }

        @Override
        public void close() {
        }
    }
}
