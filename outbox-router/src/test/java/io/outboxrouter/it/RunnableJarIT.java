package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/** What the runnable jar carries, as built by the reactor. */
class RunnableJarIT {
    private final Path jar = Path.of(System.getProperty("router.jar", "target/outbox-router.jar"));

    @Test
    void itCarriesOnlyThePatchedSchemaUtilOfTheDbz2492Backport() throws Exception {
        try (var j = new JarFile(jar.toFile())) {
            assertThat(j.stream().filter(e -> e.getName().equals("io/debezium/data/SchemaUtil.class")).count()).isEqualTo(1);
        }
        try (var loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null)) {
            var writer = Class.forName("io.debezium.data.SchemaUtil$RecordWriter", false, loader);
            assertThat(writer.getDeclaredFields()).as("no ObjectMapper per writer (Debezium's makes one)")
                    .noneMatch(f -> f.getType().getName().equals("com.fasterxml.jackson.databind.ObjectMapper"));
        }
    }

    @Test
    void itCarriesOnlyTheRecordProcessorThatConvertsOnThePollingThread() throws Exception {
        String name = "io/debezium/embedded/async/ParallelSmtAndConvertBatchProcessor.class";
        try (var j = new JarFile(jar.toFile())) {
            assertThat(j.stream().filter(e -> e.getName().equals(name)).count()).isEqualTo(1);
        }
        try (var loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null)) {
            var processor = Class.forName("io.debezium.embedded.async.ParallelSmtAndConvertBatchProcessor", false, loader);
            assertThat(processor.getField("INLINE").getBoolean(null)).isTrue();
        }
    }

    @Test
    void itCarriesOnlyTheChangeEventQueueThatDoesNotSpin() throws Exception {
        String name = "io/debezium/connector/base/ChangeEventQueue.class";
        try (var j = new JarFile(jar.toFile())) {
            assertThat(j.stream().filter(e -> e.getName().equals(name)).count()).isEqualTo(1);
        }
        try (var loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null)) {
            var queue = Class.forName("io.debezium.connector.base.ChangeEventQueue", false, loader);
            assertThat(queue.getField("NO_SPIN").getBoolean(null)).isTrue();
        }
    }

    @Test
    void itCarriesOnlyThePostgresEmitterThatSkipsUnreadColumns() throws Exception {
        String name = "io/debezium/connector/postgresql/PostgresChangeRecordEmitter.class";
        try (var j = new JarFile(jar.toFile())) {
            assertThat(j.stream().filter(e -> e.getName().equals(name)).count()).isEqualTo(1);
        }
        try (var loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader())) { // java.sql
            var emitter = Class.forName("io.debezium.connector.postgresql.PostgresChangeRecordEmitter", false, loader);
            assertThat(emitter.getField("SKIPS_UNREAD_COLUMNS").getBoolean(null)).isTrue();
        }
    }
}
