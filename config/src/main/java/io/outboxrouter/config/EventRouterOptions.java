package io.outboxrouter.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The options of Debezium's outbox {@code EventRouter}, under Debezium's names and with its defaults: what the Kafka Connect
 * drop-in accepts, and what the router's {@code routing.event-router} takes. Here: the names, the defaults, the checks that
 * need no Kafka class, and which columns a configuration reads.
 */
public final class EventRouterOptions {
    public static final String OP_INVALID = "table.op.invalid.behavior";
    public static final String ID = "table.field.event.id";
    public static final String KEY = "table.field.event.key";
    public static final String TYPE = "table.field.event.type";
    public static final String TIMESTAMP = "table.field.event.timestamp";
    public static final String PAYLOAD = "table.field.event.payload";
    public static final String ADDITIONAL = "table.fields.additional.placement";
    /** Debezium 3.5's name for whether a placed column missing from a row fails the record; {@link #ADDITIONAL_MISSING} since 3.6. */
    public static final String ERROR_ON_MISSING = "table.fields.additional.error.on.missing";
    /** Debezium 3.6's name for {@link #ERROR_ON_MISSING}: {@code error} (true) or {@code ignore} (false). */
    public static final String ADDITIONAL_MISSING = "table.field.additional.missing";
    public static final String SCHEMA_VERSION = "table.field.event.schema.version";
    public static final String ROUTE_BY = "route.by.field";
    public static final String ROUTE_REGEX = "route.topic.regex";
    public static final String ROUTE_REPLACEMENT = "route.topic.replacement";
    public static final String TOMBSTONE_ON_EMPTY = "route.tombstone.on.empty.payload";
    public static final String EXPAND_JSON = "table.expand.json.payload";
    public static final String JSON_NULLS = "table.json.payload.null.behavior";
    /** Debezium 3.7's: with expansion, an empty JSON array left out ({@code ignore}) or typed an array of optional strings. */
    public static final String JSON_EMPTY_ARRAYS = "table.json.payload.empty.array.behavior";
    public static final String NAME_ADJUSTMENT = "field.name.adjustment.mode";
    public static final String TRACING_FIELD = "tracing.span.context.field";
    public static final String TRACING_OPERATION = "tracing.operation.name";
    public static final String TRACING_CONTEXT_ONLY = "tracing.with.context.field.only";

    /** Each option's default, as Debezium's; null: unset. */
    public static final Map<String, String> DEFAULTS;

    static {
        var d = new LinkedHashMap<String, String>();
        d.put(OP_INVALID, "warn");
        d.put(ID, "id");
        d.put(KEY, "aggregateid");
        d.put(TYPE, "type");
        d.put(TIMESTAMP, null);
        d.put(PAYLOAD, "payload");
        d.put(ADDITIONAL, "");
        d.put(ERROR_ON_MISSING, "true");
        d.put(ADDITIONAL_MISSING, "error");
        d.put(SCHEMA_VERSION, null);
        d.put(ROUTE_BY, "aggregatetype");
        d.put(ROUTE_REGEX, "(?<routedByValue>.*)");
        d.put(ROUTE_REPLACEMENT, "outbox.event.${routedByValue}");
        d.put(TOMBSTONE_ON_EMPTY, "false");
        d.put(EXPAND_JSON, "false");
        d.put(JSON_NULLS, "ignore");
        d.put(JSON_EMPTY_ARRAYS, "ignore");
        d.put(NAME_ADJUSTMENT, "none");
        d.put(TRACING_FIELD, "tracingspancontext");
        d.put(TRACING_OPERATION, "debezium-read");
        d.put(TRACING_CONTEXT_ONLY, "false");
        DEFAULTS = java.util.Collections.unmodifiableMap(d);
    }

