package io.outboxrouter.routing;

import static io.outboxrouter.routing.ColumnValues.bytes;
import static io.outboxrouter.routing.ColumnValues.text;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RoutingConfig;
import io.outboxrouter.config.TopicTemplate;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * Change record in, Kafka record (or the reason why not) out; pure, no I/O. An outbox INSERT becomes a record
 * keyed by the aggregate id, on the topic the template renders, with the payload bytes as stored and headers
 * {@code id}, {@code type}, {@code aggregatetype}, the source position, table and commit time, and any columns
 * mapped to headers. UPDATEs and DELETEs publish nothing, so insert-then-delete in one transaction still publishes.
 */
public final class OutboxRouting implements Routing {
    public static final String HEADER_ID = "id";
    public static final String HEADER_TYPE = "type";
    public static final String HEADER_AGGREGATE_TYPE = "aggregatetype";
    public static final String HEADER_POSITION = "source.position";
    public static final String HEADER_TABLE = "source.table";
    public static final String HEADER_COMMIT_TIME = "source.commit.time";

    private final Set<String> outboxTables;
    private final String messagePrefix;
    private final boolean anyTable;
    private final Set<String> otherTables;
    private final OutboxConfig.Columns columns;
    private final Map<String, String> headerColumns;
    private final TopicTemplate topic;
    private final OutboxConfig.PayloadFormat payloadFormat;
    private final Map<String, Boolean> legalTopics = new HashMap<>();
    private final List<String> requiredColumns;
    private final CloudEventsEnvelope envelope;
    /** The last commit time and its text: the events of one source transaction share it. Engine thread only. */
    private Instant lastCommitTime;
    private byte[] lastCommitTimeText;

    /** For outbox tables only: a change from any other table is {@link RoutingResult.Unrouted}. */
    public OutboxRouting(Collection<String> outboxTables, OutboxConfig outbox, TopicTemplate topic) {
        this(outboxTables, Set.of(), outbox, topic);
    }

    /**
     * @param outboxTables the captured tables that are outboxes
     * @param otherTables  captured tables whose changes publish nothing by design (the heartbeat table)
     */
    public OutboxRouting(Collection<String> outboxTables, Collection<String> otherTables, OutboxConfig outbox, TopicTemplate topic) {
        this(outboxTables, otherTables, null, outbox, topic);
    }

    /**
     * @param messagePrefix the prefix of the logical decoding messages that are outbox events; null: none are
     */
    public OutboxRouting(Collection<String> outboxTables, Collection<String> otherTables, String messagePrefix, OutboxConfig outbox,
                         TopicTemplate topic) {
        this(outboxTables, otherTables, false, messagePrefix, outbox, topic, null);
    }

    /** @param cloudEvents each event as a CloudEvent ({@code routing.envelope: cloudevents}); null: the payload as it is */
    public OutboxRouting(Collection<String> outboxTables, Collection<String> otherTables, String messagePrefix, OutboxConfig outbox,
                         TopicTemplate topic, RoutingConfig.CloudEvents cloudEvents) {
        this(outboxTables, otherTables, false, messagePrefix, outbox, topic, cloudEvents);
    }

    /**
     * For the Kafka Connect transformation with no {@code source.tables}: every captured table is an outbox (the connector's
     * {@code table.include.list} says which).
     */
    public static OutboxRouting anyTable(String messagePrefix, OutboxConfig outbox, TopicTemplate topic,
                                         RoutingConfig.CloudEvents cloudEvents) {
        return new OutboxRouting(Set.of(), Set.of(), true, messagePrefix, outbox, topic, cloudEvents);
    }

