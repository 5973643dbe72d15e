package io.outboxrouter.cli;

import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.offsets.OffsetStoreException;
import io.outboxrouter.publish.UnroutableEventException;
import io.outboxrouter.retry.Retry;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Turns the error that stopped the router into the one line an operator reads. */
final class Failures {
    /** What Debezium says when its task finds the stored position gone from the source. */
    private static final String SLOT_LOST = "but this is no longer available on the server";

    private Failures() {
    }

    static String explain(Throwable error) {
        var slotLost = slotLost(error);
        if (slotLost != null) {
            return slotLost;
        }
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

    /**
     * The message for a slot dropped under a running router, or a binlog purged past its position while it ran (Debezium
     * checks the stored position each time its task starts, also inside the process); null for any other error.
     */
    private static String slotLost(Throwable error) {
        for (Throwable c = error; c != null && c.getCause() != c; c = c.getCause()) {
            String message = String.valueOf(c.getMessage());
            if (message.contains(SLOT_LOST)) {
                String what = message.contains("PostgresOffsetContext")
                        ? "the replication slot was dropped while the router ran (or created again behind its back): it begins after "
                        + "the router's stored position"
                        : "the binlog file of the router's stored position is no longer on the server (purged while the router ran)";
                return what + ", so the changes committed in between can no longer be read and were not published. Fix: start "
                        + "with run --accept-gap to stream from the source's current position, then publish what was committed "
                        + "since the stored position with replay --since <the time offsets show prints as updated>";
            }
        }
        return null;
    }
}
