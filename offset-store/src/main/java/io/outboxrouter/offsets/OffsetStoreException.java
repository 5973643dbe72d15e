package io.outboxrouter.offsets;

/** The offset table could not be read or written; the message says why and is safe to show (no secrets). */
public final class OffsetStoreException extends RuntimeException {
    public OffsetStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
