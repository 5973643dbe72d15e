package io.outboxrouter.cdc;

import io.outboxrouter.change.ChangeEvent;
import java.util.List;

/**
 * Receives the engine's row changes in source order, one batch at a time. An at-least-once handler returns only when
 * every change of the batch is durable downstream; the engine then stores the source position, only up to the last
 * complete source transaction. A {@linkplain #transactional() transactional} handler is given the changes of complete
 * source transactions, then {@link #commit} with the position after them, and only then the changes of a transaction
 * still open; the engine stores a position only after its commit returned.
 */
@FunctionalInterface
public interface ChangeHandler {

    /**
     * @throws Exception to stop the engine without storing this batch's position; the batch is read again on restart
     */
    void handle(List<ChangeEvent> batch) throws Exception;

    /** Whether changes become durable only at {@link #commit}, together with the source position. */
    default boolean transactional() {
        return false;
    }

    /**
     * Transactional handlers: makes every change handled since the last commit durable together with {@code position},
     * the source position after them (at a source transaction's end). Returns once both are.
     *
     * @throws Exception to stop the engine; nothing since the last commit is durable, and it is read again on restart
     */
    default void commit(SourcePosition position) throws Exception {
    }
}
