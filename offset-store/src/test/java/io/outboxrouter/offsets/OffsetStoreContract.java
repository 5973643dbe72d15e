package io.outboxrouter.offsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.Secret;
import io.outboxrouter.retry.Retry;
import io.outboxrouter.testing.DatabaseServer;
import io.outboxrouter.testing.MySqlServer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The offset store and schema history on a real database, written once and run against each kind. Each subclass
 * starts a server private to it: one test stops the server to simulate an outage.
 */
abstract class OffsetStoreContract {
    private static DatabaseServer server;
    private static String url;

    /** Starts the server and a database on it for one subclass's tests. */
    static void start(DatabaseServer started) {
        server = started;
        url = server.jdbcUrl(server.createDatabase("offsets_it_" + Long.toHexString(System.nanoTime()))); // a given server outlives runs
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private String url() {
        return url;
    }

    private String user() {
        return server.user();
    }

    private String password() {
        return server.password();
    }

    private void stopServer() {
        server.stop();
    }

    private void restartServer() {
        server.restart();
    }

    OffsetTableSettings settings(String router, String table, Duration giveUpAfter) {
        return new OffsetTableSettings(router, url(), user(), Secret.of(password()), table,
                new Retry(Duration.ofMillis(50), Duration.ofMillis(500), giveUpAfter));
    }

    @Test
    void theSameRouterNameInAnotherDatabaseHasALockOfItsOwn() throws Exception {
        String other = server.jdbcUrl(server.createDatabase("offsets_other_" + Long.toHexString(System.nanoTime())));
        var there = new OffsetTableSettings("orders", other, user(), Secret.of(password()), "offsets",
                new Retry(Duration.ofMillis(50), Duration.ofMillis(500), Duration.ofSeconds(5)));
        try (var here = RouterLock.tryAcquire(settings("orders", "offsets", Duration.ofSeconds(5))).orElseThrow();
             var elsewhere = RouterLock.tryAcquire(there).orElseThrow()) {
            assertThat(here.check()).isEqualTo(RouterLock.LockState.HELD);
            assertThat(elsewhere.check()).isEqualTo(RouterLock.LockState.HELD);
            assertThat(RouterLock.tryAcquire(there)).as("still one process per name and database").isEmpty();
        }
    }

    @Test
    void onMySqlAndMariaDbAProcessOfAnOlderBuildHoldingTheOldLockNameKeepsANewOneStandingBy() throws Exception {
        Assumptions.assumeFalse(url().startsWith("jdbc:postgresql:"), "Postgres locks were always per database");
        var settings = settings("upgrading", "offsets", Duration.ofSeconds(5));
        try (var old = java.sql.DriverManager.getConnection(url(), user(), password()); var st = old.createStatement()) {
            st.execute("SELECT GET_LOCK('" + RouterLock.legacyMysqlName("upgrading") + "', 0)");
            assertThat(RouterLock.tryAcquire(settings)).as("the old build streams").isEmpty();
            st.execute("SELECT RELEASE_LOCK('" + RouterLock.legacyMysqlName("upgrading") + "')");
            try (var lock = RouterLock.tryAcquire(settings).orElseThrow()) {
                assertThat(lock.check()).isEqualTo(RouterLock.LockState.HELD);
            }
        }
    }

    @Test
    void oneProcessPerRouterNameHoldsTheLockUntilItsSessionEnds() throws Exception {
        var orders = settings("orders", "offsets", Duration.ofSeconds(5));
        try (var first = RouterLock.tryAcquire(orders).orElseThrow()) {
            assertThat(first.isHeld()).isTrue();
            assertThat(RouterLock.tryAcquire(orders)).as("a second router named orders").isEmpty();
            try (var other = RouterLock.tryAcquire(settings("billing", "offsets", Duration.ofSeconds(5))).orElseThrow()) {
                assertThat(other.isHeld()).as("another router name is independent").isTrue();
            }
        }
        try (var again = RouterLock.tryAcquire(orders).orElseThrow()) {
            assertThat(again.isHeld()).as("free once the holder's session ended").isTrue();
        }
        String longName = "r".repeat(150);
        try (var a = RouterLock.tryAcquire(settings(longName, "offsets", Duration.ofSeconds(5))).orElseThrow()) {
            assertThat(RouterLock.tryAcquire(settings(longName, "offsets", Duration.ofSeconds(5)))).isEmpty();
            assertThat(RouterLock.tryAcquire(settings(longName + "x", "offsets", Duration.ofSeconds(5)))).isPresent().get()
                    .satisfies(RouterLock::close);
        }
    }

    /**
     * A process paused (or cut off) inside an offset write leaves its transaction open on the fencing token's row. The
     * server ends that session within {@link RouterLock#DEAD_SESSION_SECONDS} (MySQL: {@link SqlDialect#MYSQL_IDLE_SECONDS}),
     * so the next process takes its token. Without that, the next process's wait would end in a query timeout (30 s) and,
     * retried, in giving up.
     */
    @Test
    void anOffsetWriteLeftOpenByAPausedProcessHoldsTheFencingTokenOnlyBriefly() throws Exception {
        var settings = settings("paused", "offsets", Duration.ofSeconds(server instanceof MySqlServer ? 120 : 25));
        var locked = new CountDownLatch(1);
        var resumed = new CountDownLatch(1);
        var paused = Executors.newSingleThreadExecutor();
        try (var table = OffsetTable.open(settings); var zombie = JdbcStore.open(settings, "zombie")) {
            table.createIfMissing();
            long first = table.nextFence("paused");
            var write = paused.submit(() -> zombie.run("an offset write paused inside its transaction", c -> {
                try (var ps = c.prepareStatement("SELECT offset_value FROM offsets WHERE router_name = ? AND offset_key = ? FOR UPDATE")) {
                    ps.setString(1, "paused");
                    ps.setString(2, OffsetTable.FENCE_KEY);
                    ps.executeQuery().close();
                }
                locked.countDown();
                try {
                    resumed.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.sql.SQLException("interrupted", e);
                }
                return null;
            }));
            assertThat(locked.await(10, TimeUnit.SECONDS)).isTrue();
            try (var lock = RouterLock.tryAcquire(settings).orElseThrow()) { // the next process, as a take-over does it
                long started = System.nanoTime();
                lock.stayAliveFor(RouterLock.longestFencingWaitSeconds());
                assertThat(table.nextFence("paused")).as("the next process's token").isEqualTo(first + 1);
                lock.expireWhenSilent();
                System.out.printf("fencing token taken %d ms after a paused write locked its row%n",
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
                assertThat(lock.check()).as("its lock's session outlived the wait").isEqualTo(RouterLock.LockState.HELD);
            }
            resumed.countDown();
            write.get(60, TimeUnit.SECONDS); // the woken write's session is gone: retried on a new one
        } finally {
            resumed.countDown();
            paused.shutdownNow();
        }
    }

    @Test
    void twoRouterNamesInOneTableKeepIndependentOffsets() {
        try (var a = OffsetTable.open(settings("orders", "shared_offsets", Duration.ofSeconds(5)));
             var b = OffsetTable.open(settings("billing", "shared_offsets", Duration.ofSeconds(5)))) {
            a.createIfMissing();
            b.createIfMissing();
            String key = "[\"engine\",{\"server\":\"x\"}]";
            a.write("orders", Map.of(key, "{\"lsn\":100}"));
            b.write("billing", Map.of(key, "{\"lsn\":7}"));
            a.write("orders", Map.of(key, "{\"lsn\":200}"));

            assertThat(a.read("orders")).containsExactly(Map.entry(key, "{\"lsn\":200}"));
            assertThat(b.read("billing")).containsExactly(Map.entry(key, "{\"lsn\":7}"));
            assertThat(a.rows(Optional.empty())).extracting(OffsetTable.Row::routerName).containsExactly("billing", "orders");

            assertThat(a.delete("orders")).isEqualTo(1);
            assertThat(a.read("orders")).isEmpty();
            assertThat(b.read("billing")).hasSize(1);
        }
    }

    @Test
    void theTableKeepsItsLayoutVersionAndANewerLayoutIsRefused() {
        try (var table = OffsetTable.open(settings("orders", "versioned_offsets", Duration.ofSeconds(5)))) {
            table.createIfMissing();
            assertThat(table.layoutVersion()).contains(OffsetTable.LAYOUT_VERSION);
            table.createIfMissing(); // again: nothing changes
            assertThat(table.layoutVersion()).contains(OffsetTable.LAYOUT_VERSION);

            // A table a newer build wrote: this one does not read its positions.
            table.write(OffsetTable.LAYOUT_ROW, Map.of(OffsetTable.LAYOUT_KEY, "{\"version\":" + (OffsetTable.LAYOUT_VERSION + 1) + "}"));
            assertThatThrownBy(table::createIfMissing).isInstanceOf(OffsetStoreException.class)
                    .hasMessageContaining("layout version " + (OffsetTable.LAYOUT_VERSION + 1)).hasMessageContaining("newer");

            // A table made before versions were kept (rows, no version row) is version 1's layout: it gets the row.
            table.write("orders", Map.of("[\"orders\",{}]", "{\"lsn\":1}"));
            table.write(OffsetTable.LAYOUT_ROW, java.util.Collections.singletonMap(OffsetTable.LAYOUT_KEY, null));
            assertThat(table.layoutVersion()).isEmpty();
            table.createIfMissing();
            assertThat(table.layoutVersion()).contains(OffsetTable.LAYOUT_VERSION);
            assertThat(table.read("orders")).containsEntry("[\"orders\",{}]", "{\"lsn\":1}");
        }
    }

    @Test
    void whatTheEngineWritesReadsBackEqual() throws Exception {
        var store = backingStore("orders-router", "engine_offsets");
        try {
            var key = buf("[\"orders-router\",{\"server\":\"orders-router\"}]");
            var value = buf("{\"lsn_proc\":24023128,\"messageType\":\"COMMIT\",\"lsn_commit\":24023128,\"txId\":771,\"ts_usec\":1763700000000000}");
            var other = buf("[\"orders-router\",{\"server\":\"other\"}]");
            var values = new HashMap<ByteBuffer, ByteBuffer>();
            values.put(key, value);
            values.put(other, buf("{\"lsn\":1}"));
            store.set(values, null).get(10, TimeUnit.SECONDS);

            Map<ByteBuffer, ByteBuffer> read = store.get(List.of(key, other, buf("[\"nope\",{}]"))).get(10, TimeUnit.SECONDS);
            assertThat(read.get(key)).isEqualTo(value);
            assertThat(read.get(other)).isEqualTo(buf("{\"lsn\":1}"));
            assertThat(read.get(buf("[\"nope\",{}]"))).isNull();
            assertThat(store.connectorPartitions("orders-router"))
                    .containsExactlyInAnyOrder(Map.of("server", "orders-router"), Map.of("server", "other"));

            // A null value removes the key (Connect's tombstone).
            var tombstone = new HashMap<ByteBuffer, ByteBuffer>();
            tombstone.put(other, null);
            store.set(tombstone, null).get(10, TimeUnit.SECONDS);
            assertThat(store.get(List.of(other)).get(10, TimeUnit.SECONDS).get(other)).isNull();
        } finally {
            store.stop();
        }
        // A new store instance (a restart) sees what the first one wrote.
        var again = backingStore("orders-router", "engine_offsets");
        try {
            var key = buf("[\"orders-router\",{\"server\":\"orders-router\"}]");
            assertThat(text(again.get(List.of(key)).get(10, TimeUnit.SECONDS).get(key))).contains("\"lsn_commit\":24023128");
        } finally {
            again.stop();
        }
    }

    @Test
    void anOutageDuringAWriteIsRetriedThenSurfacesAsAnErrorNeverAHang() throws Exception {
        try (var table = OffsetTable.open(settings("outage", "outage_offsets", Duration.ofSeconds(3)))) {
            table.createIfMissing();
            table.write("outage", Map.of("k", "before"));

            stopServer();
            long start = System.nanoTime();
            assertThatThrownBy(() -> table.write("outage", Map.of("k", "during")))
                    .isInstanceOf(OffsetStoreException.class)
                    .hasMessageContaining("table outage_offsets: write offsets of outage: giving up after")
                    .satisfies(e -> assertThat(password().isEmpty() || !e.getMessage().contains(password())).isTrue());
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));

            // A write that starts during the outage and the server comes back within the budget: it lands.
            try (var late = OffsetTable.open(settings("outage", "outage_offsets", Duration.ofSeconds(60)))) {
                var result = new java.util.concurrent.CompletableFuture<Void>();
                var writer = new Thread(() -> {
                    try {
                        late.write("outage", Map.of("k", "after"));
                        result.complete(null);
                    } catch (RuntimeException e) {
                        result.completeExceptionally(e);
                    }
                });
                writer.start();
                Thread.sleep(1_000);
                assertThat(result).isNotDone();
                restartServer();
                result.get(60, TimeUnit.SECONDS);
                assertThat(late.read("outage")).containsEntry("k", "after");
            }
        } finally {
            restartServer();
        }
    }