    private OutboxRouting(Collection<String> outboxTables, Collection<String> otherTables, boolean anyTable, String messagePrefix,
                          OutboxConfig outbox, TopicTemplate topic, RoutingConfig.CloudEvents cloudEvents) {
        this.envelope = cloudEvents == null ? null : new CloudEventsEnvelope(cloudEvents, outbox.payloadFormat() == OutboxConfig.PayloadFormat.JSON);
        this.anyTable = anyTable;
        this.messagePrefix = messagePrefix;
        this.outboxTables = Set.copyOf(outboxTables);
        this.otherTables = Set.copyOf(otherTables);
        this.columns = outbox.columns();
        this.headerColumns = outbox.headers();
        this.topic = topic;
        this.payloadFormat = outbox.payloadFormat();
        this.requiredColumns = List.of(columns.id(), columns.aggregateType(), columns.aggregateId(), columns.type(), columns.payload());
    }

    @Override
    public RoutingResult route(ChangeEvent change) {
        if (change.operation().isMessage()) {
            return routeMessage(change);
        }
        if (!anyTable && !outboxTables.contains(change.table())) {
            return otherTables.contains(change.table()) ? new RoutingResult.Ignore(change.table() + " is not an outbox table")
                    : new RoutingResult.Unrouted(change.table());
        }
        if (change.operation() == ChangeEvent.Operation.UPDATE || change.operation() == ChangeEvent.Operation.DELETE) {
            return new RoutingResult.Ignore(change.operation() + " of an outbox row publishes nothing");
        }
        var row = change.row();
        for (String column : requiredColumns) {
            if (!row.containsKey(column)) {
                return reject(change, "missing_column", "column " + column + " is missing from table " + change.table()
                        + " (set its name under outbox.columns)");
            }
        }
        for (String column : headerColumns.keySet()) {
            if (!row.containsKey(column)) {
                return reject(change, "missing_column", "column " + column + " named in outbox.headers is missing from table " + change.table());
            }
        }
        return routeRow(change, row);
    }

    @Override
    public java.util.Optional<String> aggregateOf(ChangeEvent change) {
        return rowOf(change).map(row -> text(row.get(columns.aggregateId())));
    }

    @Override
    public java.util.Optional<String> eventIdOf(ChangeEvent change) {
        return rowOf(change).map(row -> text(row.get(columns.id())));
    }

    /** A table row as it is, a message's content read as one; empty when that content cannot be read. */
    private java.util.Optional<Map<String, Object>> rowOf(ChangeEvent change) {
        if (!change.operation().isMessage()) {
            return java.util.Optional.of(change.row());
        }
        try {
            return java.util.Optional.of(MessageContent.parse((byte[]) change.row().get(ChangeEvent.MESSAGE_CONTENT), columns));
        } catch (MessageContent.Invalid | RuntimeException e) {
            return java.util.Optional.empty();
        }
    }

    /**
     * A logical decoding message with the configured prefix: its content is the event ({@link MessageContent}). One
     * written outside a transaction is refused: it is not atomic with the business transaction (written even when that
     * rolls back), so publishing it would break the outbox's promise.
     */
    private RoutingResult routeMessage(ChangeEvent change) {
        Object prefix = change.row().get(ChangeEvent.MESSAGE_PREFIX);
        if (messagePrefix == null || !messagePrefix.equals(prefix)) {
            return new RoutingResult.Ignore("logical decoding message with prefix " + prefix + " is not an outbox event");
        }
        if (change.operation() == ChangeEvent.Operation.NON_TRANSACTIONAL_MESSAGE) {
            return reject(change, "non_transactional_message", "logical decoding message written outside a transaction "
                    + "(pg_logical_emit_message(false, ...)): it is not atomic with the business transaction (it stays written when "
                    + "that rolls back); write it with pg_logical_emit_message(true, ...) or outbox_emit(...)");
        }
        Map<String, Object> row;
        try {
            row = MessageContent.parse((byte[]) change.row().get(ChangeEvent.MESSAGE_CONTENT), columns);
        } catch (MessageContent.Invalid e) {
            return reject(change, "invalid_message", e.getMessage());
        }
        return routeRow(change, row);
    }

