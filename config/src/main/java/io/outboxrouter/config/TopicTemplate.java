package io.outboxrouter.config;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * A topic name with {@code ${placeholder}} parts, e.g. {@code outbox.event.${aggregatetype}}.
 * Placeholders name outbox fields or columns; they are checked against the configured columns at startup.
 */
public final class TopicTemplate {
    /** Kafka's legal topic characters. */
    public static final Pattern TOPIC_CHARS = Pattern.compile("[a-zA-Z0-9._-]*");
    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final int MAX_TOPIC_LENGTH = 249;

    private sealed interface Part permits Literal, Placeholder {
    }

    private record Literal(String text) implements Part {
    }

    private record Placeholder(String name) implements Part {
    }

    private final String source;
    private final List<Part> parts;

    private TopicTemplate(String source, List<Part> parts) {
        this.source = source;
        this.parts = List.copyOf(parts);
    }

    /** Parses a template, or throws {@link IllegalArgumentException} with a message fit for the user. */
    public static TopicTemplate parse(String source) {
        return parse(source, true);
    }

    /** A template of any text (a CloudEvents source URI, say): its literal parts are not held to topic characters. */
    public static TopicTemplate parseText(String source) {
        return parse(source, false);
    }

    private static TopicTemplate parse(String source, boolean topic) {
        var parts = new ArrayList<Part>();
        int i = 0;
        while (i < source.length()) {
            int open = source.indexOf("${", i);
            String literal = open < 0 ? source.substring(i) : source.substring(i, open);
            if (!literal.isEmpty()) {
                if (topic && !TOPIC_CHARS.matcher(literal).matches()) {
                    throw new IllegalArgumentException("may only contain letters, digits, '.', '_', '-' and ${placeholders}");
                }
                parts.add(new Literal(literal));
            }
            if (open < 0) {
                break;
            }
            int close = source.indexOf('}', open);
            if (close < 0) {
                throw new IllegalArgumentException("unclosed placeholder at position " + open);
            }
            String name = source.substring(open + 2, close);
            if (!NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("placeholder ${" + name + "} is not a column name");
            }
            parts.add(new Placeholder(name));
            i = close + 1;
        }
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("must not be empty");
        }
        return new TopicTemplate(source, parts);
    }

    public Set<String> placeholders() {
        var names = new LinkedHashSet<String>();
        parts.forEach(p -> {
            if (p instanceof Placeholder ph) {
                names.add(ph.name());
            }
        });
        return names;
    }

    /**
     * Renders the topic for one event. Returns empty with no exception when a value is missing; the caller
     * decides (usually a dead letter). The result is not checked for legality: see {@link #isLegalTopic}.
     */
    public Optional<String> render(Function<String, String> values) {
        var sb = new StringBuilder();
        for (Part p : parts) {
            if (p instanceof Literal l) {
                sb.append(l.text());
            } else {
                String v = values.apply(((Placeholder) p).name());
                if (v == null) {
                    return Optional.empty();
                }
                sb.append(v);
            }
        }
        return Optional.of(sb.toString());
    }

    /** The names this template can render: its literal parts as they are, each placeholder any non-empty text. */
    public Pattern pattern() {
        var sb = new StringBuilder();
        for (Part p : parts) {
            sb.append(p instanceof Literal l ? Pattern.quote(l.text()) : ".+");
        }
        return Pattern.compile(sb.toString());
    }

    public static boolean isLegalTopic(String topic) {
        return !topic.isEmpty() && topic.length() <= MAX_TOPIC_LENGTH && !topic.equals(".") && !topic.equals("..")
                && TOPIC_CHARS.matcher(topic).matches();
    }

    public String source() {
        return source;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TopicTemplate t && t.source.equals(source);
    }

    @Override
    public int hashCode() {
        return source.hashCode();
    }

    @Override
    public String toString() {
        return source;
    }
}
