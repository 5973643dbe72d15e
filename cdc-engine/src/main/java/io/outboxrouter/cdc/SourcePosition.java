package io.outboxrouter.cdc;

import java.util.Map;

/**
 * The source position after a complete source transaction, as the engine stores it: its connector's partition and
 * offset (what {@code markProcessed} of that record writes to the offsets table).
 */
public record SourcePosition(Map<String, ?> partition, Map<String, ?> offset) {
}
