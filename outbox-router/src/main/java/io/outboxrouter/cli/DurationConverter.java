package io.outboxrouter.cli;

import io.outboxrouter.config.Durations;
import java.time.Duration;
import picocli.CommandLine;

/** A command-line duration written as in the configuration ({@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h}) or in ISO-8601 ({@code PT1M}). */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        var d = Durations.parse(value).orElseThrow(() -> new CommandLine.TypeConversionException(
                "must be a duration such as 500ms, 10s, 2m, 1h or PT1M (was \"" + value + "\")"));
        if (d.isNegative()) {
            throw new CommandLine.TypeConversionException("must not be negative (was \"" + value + "\")");
        }
        return d;
    }
}
