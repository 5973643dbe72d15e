package io.outboxrouter.app;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.OffsetsTopic;
import io.outboxrouter.offsets.EngineOffsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** The rule for an operator's change of a stored position: where it must be written besides the offsets table. */
public final class StoredPositions {
    private StoredPositions() {
    }

    /**
     * Exactly-once: writes the change of the engine's positions to the offsets topic first (a failure leaves both as they
     * were), in a Kafka transaction of the stream's own id, which fences a process still streaming it. Call it before the
     * offsets table is written.
     *
     * @return whether it was written to the offsets topic (an exactly-once stream, and a position among the entries)
     */
    public static boolean writeCommitted(RouterConfig stream, Map<String, String> entries) throws Exception {
        var positions = new LinkedHashMap<String, String>();
        entries.forEach((k, v) -> {
            if (EngineOffsets.engineOf(k).isPresent()) { // not the router's own state rows
                positions.put(k, v);
            }
        });
        if (!stream.kafka().exactlyOnce() || positions.isEmpty()) {
            return false;
        }
        new OffsetsTopic(stream.kafka()).write(stream.name(), shardIndex(stream), stream.source().postgres().shards(), positions);
        return true;
    }

    /** The shard a stream's configuration is of, 0 when it is not sharded. */
    public static int shardIndex(RouterConfig stream) {
        return stream.shard().map(io.outboxrouter.config.Shard::index).orElse(0);
    }
}
