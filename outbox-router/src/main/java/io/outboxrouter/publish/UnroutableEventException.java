package io.outboxrouter.publish;

/** A row the {@code fail} policy stops on, or a dead letter Kafka refuses too: the router stops without storing its position. */
public final class UnroutableEventException extends RuntimeException {
    UnroutableEventException(String message) {
        super(message);
    }
}
