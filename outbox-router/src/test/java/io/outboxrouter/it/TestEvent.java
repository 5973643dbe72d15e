package io.outboxrouter.it;

import java.util.UUID;

/** An outbox row as a test writes it. {@code seq} counts the aggregate's events in commit order. */
record TestEvent(UUID id, String aggregateType, String aggregateId, String type, int seq, String payload) {

    static TestEvent of(String aggregateType, String aggregateId, int seq) {
        // Written in the form jsonb prints it (keys by length, ", " and ": "), so stored bytes equal written bytes.
        String payload = "{\"seq\": " + seq + ", \"note\": \"caf\u00e9 \\\"quoted\\\" \u2713\", \"aggregate\": \"" + aggregateId + "\"}";
        return new TestEvent(UUID.randomUUID(), aggregateType, aggregateId, aggregateType + "Changed", seq, payload);
    }
}