    private static final Map<String, List<String>> CHOICES = Map.of(
            OP_INVALID, List.of("warn", "error", "fatal"),
            ADDITIONAL_MISSING, List.of("error", "ignore"),
            JSON_NULLS, List.of("ignore", "optional_bytes"),
            JSON_EMPTY_ARRAYS, List.of("ignore", "optional_string"),
            NAME_ADJUSTMENT, List.of("none", "avro", "avro_unicode"));
    private static final List<String> BOOLEAN_VALUES = List.of("true", "false");
    private static final Set<String> BOOLEANS = Set.of(ERROR_ON_MISSING, TOMBSTONE_ON_EMPTY, EXPAND_JSON, TRACING_CONTEXT_ONLY);
    private static final Set<String> COLUMNS = Set.of(ID, KEY, TYPE, TIMESTAMP, PAYLOAD, SCHEMA_VERSION, ROUTE_BY);
    private static final Pattern COLUMN = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*");

    /** Where an additional column goes. */
    public enum Placement {
        HEADER, ENVELOPE, PARTITION
    }

    /** One {@code column:placement[:alias]} entry of {@link #ADDITIONAL}. */
    public record Additional(String column, Placement placement, String alias) {
    }

    private final Map<String, String> values;
    private final Map<String, String> given;

    private EventRouterOptions(Map<String, String> values, Map<String, String> given) {
        this.values = values;
        this.given = given;
    }

