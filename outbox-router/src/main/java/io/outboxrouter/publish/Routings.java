package io.outboxrouter.publish;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.routing.OutboxRouting;
import io.outboxrouter.routing.Routing;
import java.util.Collection;
import java.util.List;

/** The routing a router's configuration asks for: the topic template, or Debezium's EventRouter ({@code routing.event-router}). */
public final class Routings {
    private Routings() {
    }

    /** For the stream: {@code otherTables} publish nothing by design (the heartbeat table); messages with the prefix are events. */
    public static Routing of(RouterConfig config, Collection<String> otherTables, String messagePrefix) {
        var mode = config.routing().eventRouter();
        if (mode != null) {
            return new EventRouterRouting(config.source().tables(), otherTables, mode);
        }
        return new OutboxRouting(config.source().tables(), otherTables, messagePrefix, config.outbox(), config.routing().topic(),
                config.routing().cloudEvents());
    }

    /** For a replay: the outbox tables' rows only. */
    public static Routing of(RouterConfig config) {
        return of(config, List.of(), null);
    }
}
