package io.outboxrouter.cdc;

import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/** A source's prerequisites and its watch for changes under the running router: for {@code check}, the start and the stream. */
public interface SourcePreflight {

    /** Every prerequisite of the database, checked without changing anything (for {@code check}). */
    List<Check> checks();

    /**
     * Checks every prerequisite and creates what the router may create itself (a publication, a heartbeat table).
     *
     * @throws SourceSetupException naming every failed prerequisite with its fix
     */
    void prepare();

    /**
     * Creates what the stream reads from, once its stored position is known to add up ({@link PositionCheck}): Postgres
     * shards, on a layout's first start, create every shard's slot at once.
     */
    default void afterPositionCheck() {
    }

    /**
     * Whether the stored position still adds up with the server: a replication slot or binlog that is gone, offsets that
     * are gone while the stream's state remains. Reads only.
     */
    Optional<Drift> drift(StoredPosition stored) throws SQLException;

    /**
     * The server's view of the stream (a replication slot), measured in the background; empty when there is none to watch.
     *
     * @param drift told when the source changed under the running router so that it cannot go on (a dropped publication)
     */
    Optional<SlotMonitor> monitor(java.util.function.Consumer<SourceSetupException> drift);

    /**
     * Returns once the stream can be read by this process (Postgres: no other session reads the slot), or once
     * {@code stopping} is true; runs on the engine's thread before the connector starts.
     *
     * @throws SourceSetupException when another reader keeps the stream past the server's own timeout
     */
    default void awaitStreamFree(String routerName, BooleanSupplier stopping) throws InterruptedException {
    }
}
