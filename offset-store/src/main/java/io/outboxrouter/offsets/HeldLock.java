package io.outboxrouter.offsets;

/**
 * A router's lock as the process holding it sees it: asked whether it is still held, and released by closing it.
 * {@link RouterLock} is the one on the offsets database.
 */
public interface HeldLock extends AutoCloseable {
    /** Whether this session still holds the lock, asked of the server. */
    RouterLock.LockState check();

    /** The server's id of the session that holds the lock (a backend pid, a connection id). */
    long session();

    /** The lock in words, for the log: which router, in which database. */
    String description();

    /** Ends the session, which releases the lock. */
    @Override
    void close();
}
