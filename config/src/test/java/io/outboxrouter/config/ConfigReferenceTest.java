package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ConfigReferenceTest {
    static final String START = "<!-- config-reference:start (generated from ConfigReference.java; see ConfigReferenceTest) -->\n";
    static final String END = "<!-- config-reference:end -->";
    private static final Path README = Path.of("..", "README.md");

    @Test
    void theReferenceListsExactlyTheKeysTheLoaderReads() {
        var documented = ConfigReference.ENTRIES.stream().map(e -> e.key().replaceAll("\\.\\*$", "")).toList();
        assertThat(documented).doesNotHaveDuplicates();
        assertThat(documented).containsExactlyInAnyOrderElementsOf(RouterConfigLoader.modelKeys());
    }

    /** Run with -Dconfig.reference.update=true to rewrite the README's table after changing the model. */
    @Test
    void theReadmeHoldsTheGeneratedReference() throws Exception {
        String readme = Files.readString(README);
        int start = readme.indexOf(START);
        int end = readme.indexOf(END);
        assertThat(start).as("README has the config-reference markers").isNotNegative();
        assertThat(end).isGreaterThan(start);
        String expected = ConfigReference.markdown();
        String actual = readme.substring(start + START.length(), end);
        if (!actual.equals(expected) && Boolean.getBoolean("config.reference.update")) {
            Files.writeString(README, readme.substring(0, start + START.length()) + expected + readme.substring(end));
            return;
        }
        assertThat(actual).as("README configuration reference; regenerate with "
                + "./mvnw -q -pl config test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true").isEqualTo(expected);
    }
}
