package io.outboxrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DurationConverterTest {
    private final DurationConverter converter = new DurationConverter();

    @Test
    void theConfigurationsSyntaxAndIsoBothRead() {
        assertThat(converter.convert("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(converter.convert("10s")).isEqualTo(Duration.ofSeconds(10));
        assertThat(converter.convert("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(converter.convert("PT1M")).isEqualTo(Duration.ofMinutes(1));
        assertThat(converter.convert("pt0s")).isZero();
        assertThat(converter.convert("0")).isZero();
    }

    @Test
    void anythingElseIsRefusedWithTheValue() {
        assertThatThrownBy(() -> converter.convert("soon")).isInstanceOf(CommandLine.TypeConversionException.class)
                .hasMessage("must be a duration such as 500ms, 10s, 2m, 1h or PT1M (was \"soon\")");
        assertThatThrownBy(() -> converter.convert("PT-1M")).hasMessageContaining("must not be negative");
    }

    @Test
    void theCommandsTakeEitherSyntax() {
        var parked = new CommandLine(new Main());
        var parsed = parked.parseArgs("parked", "release", "order-1", "--wait", "30s", "--config", "x.yml");
        var release = parsed.subcommand().subcommand().commandSpec().userObject();
        assertThat(release).isInstanceOf(ParkedCommand.Release.class);
        assertThat(((ParkedCommand.Release) release).waitFor).isEqualTo(Duration.ofSeconds(30));
        var reshard = new CommandLine(new Main()).parseArgs("reshard", "--timeout", "PT30M", "--config", "x.yml");
        assertThat(((ReshardCommand) reshard.subcommand().commandSpec().userObject()).timeout).isEqualTo(Duration.ofMinutes(30));
    }
}
