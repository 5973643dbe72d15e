package io.outboxrouter.routing;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.OutboxConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * Builds the dead-letter record of a rejected row: the payload bytes as stored, keyed by the aggregate id when
 * there is one, with the reason, the source position and table, and the row's other columns as JSON in headers.
 */
public final class DeadLetters {
    public static final String HEADER_REASON = "dead-letter.reason";
    public static final String HEADER_COLUMNS = "dead-letter.columns";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String topic;
    private final OutboxConfig.Columns columns;

    public DeadLetters(String topic, OutboxConfig.Columns columns) {
        this.topic = topic;
        this.columns = columns;
    }

    /** For a record Kafka refused as too large: everything but the payload, whose size is in a header. */
    public ProducerRecord<byte[], byte[]> withoutPayload(RoutingResult.Reject reject, int payloadBytes) {
        var full = record(reject);
        var headers = new ArrayList<Header>();
        full.headers().forEach(headers::add);
        add(headers, "dead-letter.payload-bytes", Integer.toString(payloadBytes));
        return new ProducerRecord<>(full.topic(), null, full.key(), null, headers);
    }

    /**
     * For a routed record that cannot be sent (a held event too large to release): its key and headers, the reason, and
     * the size of the payload left out.
     */
    public ProducerRecord<byte[], byte[]> withoutPayload(ProducerRecord<byte[], byte[]> refused, String reason) {
        var headers = new ArrayList<Header>();
        refused.headers().forEach(headers::add);
        add(headers, HEADER_REASON, reason);
        add(headers, "dead-letter.payload-bytes", Integer.toString(refused.value() == null ? 0 : refused.value().length));
        return new ProducerRecord<>(topic, null, refused.key(), null, headers);
    }

    public ProducerRecord<byte[], byte[]> record(RoutingResult.Reject reject) {
        ChangeEvent change = reject.change();
        if (change.operation().isMessage()) {
            return message(reject);
        }
        var row = change.row();
        var headers = new ArrayList<Header>();
        add(headers, HEADER_REASON, reject.reason());
        add(headers, OutboxRouting.HEADER_ID, ColumnValues.text(row.get(columns.id())));
        add(headers, OutboxRouting.HEADER_POSITION, change.position());
        add(headers, OutboxRouting.HEADER_TABLE, change.table());
        add(headers, OutboxRouting.HEADER_COMMIT_TIME, change.commitTime() == null ? null : change.commitTime().toString());
        add(headers, HEADER_COLUMNS, columnsJson(change));
        Object aggregateId = row.get(columns.aggregateId());
        Object payload = row.get(columns.payload());
        return new ProducerRecord<>(topic, null,
                aggregateId == null ? null : ColumnValues.bytes(aggregateId),
                payload == null ? null : ColumnValues.bytes(payload), headers);
    }

    /** A logical decoding message's: its content as written, and its prefix in the columns header. */
    private ProducerRecord<byte[], byte[]> message(RoutingResult.Reject reject) {
        ChangeEvent change = reject.change();
        var headers = new ArrayList<Header>();
        add(headers, HEADER_REASON, reject.reason());
        add(headers, OutboxRouting.HEADER_POSITION, change.position());
        add(headers, OutboxRouting.HEADER_TABLE, change.table());
        add(headers, OutboxRouting.HEADER_COMMIT_TIME, change.commitTime() == null ? null : change.commitTime().toString());
        var described = new LinkedHashMap<String, Object>();
        described.put(ChangeEvent.MESSAGE_PREFIX, change.row().get(ChangeEvent.MESSAGE_PREFIX));
        described.put("transactional", change.operation() == ChangeEvent.Operation.MESSAGE);
        add(headers, HEADER_COLUMNS, json(described));
        Object content = change.row().get(ChangeEvent.MESSAGE_CONTENT);
        return new ProducerRecord<>(topic, null, (byte[]) null, content == null ? null : ColumnValues.bytes(content), headers);
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            return value.toString();
        }
    }

    private String columnsJson(ChangeEvent change) {
        var out = new LinkedHashMap<String, Object>();
        change.row().forEach((k, v) -> {
            if (!k.equals(columns.payload())) {
                out.put(k, v instanceof byte[] b ? Base64.getEncoder().encodeToString(b) : v);
            }
        });
        return json(out);
    }

    private static void add(List<Header> headers, String name, String value) {
        if (value != null) {
            headers.add(new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8)));
        }
    }
}
