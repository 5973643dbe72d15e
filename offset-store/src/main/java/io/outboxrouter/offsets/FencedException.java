package io.outboxrouter.offsets;

/** An offset write from a process that is no longer the router's active one: another took a newer fencing token. */
public final class FencedException extends RuntimeException {
    FencedException(String message) {
        super(message);
    }
}
