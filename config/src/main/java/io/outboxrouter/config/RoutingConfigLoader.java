package io.outboxrouter.config;

import io.outboxrouter.config.OutboxConfig.Columns;
import io.outboxrouter.config.OutboxConfig.PayloadFormat;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import io.outboxrouter.config.RoutingConfig.DeadLetters;
import java.time.Duration;
import java.util.List;

/** Reads {@code outbox.*} and {@code routing.*}: the outbox columns, the topic template, dead letters, the envelope. */
final class RoutingConfigLoader {
    private RoutingConfigLoader() {
    }

    /**
     * {@code routing.event-router}: Debezium's EventRouter options under Debezium's names (read without {@code ${...}}
     * substitution: {@code ${routedByValue}} is Debezium's), and {@code routing.format}; null when not given.
     */
    static RoutingConfig.EventRouterMode eventRouter(ConfigNode routing) {
        var format = routing.child("format");
        var key = format.choice("key", RoutingConfig.Format.class, RoutingConfig.Format.JSON);
        var value = format.choice("value", RoutingConfig.Format.class, RoutingConfig.Format.JSON);
        var header = format.choice("header", RoutingConfig.Format.class, RoutingConfig.Format.JSON);
        var given = routing.rawStringMap("event-router");
        if (!routing.has("event-router")) {
            if (routing.has("format")) {
                routing.problem(routing.key("format"), "applies to records made by routing.event-router; set that too, or remove it");
            }
            return null;
        }
        var options = EventRouterOptions.of(given, (option, problem) -> routing.problem(routing.key("event-router." + option), problem));
        return new RoutingConfig.EventRouterMode(options, key, value, header);
    }

    static OutboxConfig outbox(ConfigNode n, RoutingConfig.EventRouterMode eventRouter) {
        if (eventRouter != null) {
            for (String field : List.of("columns", "headers", "payload-format")) {
                if (n.has(field)) {
                    n.problem(n.key(field), "is set by routing.event-router's options (" + EventRouterOptions.ID + ", "
                            + EventRouterOptions.KEY + ", " + EventRouterOptions.PAYLOAD + ", " + EventRouterOptions.ADDITIONAL
                            + ", ...): remove it");
                }
            }
        }
        var c = n.child("columns");
        var d = Columns.DEFAULTS;
        if (eventRouter != null) {
            var o = eventRouter.options();
            d = new Columns(o.get(EventRouterOptions.ID), o.get(EventRouterOptions.ROUTE_BY), o.get(EventRouterOptions.KEY),
                    o.get(EventRouterOptions.TYPE), o.get(EventRouterOptions.PAYLOAD));
        }
        var columns = new Columns(
                column(c, "id", d.id()), column(c, "aggregate-type", d.aggregateType()),
                column(c, "aggregate-id", d.aggregateId()), column(c, "type", d.type()),
                column(c, "payload", d.payload()));
        var headers = n.stringMap("headers");
        headers.forEach((col, header) -> {
            if (!RouterConfigLoader.IDENTIFIER.matcher(col).matches()) {
                n.problem(n.key("headers"), "\"" + col + "\" is not a column name");
            }
            if (header.isBlank()) {
                n.problem(n.key("headers." + col), "must name the Kafka header");
            }
        });
        var format = n.choice("payload-format", PayloadFormat.class, PayloadFormat.BYTES);
        var off = OutboxConfig.Retention.OFF;
        Duration after = n.duration("retention", off.after());
        if (!after.isZero() && after.toMillis() < 1000) {
            n.problem(n.key("retention"), "must be at least 1s, or 0 for off (was \"" + Durations.format(after) + "\")");
        }
        String timeColumn = column(n, "retention-time-column", off.timeColumn());
        int batchSize = n.integer("retention-batch-size", off.batchSize(), 1, 100_000);
        return new OutboxConfig(columns, headers, format, new OutboxConfig.Retention(after, timeColumn, batchSize), audit(n.child("audit")));
    }

    private static OutboxConfig.Audit audit(ConfigNode n) {
        var d = OutboxConfig.Audit.DEFAULT;
        boolean enabled = n.bool("enabled", d.enabled());
        Duration interval = n.duration("interval", d.interval());
        if (interval.toMillis() < 100) {
            n.problem(n.key("interval"), "must be at least 100ms (was \"" + Durations.format(interval) + "\")");
        }
        Duration lag = n.duration("lag", d.lag());
        var onLoss = n.choice("on-loss", OutboxConfig.OnLoss.class, d.onLoss());
        return new OutboxConfig.Audit(enabled, interval, lag, onLoss);
    }

