package io.outboxrouter.audit;

import java.util.List;

/** Publishes rows of an outbox table again, by event id ({@code outbox.audit.on-loss: replay}); says how many records it published. */
@FunctionalInterface
public interface Republish {
    long republish(String table, List<String> ids) throws Exception;
}
