package io.outboxrouter.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The parts of a {@code jdbc:postgresql://host:port/db} style URL that a replication client needs. Postgres URLs may
 * name several hosts ({@code jdbc:postgresql://a:5432,b:5432/db}), which the driver tries in turn.
 */
public record JdbcUrl(String url, String scheme, List<Host> hosts, String database) {
    private static final Pattern SHAPE = Pattern.compile("jdbc:([a-z]+)://([^/?;]+)/([^?;]+)(?:[?;].*)?");
    private static final Pattern HOST = Pattern.compile("(\\[[0-9A-Fa-f:.]+\\]|[^:,\\[\\]]+)(?::(\\d+))?");

    /** One host of the URL, with its port (the scheme's default when the URL gives none). */
    public record Host(String host, int port) {
        @Override
        public String toString() {
            return host + ":" + port;
        }
    }

    public static Optional<JdbcUrl> parse(String url) {
        var m = SHAPE.matcher(url);
        if (!m.matches()) {
            return Optional.empty();
        }
        String scheme = m.group(1);
        var hosts = new ArrayList<Host>();
        for (String part : m.group(2).split(",", -1)) {
            var h = HOST.matcher(part.trim());
            if (!h.matches()) {
                return Optional.empty();
            }
            hosts.add(new Host(h.group(1), h.group(2) != null ? Integer.parseInt(h.group(2)) : defaultPort(scheme)));
        }
        return Optional.of(new JdbcUrl(url, scheme, List.copyOf(hosts), m.group(3)));
    }

    /** The first host. */
    public String host() {
        return hosts.get(0).host();
    }

    /** The first host's port. */
    public int port() {
        return hosts.get(0).port();
    }

    public boolean multiHost() {
        return hosts.size() > 1;
    }

    /** A parameter of the URL's query string; empty when it has none of that name. */
    public Optional<String> parameter(String name) {
        int q = url.indexOf('?');
        if (q < 0) {
            return Optional.empty();
        }
        for (String pair : url.substring(q + 1).split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0 && pair.substring(0, eq).equalsIgnoreCase(name)) {
                return Optional.of(pair.substring(eq + 1));
            }
        }
        return Optional.empty();
    }

    /** This URL with one host in place of its list, and without targetServerType (which chooses among several). */
    public String withOnly(Host host) {
        var m = SHAPE.matcher(url);
        if (!m.matches()) {
            throw new IllegalStateException("not a JDBC URL: " + url);
        }
        String rest = url.substring(m.end(3)).replaceAll("(?i)([?&])targetServerType=[^&]*&?", "$1").replaceAll("[?&]$", "");
        return "jdbc:" + scheme + "://" + host + "/" + database + rest;
    }

    private static int defaultPort(String scheme) {
        return scheme.equals("postgresql") ? 5432 : 3306;
    }
}
