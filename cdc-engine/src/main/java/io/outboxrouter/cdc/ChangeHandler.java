package io.outboxrouter.cdc;

import java.util.List;

/**
 * Receives the engine's row changes in source order, one batch at a time, and returns only when every
 * change of the batch is durable downstream. The engine stores the source position only after this returns,
 * and only up to the last complete source transaction.
 */
@FunctionalInterface
public interface ChangeHandler {

    /**
     * @throws Exception to stop the engine without storing this batch's position; the batch is read again on restart
     */
    void handle(List<ChangeEvent> batch) throws Exception;
}