    /**
     * The connector reads its position after every commit: answered from what the store knows is in the table, so a
     * database gone (or a write retrying) does not hold it up, and a write that failed is never read back.
     */
    @Test
    void readsAnswerWithWhatIsStoredNeverWithAFailedWrite() throws Exception {
        var store = backingStore("mirror", "mirror_offsets");
        var key = buf("[\"mirror\",{\"server\":\"mirror\"}]");
        try {
            store.set(Map.of(key, buf("{\"lsn\":1}")), null).get(10, TimeUnit.SECONDS);
            stopServer();
            var failed = store.set(Map.of(key, buf("{\"lsn\":2}")), null);
            assertThat(text(store.get(List.of(key)).get(1, TimeUnit.SECONDS).get(key))).as("while the write retries").isEqualTo("{\"lsn\":1}");
            assertThatThrownBy(() -> failed.get(60, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
            assertThat(text(store.get(List.of(key)).get(1, TimeUnit.SECONDS).get(key))).as("after it failed").isEqualTo("{\"lsn\":1}");
        } finally {
            restartServer();
            store.stop();
        }
        assertThatThrownBy(() -> store.get(List.of(key)).get(1, TimeUnit.SECONDS)).hasCauseInstanceOf(OffsetStoreException.class)
                .hasMessageContaining("is stopped");
    }

    @Test
    void theBackingStoreFailsItsFutureWhenTheDatabaseIsGone() throws Exception {
        var store = backingStore("gone", "gone_offsets");
        try {
            stopServer();
            var future = store.set(Map.of(buf("k"), buf("v")), null);
            assertThatThrownBy(() -> future.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(OffsetStoreException.class);
        } finally {
            restartServer();
            store.stop();
        }
    }

    @Test
    void theSchemaHistoryKeepsEachRoutersRecordsInOrder() throws Exception {
        var a = schemaHistory("orders-router", "history");
        var b = schemaHistory("billing-router", "history");
        try {
            a.initializeStorage();
            assertThat(a.storageExists()).isTrue();
            assertThat(a.exists()).isFalse();
            a.start();
            b.start();
            var position = Map.of("file", "mariadb-bin.000001", "pos", 4L);
            a.record(Map.of("server", "orders-router"), position, "app", "CREATE TABLE outbox (id CHAR(36))");
            b.record(Map.of("server", "billing-router"), position, "billing", "CREATE TABLE outbox (id BIGINT)");
            a.record(Map.of("server", "orders-router"), position, "app", "ALTER TABLE outbox ADD tenant VARCHAR(20)");
            assertThat(a.exists()).isTrue();
        } finally {
            a.stop();
            b.stop();
        }
        // A restarted router reads back its own records, in order, and only its own.
        var again = schemaHistory("orders-router", "history");
        try {
            again.start();
            var ddl = new java.util.ArrayList<String>();
            again.recoverRecords(r -> ddl.add(r.document().getString("ddl")));
            assertThat(ddl).containsExactly("CREATE TABLE outbox (id CHAR(36))", "ALTER TABLE outbox ADD tenant VARCHAR(20)");
        } finally {
            again.stop();
        }
    }

    private JdbcSchemaHistory schemaHistory(String router, String table) {
        var history = new JdbcSchemaHistory();
        var props = settings(router, table, Duration.ofSeconds(5)).toProperties(OffsetTableSettings.SCHEMA_HISTORY_PREFIX);
        history.configure(io.debezium.config.Configuration.from(props), io.debezium.relational.history.HistoryRecordComparator.INSTANCE,
                io.debezium.relational.history.SchemaHistoryListener.NOOP, false);
        return history;
    }

    private JdbcOffsetBackingStore backingStore(String router, String table) {
        var props = new HashMap<String, String>(settings(router, table, Duration.ofSeconds(3)).toProperties(OffsetTableSettings.OFFSETS_PREFIX));
        props.put("bootstrap.servers", "unused:9092");
        props.put("offset.storage.file.filename", "");
        props.put("key.converter", "org.apache.kafka.connect.json.JsonConverter");
        props.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        var store = new JdbcOffsetBackingStore();
        store.configure(new StandaloneConfig(props));
        store.start();
        return store;
    }

    private static ByteBuffer buf(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(ByteBuffer b) {
        return StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }
}
