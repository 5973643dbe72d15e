package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ConfigReferenceTest {
    static final String START = "<!-- config-reference:start (generated from ConfigReference.java; see ConfigReferenceTest) -->\n";
    static final String END = "<!-- config-reference:end -->";
    private static final Path PAGE = Path.of("..", "docs", "configuration.md");

    @Test
    void theReferenceListsExactlyTheKeysTheLoaderReads() {
        var documented = ConfigReference.ENTRIES.stream().map(e -> e.key().replaceAll("\\.\\*$", "")).toList();
        assertThat(documented).doesNotHaveDuplicates();
        assertThat(documented).containsExactlyInAnyOrderElementsOf(RouterConfigLoader.modelKeys());
    }

    /** Run with -Dconfig.reference.update=true to rewrite the table in docs/configuration.md after changing the model. */
    @Test
    void theConfigurationPageHoldsTheGeneratedReference() throws Exception {
        String page = Files.readString(PAGE);
        int start = page.indexOf(START);
        int end = page.indexOf(END);
        assertThat(start).as("docs/configuration.md has the config-reference markers").isNotNegative();
        assertThat(end).isGreaterThan(start);
        String expected = ConfigReference.markdown();
        String actual = page.substring(start + START.length(), end);
        if (!actual.equals(expected) && Boolean.getBoolean("config.reference.update")) {
            Files.writeString(PAGE, page.substring(0, start + START.length()) + expected + page.substring(end));
            return;
        }
        assertThat(actual).as("docs/configuration.md reference; regenerate with "
                + "./mvnw -q -pl config test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true").isEqualTo(expected);
    }
}