    /** An outbox event's row (a table's, or a message's content read as one): the record, or why not. */
    private RoutingResult routeRow(ChangeEvent change, Map<String, Object> row) {
        boolean message = change.operation().isMessage();
        String id = text(row.get(columns.id()));
        if (id == null) {
            return reject(change, "null_event_id", message ? "event id (field " + MessageContent.ID + ") is null or missing"
                    : "event id (column " + columns.id() + ") is null");
        }
        String aggregateId = text(row.get(columns.aggregateId()));
        if (aggregateId == null) {
            return reject(change, "null_aggregate_id", message ? "aggregate id (field " + MessageContent.AGGREGATE_ID
                    + ") is null or missing" : "aggregate id (column " + columns.aggregateId() + ") is null");
        }
        String aggregateType = text(row.get(columns.aggregateType()));
        String type = text(row.get(columns.type()));

        Optional<String> rendered = topic.render(placeholder -> text(row.get(columns.column(placeholder))));
        if (rendered.isEmpty()) {
            return reject(change, "illegal_topic", "topic template " + topic + " needs a value that is null in this row");
        }
        if (!legal(rendered.get())) {
            return reject(change, "illegal_topic", "topic template " + topic + " renders \"" + rendered.get() + "\", which is not a legal Kafka topic name");
        }

        var headers = new ArrayList<Header>();
        header(headers, HEADER_ID, id);
        header(headers, HEADER_TYPE, type);
        header(headers, HEADER_AGGREGATE_TYPE, aggregateType);
        header(headers, HEADER_POSITION, change.position());
        header(headers, HEADER_TABLE, change.table());
        if (change.commitTime() != null) {
            headers.add(new RecordHeader(HEADER_COMMIT_TIME, commitTimeText(change.commitTime())));
        }
        headerColumns.forEach((column, name) -> {
            Object v = row.get(column);
            if (v != null) {
                headers.add(new RecordHeader(name, bytes(v)));
            }
        });
        Object payload = row.get(columns.payload());
        if (payload != null && payloadFormat == OutboxConfig.PayloadFormat.JSON) {
            String invalid = JsonCheck.problem(bytes(payload));
            if (invalid != null) {
                return reject(change, "invalid_json", "payload (" + (message ? "field " + MessageContent.PAYLOAD : "column "
                        + columns.payload()) + ") is not valid JSON "
                        + "(outbox.payload-format: json): " + invalid);
            }
        }
        var record = new ProducerRecord<>(rendered.get(), null, aggregateId.getBytes(StandardCharsets.UTF_8),
                payload == null ? null : bytes(payload), headers);
        if (envelope == null) {
            return new RoutingResult.Publish(record);
        }
        var wrapped = envelope.wrap(record, id, type, aggregateType, aggregateId, change.commitTime(),
                placeholder -> text(row.get(columns.column(placeholder))));
        return wrapped.record() != null ? new RoutingResult.Publish(wrapped.record())
                : reject(change, "invalid_cloudevent", wrapped.refused());
    }

    /** Topic names repeat (one per aggregate type, usually): their legality is checked once. Engine thread only. */
    private boolean legal(String topicName) {
        Boolean known = legalTopics.get(topicName);
        if (known == null) {
            known = TopicTemplate.isLegalTopic(topicName);
            if (legalTopics.size() < 10_000) {
                legalTopics.put(topicName, known);
            }
        }
        return known;
    }


    private byte[] commitTimeText(Instant commitTime) {
        if (!commitTime.equals(lastCommitTime)) {
            lastCommitTime = commitTime;
            lastCommitTimeText = commitTime.toString().getBytes(StandardCharsets.UTF_8);
        }
        return lastCommitTimeText; // Kafka's headers never change the bytes they are given
    }

    private static RoutingResult reject(ChangeEvent change, String kind, String reason) {
        return new RoutingResult.Reject(kind, reason, change);
    }

    private static void header(List<Header> headers, String name, String value) {
        if (value != null) {
            headers.add(new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8)));
        }
    }
}
