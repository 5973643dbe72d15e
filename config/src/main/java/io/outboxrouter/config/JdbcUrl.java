package io.outboxrouter.config;

import java.util.Optional;
import java.util.regex.Pattern;

/** The parts of a {@code jdbc:postgresql://host:port/db} style URL that a replication client needs. */
public record JdbcUrl(String url, String scheme, String host, int port, String database) {
    private static final Pattern SHAPE = Pattern.compile("jdbc:([a-z]+)://([^/:?]+)(?::(\\d+))?/([^?;]+)(?:[?;].*)?");

    public static Optional<JdbcUrl> parse(String url) {
        var m = SHAPE.matcher(url);
        if (!m.matches()) {
            return Optional.empty();
        }
        String scheme = m.group(1);
        int port = m.group(3) != null ? Integer.parseInt(m.group(3)) : defaultPort(scheme);
        return Optional.of(new JdbcUrl(url, scheme, m.group(2), port, m.group(4)));
    }

    private static int defaultPort(String scheme) {
        return scheme.equals("postgresql") ? 5432 : 3306;
    }
}
