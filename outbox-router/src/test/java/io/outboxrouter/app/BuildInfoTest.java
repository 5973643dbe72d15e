package io.outboxrouter.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class BuildInfoTest {
    private static BuildInfo load(String properties) {
        return BuildInfo.load(new ByteArrayInputStream(properties.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void theBuildWritesThisModulesVersionAndACommit() {
        var current = BuildInfo.current();
        assertThat(current.version()).isEqualTo(System.getProperty("project.version"));
        // Tests run in a git checkout; a build from a source archive would have no commit.
        assertThat(current.commit()).hasValueSatisfying(c -> assertThat(c).matches("[0-9a-f]{7}(-dirty)?"));
        assertThat(current.describe()).startsWith(current.version() + " (commit ");
    }

    @Test
    void aDirtyWorkTreeIsSaid() {
        assertThat(load("version=0.1.0\ncommit=abc1234\ndirty=true\n").describe()).isEqualTo("0.1.0 (commit abc1234-dirty)");
        assertThat(load("version=0.1.0\ncommit=abc1234\ndirty=false\n").describe()).isEqualTo("0.1.0 (commit abc1234)");
    }

    @Test
    void valuesTheBuildLeftUnfilledCountAsUnknown() {
        var b = load("version=0.2.0\ncommit=${git.commit.id.abbrev}\ndirty=${git.dirty}\n");
        assertThat(b.commit()).isEqualTo(Optional.empty());
        assertThat(b.describe()).isEqualTo("0.2.0");
        assertThat(BuildInfo.load(null).describe()).isEqualTo("unknown");
    }
}
