package io.outboxrouter.migrate;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The {@code debezium.source.*} properties of a Debezium Server file, as the router's {@code source} and {@code debezium} sections. */
final class DebeziumServerSource {
    /** Source properties the router sets itself or makes unnecessary, with the reason each is left out. */
    private static final Map<String, String> UNNEEDED = new LinkedHashMap<>();

    static {
        String offsets = "the router keeps its positions in its offsets table (offsets.*); to switch without a gap see "
                + "docs/migrating-from-debezium.md";
        UNNEEDED.put("offset.storage", offsets);
        UNNEEDED.put("offset.storage.*", offsets);
        UNNEEDED.put("offset.flush.interval.ms", "the router stores a position once Kafka acknowledged its events, at a "
                + "transaction's end (offsets.commit-interval)");
        UNNEEDED.put("offset.flush.timeout.ms", offsets);
        UNNEEDED.put("schema.history.internal", "the router keeps the binlog schema history in its offsets database");
        UNNEEDED.put("schema.history.internal.*", "the router keeps the binlog schema history in its offsets database");
        UNNEEDED.put("column.include.list", "the router decodes only the columns the EventRouter options name");
        UNNEEDED.put("column.exclude.list", "the router decodes only the columns the EventRouter options name");
        UNNEEDED.put("tombstones.on.delete", "set by the router (a delete of an outbox row publishes nothing)");
        UNNEEDED.put("provide.transaction.metadata", "set by the router, which publishes in commit order itself");
        UNNEEDED.put("include.schema.changes", "the router publishes outbox events only");
        UNNEEDED.put("publication.autocreate.mode", "the router creates its publication when it is missing, for the outbox "
                + "tables (and on Postgres 15+ only the columns it reads)");
        UNNEEDED.put("plugin.name", "the router reads pgoutput");
        UNNEEDED.put("name", "the router's name is topic.prefix's");
        UNNEEDED.put("database.include.list", "the router reads the tables of source.tables");
        UNNEEDED.put("schema.include.list", "the router reads the tables of source.tables");
    }

    private DebeziumServerSource() {
    }

    /** Maps one {@code debezium.source.*} property ({@code property} without the prefix) into the router's sections. */
    static void map(String property, String key, String value, boolean binlog, Map<String, Object> source,
                    Map<String, Object> postgres, Map<String, Object> debezium, List<FromDebeziumServer.Dropped> dropped) {
        switch (property) {
            case "connector.class", "table.include.list", "snapshot.mode", "topic.prefix", "database.user", "database.password",
                 "database.hostname", "database.port", "database.dbname" -> {
                // read above
            }
            case "slot.name" -> postgres.put("slot", value);
            case "publication.name" -> postgres.put("publication", value);
            case "database.server.id" -> source.put("binlog", Map.of("server-id", value));
            case "poll.interval.ms" -> source.put("poll-interval", value + "ms");
            case "max.batch.size" -> source.put("max-batch-size", value);
            case "heartbeat.interval.ms", "heartbeat.action.query" -> {
                if (binlog) {
                    debezium.put(property, value);
                } else {
                    dropped.add(new FromDebeziumServer.Dropped(key, "the router runs its own heartbeat on Postgres (source.postgres.heartbeat-*)", false));
                }
            }
            case "slot.drop.on.stop" -> {
                if (value.equalsIgnoreCase("true")) {
                    dropped.add(new FromDebeziumServer.Dropped(key, "the router keeps its slot: it holds the position to hand over, and dropping it on "
                            + "a stop loses every change after it. Stopping Debezium Server with this set drops the slot first: set it "
                            + "to false there before the switch", true));
                }
            }
            case "message.prefix.include.list", "message.prefix.exclude.list", "table.exclude.list" -> dropped.add(new FromDebeziumServer.Dropped(key,
                    "the router sets what the connector reads itself (its own logical decoding messages included): name the outbox "
                    + "tables in source.tables", true));
            default -> {
                if (property.startsWith("database.ssl")) {
                    dropped.add(new FromDebeziumServer.Dropped(key, "give TLS settings in source.url, as JDBC parameters (e.g. ?sslmode=verify-full), and "
                            + "under debezium: for the connector", true));
                    return;
                }
                String reason = unneeded(property);
                if (reason != null) {
                    if (property.equals("plugin.name") && !value.equals("pgoutput")) {
                        dropped.add(new FromDebeziumServer.Dropped(key, "the router reads pgoutput only (was " + value + ")", true));
                    } else {
                        dropped.add(new FromDebeziumServer.Dropped(key, reason, false));
                    }
                } else {
                    debezium.put(property, FromDebeziumServer.quarkus(value)); // a connector setting: passed through as it is
                }
            }
        }
    }

    private static String unneeded(String property) {
        for (var e : UNNEEDED.entrySet()) {
            String k = e.getKey();
            if (k.endsWith(".*") ? property.startsWith(k.substring(0, k.length() - 1)) : property.equals(k)) {
                return e.getValue();
            }
        }
        return null;
    }
}
