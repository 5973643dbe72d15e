package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/** What the runnable jar carries, as built by the reactor. */
class RunnableJarIT {
    private final Path jar = Path.of(System.getProperty("router.jar", "target/outbox-router.jar"));

    /**
     * Debezium as released: every io/debezium class in the jar is byte for byte the one in Debezium's own jars on the test
     * class path, and none of Debezium's classes is left out of it.
     */
    @Test
    void itCarriesDebeziumAsReleased() throws Exception {
        var differing = new ArrayList<String>();
        int compared = 0;
        try (var j = new JarFile(jar.toFile())) {
            for (var entry : j.stream().filter(e -> e.getName().startsWith("io/debezium/") && e.getName().endsWith(".class")).toList()) {
                byte[] ours;
                try (var in = j.getInputStream(entry)) {
                    ours = in.readAllBytes();
                }
                byte[] theirs = released(entry.getName());
                if (theirs == null || !Arrays.equals(ours, theirs)) {
                    differing.add(entry.getName());
                }
                compared++;
            }
            for (String name : new String[] {"io/debezium/connector/base/ChangeEventQueue.class",
                    "io/debezium/connector/postgresql/PostgresChangeRecordEmitter.class", "io/debezium/data/SchemaUtil.class",
                    "io/debezium/embedded/async/ParallelSmtAndConvertBatchProcessor.class"}) {
                assertThat(j.getEntry(name)).as(name).isNotNull();
            }
        }
        assertThat(compared).isGreaterThan(1000);
        assertThat(differing).as("classes that are not Debezium's own").isEmpty();
    }

    /** The class as Debezium's jar on the test class path has it; null when none has it. */
    private static byte[] released(String name) throws IOException {
        var url = RunnableJarIT.class.getClassLoader().getResource(name);
        if (url == null || !url.toString().startsWith("jar:") || !url.toString().contains("/io/debezium/")) {
            return null;
        }
        try (InputStream in = url.openStream()) {
            return in.readAllBytes();
        }
    }
}
