package io.outboxrouter.audit;

import java.time.Instant;
import java.util.function.Consumer;

/** The event ids the records in the router's topics carry, among those written at or after {@code from}. */
@FunctionalInterface
public interface RecordedIds {
    void forEach(Instant from, Consumer<String> id) throws Exception;
}
