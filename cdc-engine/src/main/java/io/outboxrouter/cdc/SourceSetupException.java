package io.outboxrouter.cdc;

/** The source database is not set up for the router; the message names the fix. Not worth retrying. */
public final class SourceSetupException extends RuntimeException {
    public SourceSetupException(String message) {
        super(message);
    }

    public SourceSetupException(String message, Throwable cause) {
        super(message, cause);
    }
}
