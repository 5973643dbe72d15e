package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.app.JvmSettings;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OCI image jib builds in the package phase, read from its tarball as a container runtime would: its config
 * (entrypoint, user, environment, port, labels), its layers, and the jar it carries, run from its layer. This test image
 * has a stand-in base (no registry is reachable in the build); the release image (profile {@code image}) has the same
 * configuration on a JRE base.
 */
class ImageIT {
    private static final Path IMAGE = Path.of(System.getProperty("router.jar")).getParent().resolve("test-image/outbox-router-image.tar");
    private static final String JAR = "opt/outbox-router/outbox-router.jar";

    @TempDir
    Path dir;

    /** The tarball's entries by name (docker-save format: manifest.json, the config, the layers). */
    private static Map<String, byte[]> entries(InputStream in) throws IOException {
        var out = new HashMap<String, byte[]>();
        try (var tar = new TarArchiveInputStream(in)) {
            for (var e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
                if (!e.isDirectory()) {
                    out.put(e.getName().startsWith("./") ? e.getName().substring(2) : e.getName(), tar.readAllBytes());
                }
            }
        }
        return out;
    }

    private static Map<String, byte[]> layer(byte[] bytes) throws IOException {
        boolean gzip = bytes.length > 2 && (bytes[0] & 0xff) == 0x1f && (bytes[1] & 0xff) == 0x8b;
        return entries(gzip ? new GZIPInputStream(new ByteArrayInputStream(bytes)) : new ByteArrayInputStream(bytes));
    }

    @Test
    void theImageRunsTheRunnableJarAsANonRootUserWithTheRecommendedOptions() throws Exception {
        var image = entries(Files.newInputStream(IMAGE));
        var json = new ObjectMapper();
        JsonNode manifest = json.readTree(image.get("manifest.json")).get(0);
        JsonNode config = json.readTree(image.get(manifest.path("Config").asText())).path("config");

        assertThat(strings(config.path("Entrypoint"))).containsExactly("java", "-jar", "/" + JAR);
        assertThat(strings(config.path("Cmd"))).containsExactly("--help");
        assertThat(config.path("User").asText()).isEqualTo("10001:10001");
        assertThat(strings(config.path("Env"))).contains("JAVA_TOOL_OPTIONS=" + String.join(" ", JvmSettings.RECOMMENDED_OPTIONS));
        assertThat(config.path("ExposedPorts").has("8080/tcp")).isTrue();
        var labels = config.path("Labels");
        assertThat(labels.path("org.opencontainers.image.version").asText()).isEqualTo(System.getProperty("project.version"));
        assertThat(labels.path("org.opencontainers.image.revision").asText()).matches("[0-9a-f]{7}");
        assertThat(labels.path("org.opencontainers.image.licenses").asText()).isEqualTo("Apache-2.0");

        // The base's layer, then one layer that adds the jar and nothing of jib's own class and library layers.
        var layers = strings(manifest.path("Layers"));
        var added = new ArrayList<String>();
        byte[] jar = null;
        for (String name : layers.subList(1, layers.size())) {
            var files = layer(image.get(name));
            added.addAll(files.keySet());
            jar = files.getOrDefault(JAR, jar);
        }
        assertThat(added).containsExactly(JAR);
        assertThat(jar).isEqualTo(Files.readAllBytes(Path.of(System.getProperty("router.jar"))));

        // The jar from the layer runs and names this build.
        Path extracted = Files.write(dir.resolve("outbox-router.jar"), jar);
        var p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", extracted.toString(), "--version")
                .redirectErrorStream(true).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(out).startsWith("outbox-router " + System.getProperty("project.version") + " (commit "
                + labels.path("org.opencontainers.image.revision").asText());
    }

    private static List<String> strings(JsonNode array) {
        var out = new ArrayList<String>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }
}
