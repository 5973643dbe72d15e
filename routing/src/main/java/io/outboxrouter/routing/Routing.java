package io.outboxrouter.routing;

import io.outboxrouter.change.ChangeEvent;

/** What becomes of each change: pure, no I/O; engine thread only. */
public interface Routing {
    RoutingResult route(ChangeEvent change);

    /**
     * The aggregate an outbox change belongs to (its aggregate id as text), also for a change that cannot be routed;
     * empty when the change names none. What a parked aggregate is known by.
     */
    default java.util.Optional<String> aggregateOf(ChangeEvent change) {
        return java.util.Optional.empty();
    }

    /** The outbox event id of a change, also of one that cannot be routed; empty when it has none. */
    default java.util.Optional<String> eventIdOf(ChangeEvent change) {
        return java.util.Optional.empty();
    }
}
