package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * What a release hands out, as {@code ./mvnw package} writes it to {@code outbox-router/target/release/}: the versioned
 * jar with its SHA-256 and CycloneDX SBOM, the licence and a NOTICE that covers every component the jar bundles.
 * {@code -Dnotice.update=true} writes the NOTICE this test expects.
 */
class ReleaseArtifactsIT {
    private static final Path RELEASE = Path.of(System.getProperty("release.dir", "target/release"));
    private static final String VERSION = System.getProperty("project.version");
    private static final Path ROOT = Path.of(System.getProperty("repository.root", ".."));
    private static final Path REPOSITORY = Path.of(System.getProperty("maven.repo.local",
            System.getProperty("user.home") + "/.m2/repository"));
    private static final String OWN_GROUP = "io.outboxrouter";
    private static final List<String> NOTICE_NAMES = List.of("META-INF/NOTICE", "META-INF/NOTICE.txt", "META-INF/NOTICE.md", "NOTICE",
            "NOTICE.txt");

    private final Path jar = RELEASE.resolve("outbox-router-" + VERSION + ".jar");

    /** A bundled component as the SBOM names it. */
    private record Component(String coordinates, String licence, Path jar) {
    }

    /** The SBOM; offline, Maven skips the plugin that writes it (it needs the POMs' licence data): then skipped here. */
    private static JsonNode sbom() throws IOException {
        Path file = RELEASE.resolve("outbox-router-" + VERSION + ".cdx.json");
        assumeFalse(!Files.exists(file) && offline(), "cyclonedx:makeBom does not run offline");
        return new ObjectMapper().readTree(file.toFile());
    }

    @Test
    void theVersionedJarIsTheRunnableJarWithItsChecksum() throws Exception {
        assertThat(Files.mismatch(jar, Path.of(System.getProperty("router.jar")))).isEqualTo(-1L);
        String line = Files.readString(RELEASE.resolve(jar.getFileName() + ".sha256"), StandardCharsets.UTF_8).trim();
        // the format sha256sum -c reads
        assertThat(line).isEqualTo(sha256(jar) + "  " + jar.getFileName());
    }