    static String column(ConfigNode n, String field, String defaultName) {
        String v = n.string(field, defaultName);
        if (!RouterConfigLoader.IDENTIFIER.matcher(v).matches()) {
            n.problem(n.key(field), "must be a column name (was \"" + v + "\")");
        }
        return v;
    }
    static RoutingConfig routing(ConfigNode n, OutboxConfig outbox, RoutingConfig.EventRouterMode eventRouter,
                                         String defaultParkingTopic) {
        if (eventRouter != null && n.has("topic")) {
            n.problem(n.key("topic"), "is set by routing.event-router's " + EventRouterOptions.ROUTE_REPLACEMENT + " and "
                    + EventRouterOptions.ROUTE_REGEX + ": remove it");
        }
        // ${...} in the template are columns, not environment variables: read it without substitution.
        String text = n.rawText("topic").map(String::trim).filter(s -> !s.isEmpty()).orElse(RouterConfigLoader.DEFAULT_TOPIC);
        TopicTemplate topic;
        try {
            topic = TopicTemplate.parse(text);
            var known = RouterConfigLoader.knownPlaceholders(outbox);
            for (String p : topic.placeholders()) {
                if (!known.contains(p)) {
                    n.problem(n.key("topic"), "unknown placeholder ${" + p + "} in \"" + text + "\"; known: "
                            + String.join(", ", known.stream().map(k -> "${" + k + "}").toList())
                            + " (name another column under outbox.headers to use it)");
                }
            }
        } catch (IllegalArgumentException e) {
            n.problem(n.key("topic"), e.getMessage() + " (was \"" + text + "\")");
            topic = TopicTemplate.parse(RouterConfigLoader.DEFAULT_TOPIC);
        }
        var dl = n.child("dead-letters");
        var policy = dl.choice("policy", DeadLetterPolicy.class, DeadLetterPolicy.DEAD_LETTER);
        String dlTopic = dl.string("topic", RouterConfigLoader.DEFAULT_DEAD_LETTER_TOPIC);
        if (!TopicTemplate.isLegalTopic(dlTopic)) {
            dl.problem(dl.key("topic"), "must be a Kafka topic name: letters, digits, '.', '_', '-' (was \"" + dlTopic + "\")");
        }
        String parkingTopic = dl.string("parking-topic", defaultParkingTopic);
        if (!TopicTemplate.isLegalTopic(parkingTopic)) {
            dl.problem(dl.key("parking-topic"), "must be a Kafka topic name: letters, digits, '.', '_', '-' (was \"" + parkingTopic + "\")");
        } else if (parkingTopic.equals(dlTopic)) {
            dl.problem(dl.key("parking-topic"), "must not be the dead-letter topic (both are \"" + parkingTopic + "\"): held events "
                    + "are released from it, dead letters are not");
        }
        var keepEnded = dl.duration("keep-ended-parks", DeadLetters.KEEP_ENDED_PARKS);
        if (keepEnded.isNegative()) {
            dl.problem(dl.key("keep-ended-parks"), "must not be negative (was " + keepEnded + "); 0s keeps them for good");
        }
        return new RoutingConfig(topic, new DeadLetters(policy, dlTopic, parkingTopic, keepEnded), eventRouter,
                cloudEvents(n, outbox, eventRouter));
    }

    /** {@code routing.envelope} and {@code routing.cloudevents.*}; null when events are not wrapped. */
    static RoutingConfig.CloudEvents cloudEvents(ConfigNode n, OutboxConfig outbox, RoutingConfig.EventRouterMode eventRouter) {
        var envelope = n.choice("envelope", RoutingConfig.Envelope.class, RoutingConfig.Envelope.NONE);
        var ce = n.child("cloudevents");
        var mode = ce.choice("mode", RoutingConfig.CloudEvents.Mode.class, RoutingConfig.CloudEvents.Mode.BINARY);
        String text = ce.rawText("source").map(String::trim).filter(s -> !s.isEmpty()).orElse(RouterConfigLoader.DEFAULT_CLOUDEVENTS_SOURCE);
        TopicTemplate source = TopicTemplate.parseText(RouterConfigLoader.DEFAULT_CLOUDEVENTS_SOURCE);
        try {
            source = TopicTemplate.parseText(text);
            var known = RouterConfigLoader.knownPlaceholders(outbox);
            for (String p : source.placeholders()) {
                if (!known.contains(p)) {
                    ce.problem(ce.key("source"), "unknown placeholder ${" + p + "} in \"" + text + "\"; known: "
                            + String.join(", ", known.stream().map(k -> "${" + k + "}").toList()));
                }
            }
        } catch (IllegalArgumentException e) {
            ce.problem(ce.key("source"), e.getMessage() + " (was \"" + text + "\")");
        }
        if (envelope == RoutingConfig.Envelope.NONE) {
            if (ce.has("mode") || ce.has("source")) {
                ce.problem(ce.key(ce.has("mode") ? "mode" : "source"), "is read only with routing.envelope: cloudevents (set it, or remove this)");
            }
            return null;
        }
        if (eventRouter != null) {
            n.problem(n.key("envelope"), "wraps the router's own records; with routing.event-router the records are Debezium's "
                    + "EventRouter's: remove one of them");
        }
        for (String header : outbox.headers().values()) {
            String lower = header.toLowerCase(java.util.Locale.ROOT);
            if (lower.equals("content-type") || lower.startsWith("ce_")) {
                n.problem(n.key("envelope"), "puts the CloudEvents attributes in the " + header + " header, which outbox.headers also "
                        + "names: a consumer would read the wrong one; rename that header");
            }
        }
        return new RoutingConfig.CloudEvents(mode, source);
    }
}
