package io.outboxrouter.routing;

import io.outboxrouter.cdc.ChangeEvent;

/** What becomes of each change: pure, no I/O; engine thread only. */
public interface Routing {
    RoutingResult route(ChangeEvent change);
}