    @Test
    void theJarPrintsItsVersionAndCommit() throws Exception {
        var p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", jar.toString(), "--version")
                .redirectErrorStream(true).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).startsWith("outbox-router " + VERSION + " (commit ");
    }

    @Test
    void theSbomDescribesThisReleaseAndEveryComponentIsInTheJar() throws Exception {
        var sbom = sbom();
        assertThat(sbom.path("bomFormat").asText()).isEqualTo("CycloneDX");
        assertThat(sbom.at("/metadata/component/name").asText()).isEqualTo("outbox-router");
        assertThat(sbom.at("/metadata/component/version").asText()).isEqualTo(VERSION);
        var components = components();
        assertThat(components).extracting(Component::coordinates).contains("io.debezium:debezium-embedded",
                "io.debezium:debezium-connector-postgres", "io.debezium:debezium-connector-mysql", "org.apache.kafka:kafka-clients",
                "org.postgresql:postgresql", "org.mariadb.jdbc:mariadb-java-client", "com.zaxxer:HikariCP", "info.picocli:picocli")
                .noneMatch(c -> c.startsWith("org.junit") || c.startsWith("org.assertj") || c.contains("testcontainers"));
        var missing = new ArrayList<String>();
        try (var shaded = new JarFile(jar.toFile())) {
            for (var c : components) {
                String sample = sampleClass(c.jar());
                if (sample != null && shaded.getEntry(sample) == null) {
                    missing.add(c.coordinates() + " (" + sample + ")");
                }
            }
        }
        assertThat(missing).as("components the SBOM lists but the jar does not carry").isEmpty();
    }

    @Test
    void theJarCarriesTheLicenceAndTheNoticeAndNoneOfItsDependenciesOwn() throws Exception {
        try (var shaded = new JarFile(jar.toFile())) {
            assertThat(read(shaded, "META-INF/LICENSE")).isEqualTo(Files.readString(ROOT.resolve("LICENSE")));
            assertThat(read(shaded, "META-INF/NOTICE")).isEqualTo(Files.readString(ROOT.resolve("NOTICE")));
            assertThat(Files.readString(ROOT.resolve("LICENSE"))).contains("Apache License", "Version 2.0, January 2004");
            assertThat(shaded.stream().map(e -> e.getName())
                    .filter(n -> n.matches("(META-INF/)?(LICENSE|NOTICE)[^/]*") && !n.equals("META-INF/LICENSE") && !n.equals("META-INF/NOTICE")))
                    .isEmpty();
        }
    }

    @Test
    void theNoticeNamesEveryBundledComponentAndCarriesTheirNotices() throws Exception {
        String expected = notice(components());
        Path file = ROOT.resolve("NOTICE");
        if (Boolean.getBoolean("notice.update")) {
            Files.writeString(file, expected, StandardCharsets.UTF_8);
        }
        assertThat(Files.readString(file, StandardCharsets.UTF_8))
                .as("NOTICE is not what the bundled components need: run ./mvnw -o verify -pl outbox-router "
                        + "-Dit.test=ReleaseArtifactsIT -Dtest=NONE -Dnotice.update=true and commit it")
                .isEqualTo(expected);
    }

    /** The third-party components of the SBOM, by coordinates. */
    private List<Component> components() throws IOException {
        var sbom = sbom();
        var byCoordinates = new TreeMap<String, Component>();
        for (JsonNode c : sbom.path("components")) {
            String group = c.path("group").asText();
            if (group.equals(OWN_GROUP)) {
                continue;
            }
            String coordinates = group + ":" + c.path("name").asText();
            byCoordinates.put(coordinates, new Component(coordinates, licence(c), jarOf(c.path("purl").asText())));
        }
        return List.copyOf(byCoordinates.values());
    }

    /** The licences a component's POM declares, by SPDX id where it gives one, else by name and address. */
    private static String licence(JsonNode component) {
        var names = new TreeSet<String>();
        for (JsonNode l : component.path("licenses")) {
            if (l.has("expression")) {
                names.add(l.path("expression").asText());
            } else if (l.at("/license/id").isTextual()) { // its text: https://spdx.org/licenses/<id>.html
                names.add(l.at("/license/id").asText());
            } else if (l.at("/license/name").isTextual()) {
                String url = l.at("/license/url").asText("");
                names.add(l.at("/license/name").asText() + (url.isEmpty() ? "" : " <" + url + ">"));
            }
        }
        return names.isEmpty() ? "no licence declared in its POM" : String.join(", ", names);
    }

    /** {@code pkg:maven/group/name@version?type=jar[&classifier=c]} in the local repository. */
    private static Path jarOf(String purl) {
        String rest = purl.substring("pkg:maven/".length());
        String query = rest.contains("?") ? rest.substring(rest.indexOf('?') + 1) : "";
        rest = rest.contains("?") ? rest.substring(0, rest.indexOf('?')) : rest;
        String group = rest.substring(0, rest.indexOf('/'));
        String name = rest.substring(rest.indexOf('/') + 1, rest.indexOf('@'));
        String version = rest.substring(rest.indexOf('@') + 1);
        String classifier = "";
        for (String q : query.split("&")) {
            if (q.startsWith("classifier=")) {
                classifier = "-" + q.substring("classifier=".length());
            }
        }
        return REPOSITORY.resolve(group.replace('.', '/')).resolve(name).resolve(version).resolve(name + "-" + version + classifier + ".jar");
    }

    /** The NOTICE: the product's own lines, the components by licence, then their NOTICE texts, one each. */
    static String notice(List<Component> components) throws IOException {
        var byLicence = new TreeMap<String, List<String>>();
        var texts = new LinkedHashMap<String, List<String>>(); // notice text -> the components that carry it
        for (var c : components) {
            byLicence.computeIfAbsent(c.licence(), l -> new ArrayList<>()).add(c.coordinates());
            String text = noticeText(c.jar());
            if (text != null) {
                texts.computeIfAbsent(text, t -> new ArrayList<>()).add(c.coordinates());
            }
        }
        var out = new StringBuilder("""
                outbox-router
                Copyright 2026 The outbox-router authors

                This product is licensed under the Apache License, Version 2.0 (the LICENSE file).

                The runnable jar (outbox-router-VERSION.jar) bundles the components below, each under the licence its
                authors chose, as its POM declares it; the text of a licence named by its SPDX identifier is at
                https://spdx.org/licenses/<identifier>.html. The SBOM released beside the jar
                (outbox-router-VERSION.cdx.json) lists them with their versions and hashes.
                """);
        byLicence.forEach((licence, names) -> {
            out.append('\n').append(licence).append(":\n");
            names.forEach(n -> out.append("  ").append(n).append('\n'));
        });
        out.append("\nThe notices these components carry follow, each once.\n");
        var sorted = texts.entrySet().stream().sorted(Map.Entry.comparingByValue((a, b) -> a.get(0).compareTo(b.get(0))))
                .collect(Collectors.toList());
        for (var e : sorted) {
            out.append("\n").append("-".repeat(100)).append('\n').append(String.join(", ", e.getValue())).append(":\n\n")
                    .append(e.getKey()).append('\n');
        }
        return out.toString();
    }

    /** A jar's NOTICE file, with line ends and trailing blanks evened out; null when it has none. */
    private static String noticeText(Path jarFile) throws IOException {
        if (!Files.exists(jarFile)) {
            throw new IllegalStateException("not in the local repository: " + jarFile);
        }
        try (var j = new JarFile(jarFile.toFile())) {
            for (String name : NOTICE_NAMES) {
                var entry = j.getEntry(name);
                if (entry != null) {
                    String text;
                    try (InputStream in = j.getInputStream(entry)) {
                        text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                    }
                    return text.replace("\r\n", "\n").lines().map(String::stripTrailing).collect(Collectors.joining("\n")).strip();
                }
            }
        }
        return null;
    }

    /** One class a component's jar has at its root (not a versioned or module-info entry); null when it has none. */
    private static String sampleClass(Path jarFile) throws IOException {
        try (var j = new JarFile(jarFile.toFile())) {
            return j.stream().map(e -> e.getName())
                    .filter(n -> n.endsWith(".class") && !n.startsWith("META-INF/") && !n.endsWith("module-info.class"))
                    .findFirst().orElse(null);
        }
    }

    /** Whether Maven runs with -o (its launcher exports its arguments). */
    private static boolean offline() {
        String args = " " + System.getenv().getOrDefault("MAVEN_CMD_LINE_ARGS", "") + " ";
        return args.contains(" -o ") || args.contains(" --offline ");
    }

    private static String read(JarFile j, String name) throws IOException {
        var entry = j.getEntry(name);
        assertThat(entry).as(name).isNotNull();
        try (InputStream in = j.getInputStream(entry)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static String sha256(Path file) throws Exception {
        var digest = MessageDigest.getInstance("SHA-256");
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                digest.update(buffer, 0, n);
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }
}
