package io.outboxrouter.offsets;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.storage.OffsetUtils;
import org.apache.kafka.connect.util.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka Connect offset store the Debezium engine writes through, backed by {@link OffsetTable}.
 * Keys and values are the engine's JSON, stored as text so that operators can read them.
 * Writes happen on one named thread, in call order, so a later offset never lands before an earlier one;
 * a write that keeps failing completes its future exceptionally after the retry budget, never hangs.
 * Reads answer from what this store knows is in the table: read at start, then each write once it succeeded. The
 * connector reads its stored position after every commit (Postgres flushes the slot to it), and that read then
 * neither queries the database nor waits behind a write. This holds because nothing else writes the engine's rows
 * while the store runs: every other writer (a position check, an exactly-once resume, the {@code offsets} commands)
 * runs before the engine starts its store or under the router's lock, and a process that lost the lock is fenced.
 */
public final class JdbcOffsetBackingStore implements OffsetBackingStore {
    private static final Logger LOG = LoggerFactory.getLogger(JdbcOffsetBackingStore.class);

    /** The engine property that names this store's {@link OffsetStoreStats} bean. */
    public static final String INSTANCE_PROPERTY = OffsetTableSettings.OFFSETS_PREFIX + "instance";
    /** The engine property with this process's fencing token ({@link OffsetTable#nextFence}); without it writes are not fenced. */
    public static final String FENCE_PROPERTY = OffsetTableSettings.OFFSETS_PREFIX + "fence";

