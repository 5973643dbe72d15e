package io.outboxrouter.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.regex.Pattern;

/** Durations as people write them in YAML: {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h}, or ISO-8601 {@code PT10S}. */
public final class Durations {
    private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

    private Durations() {
    }

    public static Optional<Duration> parse(String text) {
        var t = text.trim();
        if (t.equals("0")) {
            return Optional.of(Duration.ZERO);
        }
        var m = SIMPLE.matcher(t);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return Optional.of(switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            });
        }
        try {
            return Optional.of(Duration.parse(t.toUpperCase()));
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    /** The shortest exact form among ms/s/m/h, so that a printed config reads back the same. */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms == 0) {
            return "0s";
        }
        if (ms % 86_400_000 == 0 && ms > 0) {
            return ms / 86_400_000 + "d";
        }
        if (ms % 3_600_000 == 0 && ms > 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms % 60_000 == 0 && ms > 0) {
            return ms / 60_000 + "m";
        }
        if (ms % 1000 == 0 && ms > 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }
}
