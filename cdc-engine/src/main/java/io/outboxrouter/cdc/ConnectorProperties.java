package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.JdbcOffsetBackingStore;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Properties;
import java.util.regex.Pattern;

/** The Debezium engine and connector properties for a router: the common ones here, each source kind's from its {@link Source}. */
final class ConnectorProperties {
    /** A table include list that matches no table. */
    static final String NO_TABLE = "outbox_router_no_table\\.none";
    /** The least the queue may hold, however small the heap or many the engines: a large row or two. */
    static final long MIN_QUEUE_BYTES = 1L << 20;

    private ConnectorProperties() {
    }

    static Properties of(RouterConfig config) {
        return of(config, Source.of(config));
    }

    static Properties of(RouterConfig config, Source kind) {
        var source = config.source();
        var p = new Properties();
        p.setProperty("name", config.name());
        p.setProperty("topic.prefix", config.name());

        // Offsets: our JDBC store. The engine stages only positions at transaction ENDs whose events Kafka acknowledged.
        p.setProperty("offset.storage", JdbcOffsetBackingStore.class.getName());
        OffsetTableSettings.offsets(config).toProperties(OffsetTableSettings.OFFSETS_PREFIX).forEach(p::setProperty);
        p.setProperty("offset.flush.interval.ms", "0");
        p.setProperty("offset.flush.timeout.ms", "60000");
        // Transaction ends from BEGIN/END markers, or (Postgres) from what follows a transaction: see TransactionBoundaries.
        p.setProperty("provide.transaction.metadata", Boolean.toString(kind.boundaries() != TransactionBoundaries.Mode.POSTGRES));

        var address = source.address();
        p.setProperty("database.hostname", address.host());
        p.setProperty("database.port", Integer.toString(address.port()));
        p.setProperty("database.user", source.connection().user());
        p.setProperty("database.password", source.connection().password().reveal());
        // The URL's TLS settings for the connector's own connections too (it never reads the URL); debezium.* wins below.
        SourceTls.connectorProperties(source.kind(), source.connection().url(), config.debezium()).forEach(p::setProperty);
        // No outbox table (a tableless outbox of logical decoding messages): an include list that matches no table, since an
        // empty one means every table (whose schemas the connector would load, and snapshot).
        p.setProperty("table.include.list", source.tables().isEmpty() ? NO_TABLE
                : String.join(",", source.tables().stream().map(ConnectorProperties::regex).toList()));
        p.setProperty("column.include.list", source.tables().isEmpty() ? NO_TABLE + "\\..+" : columnIncludeList(config));
        kind.addConnectorProperties(p);
        p.setProperty("poll.interval.ms", Long.toString(source.pollInterval().toMillis()));
        p.setProperty("max.batch.size", Integer.toString(source.maxBatchSize()));
        // Twice a batch: the reader fills one while the router publishes the other. Every queued record is live through
        // the young collections of its wait; a longer queue promotes them to the old generation and makes full collections.
        p.setProperty("max.queue.size", Integer.toString(source.maxBatchSize() * 2));
        long queueBytes = queueBytes(config, Runtime.getRuntime().maxMemory());
        if (queueBytes > 0) {
            p.setProperty("max.queue.size.in.bytes", Long.toString(queueBytes));
        }
        p.setProperty("tombstones.on.delete", "false");
        p.setProperty("extended.headers.enabled", "false"); // Debezium's context headers per record: the router reads none
        if (config.routing().eventRouter() == null) {
            // Debezium's EventRouter gives numeric columns Debezium's default shape, as Debezium Server does: left as it is there.
            p.setProperty("decimal.handling.mode", "string");
        }
        p.setProperty("binary.handling.mode", "bytes");
        // The topic name cache counts its LRU queue on every event; the queue's length grows with the cache's size, and the
        // connector names only the router's few tables.
        p.setProperty("topic.cache.size", "32");
        if (config.routing().eventRouter() == null) {
            p.setProperty("include.unknown.datatypes", "true");
        }
        config.debezium().forEach(p::setProperty);
        return p;
    }

    /**
     * The connector's queue holds at most a sixteenth of the heap (shared by the engines of a sharded router in one
     * process), by Debezium's estimate of each record's size: a small heap then carries large rows in smaller batches
     * instead of running out of memory. A batch costs about three times its bytes at its peak (the queue filling again,
     * the batch in hand, and its Kafka records), beside the producer's buffer. 0 (no limit) when the heap has no maximum.
     */
    static long queueBytes(RouterConfig config, long maxHeap) {
        if (maxHeap == Long.MAX_VALUE) {
            return 0;
        }
        int engines = config.source().streamsInProcess();
        return Math.max(MIN_QUEUE_BYTES, maxHeap / 16 / engines);
    }

    /**
     * Only the columns the router reads (the outbox columns and those mapped to headers) are decoded and carried:
     * a timestamp or any other column it does not use would cost the connector a parse per row.
     */
    static String columnIncludeList(RouterConfig config) {
        String alternatives = String.join("|", readColumns(config).stream().map(Pattern::quote).toList());
        return String.join(",", config.source().tables().stream().map(t -> regex(t) + "\\.(" + alternatives + ")").toList());
    }

    /**
     * The columns every outbox table must have: the five outbox columns and those mapped to headers; under
     * {@code routing.event-router} the ones its options name (the type column only when placed).
     */
    static List<String> outboxColumns(RouterConfig config) {
        var eventRouter = config.routing().eventRouter();
        if (eventRouter != null) {
            return eventRouter.options().requiredColumns();
        }
        var c = config.outbox().columns();
        var names = new LinkedHashSet<>(List.of(c.id(), c.aggregateType(), c.aggregateId(), c.type(), c.payload()));
        names.addAll(config.outbox().headers().keySet());
        return List.copyOf(names);
    }

    /** The columns decoded: those every outbox table must have, and those read where a table has them. */
    static List<String> readColumns(RouterConfig config) {
        var eventRouter = config.routing().eventRouter();
        return eventRouter == null ? outboxColumns(config) : eventRouter.options().readColumns();
    }

    /** table.include.list takes regular expressions: quote the dot. */
    static String regex(String table) {
        return table.replace(".", "\\.");
    }
}