    /** The options as given, for printing the configuration back. */
    public Map<String, String> given() {
        return given;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EventRouterOptions other && values.equals(other.values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return "EventRouterOptions" + given;
    }

    /**
     * The options given, checked: each problem is handed to {@code problem} with the option's name (unknown names, values
     * that are not one of the choices, not true or false, not a regular expression, not a column name, malformed
     * placements, the two names of the missing-column setting given with different values).
     */
    public static EventRouterOptions of(Map<String, String> given, java.util.function.BiConsumer<String, String> problem) {
        var values = new LinkedHashMap<>(DEFAULTS);
        given.forEach((name, value) -> {
            if (!DEFAULTS.containsKey(name)) {
                problem.accept(name, "is not an option of Debezium's outbox EventRouter; known: " + String.join(", ", DEFAULTS.keySet()));
                return;
            }
            String v = value == null ? null : value.trim();
            var choices = CHOICES.get(name);
            if (choices != null && v != null && !choices.contains(v.toLowerCase(Locale.ROOT))) {
                problem.accept(name, "must be one of " + String.join(", ", choices) + " (was \"" + value + "\")");
            } else if (BOOLEANS.contains(name) && v != null && !v.equalsIgnoreCase("true") && !v.equalsIgnoreCase("false")) {
                problem.accept(name, "must be true or false (was \"" + value + "\")");
            } else if (COLUMNS.contains(name) && v != null && !v.isEmpty() && !COLUMN.matcher(v).matches()) {
                problem.accept(name, "must be a column name (was \"" + value + "\")");
            } else if (name.equals(ROUTE_REGEX)) {
                try {
                    Pattern.compile(v == null ? "" : v);
                } catch (PatternSyntaxException e) {
                    problem.accept(name, "is not a regular expression: " + e.getDescription() + " (was \"" + value + "\")");
                }
            }
            values.put(name, v == null || v.isEmpty() && COLUMNS.contains(name) && DEFAULTS.get(name) == null ? null : v);
        });
        try {
            placements(values.get(ADDITIONAL));
        } catch (IllegalArgumentException e) {
            problem.accept(ADDITIONAL, e.getMessage());
        }
        // Either name of the setting is kept in step with the other, so that both read the same and the options compare equal.
        boolean errorOnMissing = errorOnMissing(givenValue(given, ERROR_ON_MISSING, BOOLEAN_VALUES),
                givenValue(given, ADDITIONAL_MISSING, CHOICES.get(ADDITIONAL_MISSING)),
                message -> problem.accept(ADDITIONAL_MISSING, message));
        values.put(ERROR_ON_MISSING, Boolean.toString(errorOnMissing));
        values.put(ADDITIONAL_MISSING, errorOnMissing ? "error" : "ignore");
        return new EventRouterOptions(values, java.util.Collections.unmodifiableMap(new LinkedHashMap<>(given)));
    }

    /** The option's value, trimmed and lower-cased, when it is given and one of {@code allowed}; else null (not given, or refused above). */
    private static String givenValue(Map<String, String> given, String name, List<String> allowed) {
        String v = given.get(name);
        v = v == null ? null : v.trim().toLowerCase(Locale.ROOT);
        return v != null && allowed.contains(v) ? v : null;
    }

    /**
     * Whether a placed column missing from a row fails the record, from either of Debezium's names for the setting: the
     * boolean {@link #ERROR_ON_MISSING} (up to 3.5) and the choice {@link #ADDITIONAL_MISSING} (from 3.6), {@code true}
     * being {@code error}; neither given, Debezium's default, true. When both are given and disagree, {@code conflict} gets
     * a message naming both, and the newer name's value is taken.
     *
     * @param errorOnMissing {@code true} or {@code false}, or null when not given
     * @param missing        {@code error} or {@code ignore}, or null when not given
     */
    public static boolean errorOnMissing(String errorOnMissing, String missing, java.util.function.Consumer<String> conflict) {
        if (missing == null) {
            return errorOnMissing == null || Boolean.parseBoolean(errorOnMissing.trim());
        }
        boolean error = missing.trim().equalsIgnoreCase("error");
        if (errorOnMissing != null && Boolean.parseBoolean(errorOnMissing.trim()) != error) {
            conflict.accept("says " + missing.trim() + " and " + ERROR_ON_MISSING + " says " + errorOnMissing.trim() + "; they are "
                    + "Debezium's newer and older names for one setting (error is true, ignore is false): give one of them");
        }
        return error;
    }

    /**
     * {@code column:placement[:alias]} entries, comma-separated; an unknown placement is refused here rather than on the
     * first record.
     *
     * @throws IllegalArgumentException naming the entry
     */
    public static List<Additional> placements(String list) {
        var out = new ArrayList<Additional>();
        if (list == null || list.isBlank()) {
            return out;
        }
        for (String entry : list.split(",")) {
            entry = entry.trim();
            if (entry.isEmpty()) {
                continue;
            }
            String[] parts = entry.split(":");
            if (parts.length < 2 || parts.length > 3) {
                throw new IllegalArgumentException("each entry is column:placement or column:placement:alias, not '" + entry + "'");
            }
            Placement placement;
            try {
                placement = Placement.valueOf(parts[1].trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("'" + parts[1].trim() + "' in '" + entry + "' is not a placement: header, envelope or partition");
            }
            String column = parts[0].trim();
            out.add(new Additional(column, placement, parts.length == 3 ? parts[2].trim() : column));
        }
        return List.copyOf(out);
    }

    public String get(String name) {
        return values.get(name);
    }

    /** Every option, defaults included: what the transformation is configured with. */
    public Map<String, String> all() {
        var out = new LinkedHashMap<String, String>();
        values.forEach((k, v) -> {
            if (v != null) {
                out.put(k, v);
            }
        });
        return out;
    }

    public boolean flag(String name) {
        return Boolean.parseBoolean(values.get(name));
    }

    public List<Additional> additional() {
        return placements(values.get(ADDITIONAL));
    }

    public Optional<String> timestampColumn() {
        return Optional.ofNullable(values.get(TIMESTAMP));
    }

    /** The columns every outbox row must have: id, key, payload, the routing column, the timestamp and version columns when set, and the placed ones unless their absence is allowed. */
    public List<String> requiredColumns() {
        var out = new LinkedHashSet<String>();
        out.add(values.get(ID));
        out.add(values.get(KEY));
        out.add(values.get(PAYLOAD));
        out.add(values.get(ROUTE_BY));
        timestampColumn().ifPresent(out::add);
        Optional.ofNullable(values.get(SCHEMA_VERSION)).ifPresent(out::add);
        if (flag(ERROR_ON_MISSING)) {
            additional().forEach(a -> out.add(a.column()));
        }
        return List.copyOf(out);
    }

    /** Every column read: the required ones, then those read where a row has them. */
    public List<String> readColumns() {
        var out = new LinkedHashSet<>(requiredColumns());
        out.addAll(optionalColumns());
        return List.copyOf(out);
    }

    /** Columns read when a row has them: the placed ones when {@link #ERROR_ON_MISSING} is false. */
    public List<String> optionalColumns() {
        if (flag(ERROR_ON_MISSING)) {
            return List.of();
        }
        return additional().stream().map(Additional::column).filter(c -> !requiredColumns().contains(c)).distinct().toList();
    }
}