    private OffsetTableSettings settings;
    private String instance;
    private Long fence;
    private OffsetTable table;
    private ExecutorService executor;
    private OffsetStoreStats stats;
    /** Whether this store wrote the router's state row yet; touched only by the store's thread. */
    private boolean stateWritten;
    /** The router's rows as the table holds them: read at start, then each successful write; replaced whole. */
    private volatile Map<String, String> stored = Map.of();
    private volatile boolean stopped;
    /** Set when the engine is aborted: every write fails at once, the one under way included. */
    private volatile boolean abandoned;
    /** The stores of the running engines, by instance, for {@link #abandon}. */
    private static final Map<String, JdbcOffsetBackingStore> RUNNING = new java.util.concurrent.ConcurrentHashMap<>();
    /** Engines aborted before their store started, kept until that store starts or its engine ends ({@link #forget}). */
    private static final Set<String> ABANDONED = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Writes not finished yet: an abandon fails them, queued ones included (a shut executor never runs those). */
    private final Set<CompletableFuture<Void>> pending = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Instantiated by the engine through reflection; settings arrive in {@link #configure}. */
    public JdbcOffsetBackingStore() {
    }

    @Override
    public void configure(WorkerConfig config) {
        settings = OffsetTableSettings.fromProperties(OffsetTableSettings.OFFSETS_PREFIX, config.originalsStrings());
        instance = config.originalsStrings().getOrDefault(INSTANCE_PROPERTY, "default");
        String token = config.originalsStrings().get(FENCE_PROPERTY);
        fence = token == null ? null : Long.valueOf(token);
    }

    @Override
    public void start() {
        executor = Executors.newSingleThreadExecutor(r -> {
            var t = new Thread(r, "offset-store-" + settings.routerName());
            t.setDaemon(true);
            return t;
        });
        stats = OffsetStoreStats.register(settings.routerName(), instance);
        table = OffsetTable.open(settings, stats);
        table.createIfMissing();
        stored = Map.copyOf(table.read(settings.routerName()));
        LOG.info("Offsets of router {} are kept in table {} ({} stored entries)", settings.routerName(), settings.table(), stored.size());
        synchronized (ABANDONED) { // against an abandon between the two lines
            RUNNING.put(instance, this);
            abandoned = ABANDONED.remove(instance); // aborted while it started
        }
    }

    @Override
    public void stop() {
        stopped = true;
        if (executor != null) {
            executor.shutdown();
            try {
                if (!executor.awaitTermination(35, TimeUnit.SECONDS)) {
                    LOG.warn("Offset writes still pending after 35 s; abandoning them (they are re-derived on restart)");
                    executor.shutdownNow();
                }
            } catch (InterruptedException e) {
                executor.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
        if (table != null) {
            table.close();
        }
        if (stats != null) {
            stats.unregister();
        }
        RUNNING.remove(instance, this); // only now: an abandon during the wait above still ends the write under way
    }

    @Override
    public Future<Map<ByteBuffer, ByteBuffer>> get(Collection<ByteBuffer> keys) {
        if (stopped) {
            return CompletableFuture.failedFuture(new OffsetStoreException("the offset store of router " + settings.routerName()
                    + " is stopped: nothing can be read from it", null));
        }
        var now = stored;
        var out = new HashMap<ByteBuffer, ByteBuffer>();
        for (ByteBuffer key : keys) {
            String value = now.get(text(key));
            out.put(key, value == null ? null : bytes(value));
        }
        return CompletableFuture.completedFuture(out);
    }

    /**
     * Makes the offset store of an engine being aborted (its process lost the router's lock, or the database) fail every
     * write at once, the one retrying now included: the engine's last commit then ends at once, and its task stops and
     * closes its connections (the replication connection among them) instead of waiting out the retries. What is not
     * stored is read again by whoever streams next.
     */
    public static void abandon(String instance) {
        JdbcOffsetBackingStore store;
        synchronized (ABANDONED) {
            store = RUNNING.get(instance);
            if (store == null) {
                ABANDONED.add(instance); // not started yet: it starts abandoned (forget drops it if it never does)
                return;
            }
        }
        store.abandoned = true;
        if (store.executor != null) {
            store.executor.shutdownNow(); // interrupts the retries of the write under way
        }
        for (var write : store.pending) {
            write.completeExceptionally(new OffsetStoreException("the offsets of router " + store.settings.routerName()
                    + " are not stored: its engine is being stopped after losing its lock or its database", null));
        }
    }

    /** Drops what is kept for an engine that has ended, whether or not its store ever started. */
    public static void forget(String instance) {
        synchronized (ABANDONED) {
            ABANDONED.remove(instance);
        }
    }

    @Override
    public Future<Void> set(Map<ByteBuffer, ByteBuffer> values, Callback<Void> callback) {
        if (abandoned) {
            return refused(callback);
        }
        var entries = new LinkedHashMap<String, String>();
        values.forEach((k, v) -> entries.put(text(k), v == null ? null : text(v)));
        CompletableFuture<Void> write;
        try {
            write = CompletableFuture.runAsync(() -> {
                    if (!stateWritten) {
                        // From now on, finding no offsets means they were lost, not that this is a first start.
                        entries.put(OffsetTable.STATE_KEY, OffsetTable.STORED);
                    }
                    if (fence == null) {
                        table.write(settings.routerName(), entries);
                    } else {
                        table.write(settings.routerName(), entries, fence);
                    }
                    stateWritten = true;
                    var next = new HashMap<>(stored);
                    entries.forEach((key, value) -> {
                        if (value == null) {
                            next.remove(key);
                        } else {
                            next.put(key, value);
                        }
                    });
                    stored = Map.copyOf(next);
                }, executor);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return refused(callback); // abandoned meanwhile
        }
        pending.add(write);
        if (abandoned) {
            write.completeExceptionally(new OffsetStoreException("abandoned", null)); // abandoned between the two lines above
        }
        return write.whenComplete((ok, error) -> {
                    pending.remove(write);
                    Throwable cause = error != null && error.getCause() != null ? error.getCause() : error;
                    if (cause != null) {
                        stats.failed(cause, fenced(cause));
                        LOG.error("Could not store offsets of router {}: {}", settings.routerName(), cause.getMessage());
                    } else {
                        stats.stored();
                    }
                    if (callback != null) {
                        callback.onCompletion(cause, null);
                    }
                });
    }

    private CompletableFuture<Void> refused(Callback<Void> callback) {
        var refused = new OffsetStoreException("the offsets of router " + settings.routerName() + " are not stored: its engine is "
                + "being stopped after losing its lock or its database (what it published is read again)", null);
        if (callback != null) {
            callback.onCompletion(refused, null);
        }
        return CompletableFuture.failedFuture(refused);
    }

    @Override
    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
        var converter = new JsonConverter();
        converter.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), true);
        Map<String, Set<Map<String, Object>>> partitions = new HashMap<>();
        table.read(settings.routerName()).forEach((k, v) ->
                OffsetUtils.processPartitionKey(k.getBytes(StandardCharsets.UTF_8), v.getBytes(StandardCharsets.UTF_8), converter, partitions));
        return partitions.getOrDefault(connectorName, Set.of());
    }

    private static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof FencedException) {
                return true;
            }
        }
        return false;
    }

    private static String text(ByteBuffer b) {
        var dup = b.duplicate();
        var arr = new byte[dup.remaining()];
        dup.get(arr);
        return new String(arr, StandardCharsets.UTF_8);
    }

    private static ByteBuffer bytes(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }
}
