package io.outboxrouter.cdc;

/**
 * The stored position and the source's state do not add up (a slot, offsets or tables changed behind the router's
 * back): starting anyway could skip events. The router refuses, unless the operator accepts the gap for one start,
 * which resets the stored position ({@link Source#resetPosition}).
 *
 * @param problem  what is missing and what it means, for the operator
 * @param accepted      what starting anyway does, and what is lost by it
 * @param keepsPosition accepting it keeps the stored position (a loss recorded while the router ran: the position is
 *                      still sound, only rows before it were not sent)
 * @param recordedAt    when a loss recorded while the router ran was found; null for a drift found at start
 */
public record Drift(String problem, String accepted, boolean keepsPosition, java.time.Instant recordedAt) {

    /** A drift whose acceptance resets the stored position. */
    public Drift(String problem, String accepted) {
        this(problem, accepted, false, null);
    }
}
