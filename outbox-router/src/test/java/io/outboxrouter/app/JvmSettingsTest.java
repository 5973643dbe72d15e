package io.outboxrouter.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class JvmSettingsTest {
    @Test
    void theCollectorIsNamedAsItsOptionChoosesIt() {
        assertThat(JvmSettings.collector(List.of("Copy", "MarkSweepCompact"))).isEqualTo("serial");
        assertThat(JvmSettings.collector(List.of("G1 Young Generation", "G1 Old Generation", "G1 Concurrent GC"))).isEqualTo("G1");
        assertThat(JvmSettings.collector(List.of("PS Scavenge", "PS MarkSweep"))).isEqualTo("parallel");
        assertThat(JvmSettings.collector(List.of("ZGC Cycles", "ZGC Pauses"))).isEqualTo("Z");
        assertThat(JvmSettings.collector(List.of("Shenandoah Cycles", "Shenandoah Pauses"))).isEqualTo("Shenandoah Cycles/Shenandoah Pauses");
    }

    @Test
    void theReadmesRunCommandAndTheDockerImageGiveTheRecommendedOptions() throws Exception {
        String options = String.join(" ", JvmSettings.RECOMMENDED_OPTIONS);
        assertThat(Files.readString(Path.of("..", "README.md"))).contains("java " + options + " \\\n     -jar outbox-router.jar run");
        assertThat(Files.readString(Path.of("..", "Dockerfile"))).contains("JAVA_TOOL_OPTIONS=\"" + options + "\"");
    }

    @Test
    void theDescriptionNamesTheJavaVersionTheHeapLimitTheCollectorAndTheCompilers() {
        assertThat(JvmSettings.describe()).startsWith("Java " + Runtime.version() + ", heap up to ").contains(" MiB, ")
                .containsPattern("(serial|G1|parallel|Z) collector, (client compiler only|both compilers)$");
    }
}
