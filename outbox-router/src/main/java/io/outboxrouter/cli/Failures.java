package io.outboxrouter.cli;

import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.offsets.OffsetStoreException;
import io.outboxrouter.retry.Retry;
import io.outboxrouter.routing.UnroutableEventException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Turns the error that stopped the router into the one line an operator reads. */
final class Failures {
    private Failures() {
    }

    static String explain(Throwable error) {
        Throwable t = error;
        // Our own exceptions already say what happened and what to do; find one under the engine's wrappers.
        for (Throwable c = error; c != null; c = c.getCause()) {
            if (c instanceof UnroutableEventException || c instanceof Retry.GaveUpException
                    || c instanceof OffsetStoreException || c instanceof SourceSetupException) {
                return c.getMessage();
            }
            if (c.getCause() == c) {
                break;
            }
        }
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return Retry.describe(t);
    }
}
