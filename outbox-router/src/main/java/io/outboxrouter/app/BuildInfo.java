package io.outboxrouter.app;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Optional;
import java.util.Properties;

/**
 * The version and commit this jar was built from, as the build wrote them into {@code build.properties}. A build
 * outside a git checkout (a source archive) has no commit; a value the build left unfilled counts as absent.
 *
 * @param version the Maven version, {@code 0.1.0} for a release, {@code -SNAPSHOT} otherwise
 * @param commit  the abbreviated commit id, with {@code -dirty} when the work tree had changes
 */
public record BuildInfo(String version, Optional<String> commit) {
    private static final BuildInfo CURRENT = load(BuildInfo.class.getResourceAsStream("build.properties"));

    /** This jar's build. */
    public static BuildInfo current() {
        return CURRENT;
    }

    static BuildInfo load(InputStream in) {
        var p = new Properties();
        if (in != null) {
            try (in) {
                p.load(in);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read build.properties", e);
            }
        }
        String version = filled(p.getProperty("version")).orElse("unknown");
        Optional<String> commit = filled(p.getProperty("commit"))
                .map(c -> "true".equals(p.getProperty("dirty")) ? c + "-dirty" : c);
        return new BuildInfo(version, commit);
    }

    private static Optional<String> filled(String value) {
        return value == null || value.isBlank() || value.startsWith("${") ? Optional.empty() : Optional.of(value.trim());
    }

    /** {@code 0.1.0 (commit 1a2b3c4)}, or the version alone when the commit is not known. */
    public String describe() {
        return version + commit.map(c -> " (commit " + c + ")").orElse("");
    }
}
