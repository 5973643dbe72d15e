package io.outboxrouter.cdc;

import io.debezium.pipeline.DataChangeEvent;
import io.debezium.pipeline.Sizeable;
import java.nio.ByteBuffer;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;

/**
 * What a record waiting in the connector's queue costs the heap, roughly, for {@code max.queue.size.in.bytes}: the
 * strings and byte arrays of the structs in its value (the row after the change, a message's content, the source
 * block), which are what grows with a row, and a fixed allowance for the rest (the envelope, the Struct objects, the
 * offset; schemas are shared). Debezium's own estimate walks every field of key and value with its schema, on the
 * connector's thread, the one that bounds a router's throughput: measured with the benchmark's drains it cost about a
 * tenth of the router's CPU per event, for an upper bound that only matters when rows are large.
 */
public final class QueuedSize {
    /** The envelope, the source block and the Struct objects around the row, for a row of a few columns. */
    static final long ENVELOPE_BYTES = 1024;

    private QueuedSize() {
    }

    /** Roughly how many bytes of heap the record holds; Debezium's estimate for anything that is not a change record. */
    public static long of(Sizeable queued) {
        if (!(queued instanceof DataChangeEvent event) || !(event.getRecord().value() instanceof Struct value)) {
            return queued.objectSize();
        }
        long size = ENVELOPE_BYTES;
        for (Field f : value.schema().fields()) {
            if (value.get(f) instanceof Struct row) {
                for (Field c : row.schema().fields()) {
                    size += bytes(row.get(c));
                }
            }
        }
        return size;
    }

    /** A string's characters at two bytes each (the worst case), a byte array's or buffer's length; others are in the allowance. */
    private static long bytes(Object value) {
        return value instanceof String s ? 2L * s.length() : value instanceof byte[] b ? b.length
                : value instanceof ByteBuffer bb ? bb.remaining() : 0;
    }
}
