package io.outboxrouter.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads one YAML mapping, tracking the full key of every value, so that every problem names its key.
 * A scalar can be overridden from the environment ({@link #envName}); {@code ${VAR}} in a value is
 * replaced from the environment. Keys never read are reported as unknown by {@link #rejectUnknown()}.
 */
final class ConfigNode {
    static final String ENV_PREFIX = "OUTBOX_ROUTER_";
    private static final Pattern ENV_REF = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?}");

    private final String path;
    private final JsonNode node;
    private final Map<String, String> env;
    private final List<String> problems;
    private final Set<String> read = new HashSet<>();
    private final List<ConfigNode> children = new ArrayList<>();

    ConfigNode(String path, JsonNode node, Map<String, String> env, List<String> problems) {
        this.path = path;
        this.node = node == null || node.isNull() ? MissingNode.getInstance() : node;
        this.env = env;
        this.problems = problems;
        if (!this.node.isMissingNode() && !this.node.isObject()) {
            problem(path, "must be a mapping of keys to values (was " + describe(this.node) + ")");
        }
    }

    /** The environment variable that overrides a key: {@code source.max-batch-size} is {@code OUTBOX_ROUTER_SOURCE_MAX_BATCH_SIZE}. */
    static String envName(String key) {
        return ENV_PREFIX + key.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
    }

    String key(String field) {
        return path.isEmpty() ? field : path + "." + field;
    }

    void problem(String key, String message) {
        problems.add(key + ": " + message);
    }

    ConfigNode child(String field) {
        read.add(field);
        var child = new ConfigNode(key(field), node.get(field), env, problems);
        children.add(child);
        return child;
    }

    /** The raw text of a scalar (environment first), with {@code ${VAR}} references resolved. */
    Optional<String> raw(String field) {
        return rawText(field).map(v -> substitute(key(field), v));
    }

    /** As {@link #raw} but without {@code ${...}} substitution, for templates whose placeholders are not variables. */
    Optional<String> rawText(String field) {
        read.add(field);
        String fromEnv = env.get(envName(key(field)));
        if (fromEnv != null) {
            return Optional.of(fromEnv);
        }
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return Optional.empty();
        }
        if (!v.isValueNode()) {
            problem(key(field), "must be a single value (was " + describe(v) + ")");
            return Optional.empty();
        }
        return Optional.of(v.asText());
    }

    String string(String field, String defaultValue) {
        return raw(field).map(String::trim).filter(s -> !s.isEmpty()).orElse(defaultValue);
    }

    Optional<String> optionalString(String field) {
        return Optional.ofNullable(string(field, null));
    }

    String requiredString(String field, String hint) {
        String v = string(field, null);
        if (v == null) {
            problem(key(field), "required" + (hint.isEmpty() ? "" : "; " + hint));
        }
        return v;
    }

    int integer(String field, int defaultValue, int min, int max) {
        var v = raw(field);
        if (v.isEmpty()) {
            return defaultValue;
        }
        try {
            int n = Integer.parseInt(v.get().trim());
            if (n < min || n > max) {
                problem(key(field), "must be between " + min + " and " + max + " (was " + n + ")");
                return defaultValue;
            }
            return n;
        } catch (NumberFormatException e) {
            problem(key(field), "must be a whole number (was \"" + v.get() + "\")");
            return defaultValue;
        }
    }

    boolean bool(String field, boolean defaultValue) {
        var v = raw(field);
        if (v.isEmpty()) {
            return defaultValue;
        }
        return switch (v.get().trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> {
                problem(key(field), "must be true or false (was \"" + v.get() + "\")");
                yield defaultValue;
            }
        };
    }

    Duration duration(String field, Duration defaultValue) {
        var v = raw(field);
        if (v.isEmpty()) {
            return defaultValue;
        }
        var d = Durations.parse(v.get());
        if (d.isEmpty() || d.get().isNegative()) {
            problem(key(field), "must be a duration such as 500ms, 10s, 2m or 1h (was \"" + v.get() + "\")");
            return defaultValue;
        }
        return d.get();
    }

    <E extends Enum<E>> E choice(String field, Class<E> type, E defaultValue) {
        var v = raw(field);
        if (v.isEmpty()) {
            return defaultValue;
        }
        String wanted = v.get().trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(wanted)) {
                return e;
            }
        }
        problem(key(field), "must be one of " + choices(type) + " (was \"" + v.get() + "\")");
        return defaultValue;
    }

    static <E extends Enum<E>> String choices(Class<E> type) {
        return String.join(", ", Arrays.stream(type.getEnumConstants()).map(ConfigNode::lower).toList());
    }

    static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** A list of strings; from the environment as a comma-separated value. */
    List<String> stringList(String field, List<String> defaultValue) {
        read.add(field);
        String fromEnv = env.get(envName(key(field)));
        if (fromEnv != null) {
            return Arrays.stream(fromEnv.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
        }
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return defaultValue;
        }
        if (v.isValueNode()) {
            return List.of(substitute(key(field), v.asText().trim()));
        }
        if (!v.isArray()) {
            problem(key(field), "must be a list (was " + describe(v) + ")");
            return defaultValue;
        }
        var out = new ArrayList<String>();
        for (int i = 0; i < v.size(); i++) {
            JsonNode item = v.get(i);
            if (!item.isValueNode()) {
                problem(key(field) + "[" + i + "]", "must be a single value (was " + describe(item) + ")");
            } else {
                out.add(substitute(key(field) + "[" + i + "]", item.asText().trim()));
            }
        }
        return out;
    }

    /** Whether the field is given, in the file or the environment. */
    boolean has(String field) {
        return env.containsKey(envName(key(field))) || (node.get(field) != null && !node.get(field).isNull());
    }

    /** A free-form mapping of scalar values (pass-through properties, header maps). Keys are not checked. */
    Map<String, String> stringMap(String field) {
        return stringMap(field, true);
    }

    /** As {@link #stringMap(String)}, without {@code ${...}} substitution: for values whose placeholders are not variables. */
    Map<String, String> rawStringMap(String field) {
        return stringMap(field, false);
    }

    private Map<String, String> stringMap(String field, boolean substitute) {
        read.add(field);
        JsonNode v = node.get(field);
        var out = new LinkedHashMap<String, String>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isObject()) {
            problem(key(field), "must be a mapping of keys to values (was " + describe(v) + ")");
            return out;
        }
        v.fields().forEachRemaining(e -> {
            if (!e.getValue().isValueNode()) {
                problem(key(field) + "." + e.getKey(), "must be a single value (was " + describe(e.getValue()) + ")");
            } else {
                out.put(e.getKey(), substitute ? substitute(key(field) + "." + e.getKey(), e.getValue().asText()) : e.getValue().asText());
            }
        });
        return out;
    }

    /** A secret from {@code field}, or from the file named by {@code field-file}. */
    Optional<Secret> secret(String field) {
        var direct = raw(field);
        var file = optionalString(field + "-file");
        if (direct.isPresent() && file.isPresent()) {
            problem(key(field), "give either " + field + " or " + field + "-file, not both");
        }
        if (file.isPresent()) {
            try {
                String text = Files.readString(Path.of(file.get()), StandardCharsets.UTF_8);
                return Optional.of(Secret.of(text.strip()));
            } catch (IOException | RuntimeException e) {
                problem(key(field + "-file"), "cannot read \"" + file.get() + "\" (" + e.getClass().getSimpleName() + ")");
                return Optional.empty();
            }
        }
        return direct.map(Secret::of);
    }

    /** Every leaf key read from this node and its children: the configuration model's keys. */
    void collectLeafKeys(Collection<String> out) {
        for (String field : read.stream().sorted().toList()) {
            var child = children.stream().filter(c -> c.path.equals(key(field))).findFirst();
            if (child.isPresent()) {
                child.get().collectLeafKeys(out);
            } else {
                out.add(key(field));
            }
        }
    }

    /** Reports, for this node and every child read from it, the keys that nothing read. */
    void rejectUnknown() {
        if (node.isObject()) {
            node.fieldNames().forEachRemaining(f -> {
                if (!read.contains(f)) {
                    problem(key(f), "unknown key" + suggestion(f));
                }
            });
        }
        children.forEach(ConfigNode::rejectUnknown);
    }

    private String suggestion(String unknown) {
        String best = null;
        int bestDistance = 3;
        for (String known : read) {
            int d = distance(unknown, known);
            if (d < bestDistance) {
                best = known;
                bestDistance = d;
            }
        }
        return best == null ? "" : " (did you mean \"" + key(best) + "\"?)";
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    private String substitute(String key, String value) {
        Matcher m = ENV_REF.matcher(value);
        var sb = new StringBuilder();
        while (m.find()) {
            String v = env.get(m.group(1));
            if (v == null) {
                v = m.group(2);
            }
            if (v == null) {
                problem(key, "environment variable " + m.group(1) + " is not set");
                v = "";
            }
            m.appendReplacement(sb, Matcher.quoteReplacement(v));
        }
        m.appendTail(sb);
        return sb.toString();
    }

    private static String describe(JsonNode v) {
        if (v.isObject()) {
            return "a mapping";
        }
        if (v.isArray()) {
            return "a list";
        }
        return "\"" + v.asText() + "\"";
    }
}
