package io.outboxrouter.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import com.fasterxml.jackson.dataformat.yaml.util.StringQuotingChecker;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/** Prints the configuration in effect, defaults filled in, as YAML with the same keys, secrets masked. */
public final class EffectiveConfig {
    /** Pass-through keys whose values are credentials. */
    private static final Pattern SECRET_KEY = Pattern.compile("(?i).*(password|secret|jaas|token|credential).*|.*\\.key");
    /** A string that YAML could read as a number: quoted when it would not read back as itself. */
    private static final Pattern NUMBER_LIKE = Pattern.compile("[-+]?[.0-9]");
    /** Reads YAML as the loader does. */
    private static final ObjectMapper READER = new ObjectMapper(new YAMLFactory());
    private static final ObjectMapper YAML = new ObjectMapper(YAMLFactory.builder().stringQuotingChecker(new ReadsBackQuoting()).build()
            .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER).enable(YAMLGenerator.Feature.MINIMIZE_QUOTES));

    private EffectiveConfig() {
    }

    public static String toYaml(RouterConfig c) {
        var root = new LinkedHashMap<String, Object>();
        root.put("name", c.name());
        var s = c.source();
        var source = new LinkedHashMap<String, Object>();
        source.put("kind", ConfigNode.lower(s.kind()));
        putConnection(source, s.connection());
        source.put("tables", s.tables());
        if (s.kind().isBinlog()) {
            source.put("binlog", map("server-id", s.binlog().serverId()));
        } else {
            var pg = s.postgres();
            var postgres = map("slot", pg.slot(), "publication", pg.publication(),
                    "heartbeat-interval", Durations.format(pg.heartbeatInterval()), "heartbeat-table", pg.heartbeatTable());
            postgres.put("shards", pg.shards());
            if (pg.messages()) {
                postgres.put("messages", map("prefix", pg.messagePrefix()));
            }
            if (pg.runs().size() < pg.shards()) {
                postgres.put("shard", pg.runs().get(0) + "/" + pg.shards());
            }
            source.put("postgres", postgres);
        }
        source.put("snapshot", ConfigNode.lower(s.snapshot()));
        source.put("poll-interval", Durations.format(s.pollInterval()));
        source.put("max-batch-size", s.maxBatchSize());
        root.put("source", source);
        var cols = c.outbox().columns();
        var eventRouter = c.routing().eventRouter();
        var outbox = new LinkedHashMap<String, Object>();
        if (eventRouter == null) { // else the EventRouter's options name the columns
            outbox.put("columns", map("id", cols.id(), "aggregate-type", cols.aggregateType(), "aggregate-id", cols.aggregateId(),
                    "type", cols.type(), "payload", cols.payload()));
            outbox.put("headers", c.outbox().headers());
            outbox.put("payload-format", ConfigNode.lower(c.outbox().payloadFormat()));
        }
        outbox.put("retention", Durations.format(c.outbox().retention().after()));
        outbox.put("retention-time-column", c.outbox().retention().timeColumn());
        outbox.put("retention-batch-size", c.outbox().retention().batchSize());
        var audit = c.outbox().audit();
        outbox.put("audit", map("enabled", audit.enabled(), "interval", Durations.format(audit.interval()), "lag", Durations.format(audit.lag()),
                "on-loss", ConfigNode.lower(audit.onLoss())));
        root.put("outbox", outbox);
        var routing = new LinkedHashMap<String, Object>();
        if (eventRouter == null) {
            routing.put("topic", c.routing().topic().source());
        } else {
            routing.put("event-router", eventRouter.options().given());
            routing.put("format", map("key", ConfigNode.lower(eventRouter.key()), "value", ConfigNode.lower(eventRouter.value()),
                    "header", ConfigNode.lower(eventRouter.header())));
        }
        routing.put("dead-letters", map("policy", ConfigNode.lower(c.routing().deadLetters().policy()),
                "topic", c.routing().deadLetters().topic(), "parking-topic", c.routing().deadLetters().parkingTopic(),
                "keep-ended-parks", Durations.format(c.routing().deadLetters().keepEndedParks())));
        var cloudEvents = c.routing().cloudEvents();
        routing.put("envelope", cloudEvents == null ? "none" : "cloudevents");
        if (cloudEvents != null) {
            routing.put("cloudevents", map("mode", ConfigNode.lower(cloudEvents.mode()), "source", cloudEvents.source().source()));
        }
        root.put("routing", routing);
        root.put("delivery", ConfigNode.lower(c.kafka().delivery()));
        var kafka = map("bootstrap-servers", c.kafka().bootstrapServers(), "producer", masked(c.kafka().producer()),
                "give-up-after", Durations.format(c.kafka().giveUpAfter()));
        if (c.kafka().exactlyOnce()) {
            kafka.put("offsets-topic", c.kafka().offsetsTopic());
        }
        root.put("kafka", kafka);
        var offsets = new LinkedHashMap<String, Object>();
        offsets.put("table", c.offsets().table());
        offsets.put("schema-history-table", c.offsets().schemaHistoryTable());
        offsets.put("commit-interval", Durations.format(c.offsets().commitInterval()));
        offsets.put("give-up-after", Durations.format(c.offsets().giveUpAfter()));
        c.offsets().connection().ifPresent(conn -> putConnection(offsets, conn));
        root.put("offsets", offsets);
        root.put("http", map("enabled", c.http().enabled(), "listen", c.http().host() + ":" + c.http().port()));
        root.put("tracing", map("enabled", c.tracing().enabled()));
        root.put("debezium", masked(c.debezium()));
        try {
            return YAML.writeValueAsString(root);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void putConnection(Map<String, Object> m, JdbcConnection conn) {
        m.put("url", conn.redactedUrl());
        if (conn.user() != null) {
            m.put("user", conn.user());
        }
        m.put("password", conn.password().reveal().isEmpty() ? "" : Secret.MASK);
    }

    private static Map<String, String> masked(Map<String, String> props) {
        var out = new LinkedHashMap<String, String>();
        props.forEach((k, v) -> out.put(k, SECRET_KEY.matcher(k).matches() ? Secret.MASK : v));
        return out;
    }

    /**
     * Minimal quotes, except that a string YAML would read back as another value ({@code 2.10} as {@code 2.1}, {@code 1e3},
     * {@code 0x1F}, {@code .inf}) is quoted, so that the printed configuration loads the same.
     */
    private static final class ReadsBackQuoting extends StringQuotingChecker.Default {
        @Override
        public boolean needToQuoteValue(String value) {
            return super.needToQuoteValue(value) || (NUMBER_LIKE.matcher(value).lookingAt() && !readsBackAsItself(value));
        }

        private static boolean readsBackAsItself(String value) {
            try {
                JsonNode read = READER.readTree("v: " + value).get("v");
                return read != null && read.isValueNode() && read.asText().equals(value);
            } catch (JacksonException e) {
                return false;
            }
        }
    }

    private static Map<String, Object> map(Object... kv) {
        var m = new LinkedHashMap<String, Object>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
