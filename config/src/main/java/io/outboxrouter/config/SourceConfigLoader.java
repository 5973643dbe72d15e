package io.outboxrouter.config;

import io.outboxrouter.config.SourceConfig.BinlogSource;
import io.outboxrouter.config.SourceConfig.PostgresSource;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Reads {@code source.*}: the database, its connection, the outbox tables and the replication settings of its kind. */
final class SourceConfigLoader {
    private SourceConfigLoader() {
    }

    /** @param delivery the router's delivery, which with the source's kind sets the poll interval's default */
    static SourceConfig source(ConfigNode n, String routerName, Delivery delivery) {
        var kind = n.choice("kind", SourceKind.class, SourceKind.POSTGRES);
        String example = "jdbc:" + kind.jdbcScheme() + "://host:" + (kind.isBinlog() ? 3306 : 5432) + "/database";
        String url = n.requiredString("url", "the JDBC URL of the database holding the outbox, e.g. " + example);
        JdbcUrl address = null;
        if (url != null) {
            address = JdbcUrl.parse(url).filter(u -> u.scheme().equals(kind.jdbcScheme())).orElse(null);
            if (address == null) {
                n.problem(n.key("url"), "must look like " + example + " for source.kind " + ConfigNode.lower(kind)
                        + " (was \"" + url + "\")");
            } else if (address.multiHost() && kind.isBinlog()) {
                n.problem(n.key("url"), "names " + address.hosts().size() + " hosts; a " + ConfigNode.lower(kind) + " source takes one: "
                        + "give the address that moves to the primary in a failover (docs/failover.md) (was \"" + url + "\")");
            } else if (address.multiHost()) {
                // The router writes (its lock, its offsets) and reads its slot on the primary: of several hosts, that one.
                var target = address.parameter("targetServerType");
                if (target.isEmpty()) {
                    url = url + (url.contains("?") ? "&" : "?") + "targetServerType=primary";
                    address = JdbcUrl.parse(url).orElseThrow();
                } else if (!target.get().equalsIgnoreCase("primary") && !target.get().equalsIgnoreCase("master")) {
                    n.problem(n.key("url"), "names several hosts with targetServerType=" + target.get() + "; the router reads its slot "
                            + "and writes its offsets on the primary: use targetServerType=primary, or leave it out (was \"" + url + "\")");
                }
            }
        }
        String user = n.requiredString("user", kind.isBinlog()
                ? "a user with REPLICATION SLAVE, REPLICATION CLIENT and SELECT" : "a role with REPLICATION LOGIN");
        var password = n.secret("password").orElse(Secret.of(""));
        var pg = n.child("postgres");
        var messages = pg.child("messages");
        String messagePrefix = messages.optionalString("prefix").orElse(null);
        RouterConfigLoader.checkMessagePrefix(messages, messagePrefix);
        if (messagePrefix != null && kind.isBinlog()) {
            messages.problem(messages.key("prefix"), "logical decoding messages are Postgres's (pg_logical_emit_message); a "
                    + ConfigNode.lower(kind) + " source has none (remove it)");
        }
        // With messages, the outbox tables are optional: a tableless outbox names none.
        var defaultTables = messagePrefix != null ? List.<String>of()
                : kind.isBinlog() && address != null ? List.of(address.database() + ".outbox") : List.of("public.outbox");
        var tables = n.stringList("tables", defaultTables);
        if (tables.isEmpty() && messagePrefix == null) {
            n.problem(n.key("tables"), "must name at least one outbox table (or, on Postgres, set source.postgres.messages.prefix "
                    + "for a tableless outbox)");
        }
        for (String t : tables) {
            if (!RouterConfigLoader.QUALIFIED_TABLE.matcher(t).matches()) {
                n.problem(n.key("tables"), "must be qualified table names like " + (kind.isBinlog() ? "app.outbox" : "public.outbox")
                        + " (was \"" + t + "\")");
            }
        }
        String defaultName = routerName.replaceAll("[^a-z0-9_]", "_");
        String slot = pg.string("slot", defaultName);
        if (!RouterConfigLoader.SLOT_NAME.matcher(slot).matches()) {
            pg.problem(pg.key("slot"), "must be lower-case letters, digits or '_', at most 63 (was \"" + slot + "\")");
        }
        String publication = pg.string("publication", defaultName);
        if (!RouterConfigLoader.IDENTIFIER.matcher(publication).matches()) {
            pg.problem(pg.key("publication"), "must be a plain SQL identifier (was \"" + publication + "\")");
        }
        for (var named : Map.of("slot", slot, "publication", publication).entrySet()) {
            if (RouterConfigLoader.SHARD_SUFFIX.matcher(named.getValue()).find()) {
                pg.problem(pg.key(named.getKey()), "must not end like a shard's, _shard_<i>_of_<N>: another router's shards are "
                        + "called so (was \"" + named.getValue() + "\"" + (pg.raw(named.getKey()).isPresent() ? "" : ", from the name") + ")");
            }
        }
        Duration heartbeat = pg.duration("heartbeat-interval", Duration.ZERO);
        String heartbeatTable = pg.string("heartbeat-table", "public.outbox_router_heartbeat");
        if (!RouterConfigLoader.QUALIFIED_TABLE.matcher(heartbeatTable).matches()) {
            pg.problem(pg.key("heartbeat-table"), "must be a schema-qualified table name (was \"" + heartbeatTable + "\")");
        }
        int count = pg.integer("shards", 1, 1, Shard.MAX_COUNT);
        List<Integer> runs = Shard.all(count);
        var only = pg.optionalString("shard");
        if (only.isPresent()) {
            var m = RouterConfigLoader.SHARD.matcher(only.get().trim());
            int i = m.matches() ? Integer.parseInt(m.group(1)) : -1;
            int of = m.matches() ? Integer.parseInt(m.group(2)) : -1;
            if (i < 0 || of < 2 || of > Shard.MAX_COUNT || i >= of) {
                pg.problem(pg.key("shard"), "must be i/N, this process's shard of N (2 to " + Shard.MAX_COUNT
                        + "), numbered from 0: 0/4 to 3/4 (was \"" + only.get() + "\")");
            } else if (pg.raw("shards").isPresent() && count != of) {
                pg.problem(pg.key("shard"), "says " + of + " shards but source.postgres.shards says " + count + " (set one of them)");
            } else {
                count = of;
                runs = List.of(i);
            }
        }
        if (count > 1) {
            String key = pg.key(only.isPresent() ? "shard" : "shards");
            if (kind.isBinlog()) {
                pg.problem(key, "shards split a Postgres outbox over several replication slots; a " + ConfigNode.lower(kind)
                        + " source reads one binlog stream (remove it)");
            }
            if (messagePrefix != null) {
                // A publication's row filter splits table rows; every slot receives every logical decoding message.
                pg.problem(key, "shards split outbox tables by a publication row filter, which logical decoding messages do not "
                        + "pass through (every shard would receive every message): run messages unsharded (remove it, or "
                        + "source.postgres.messages.prefix)");
            }
            var longest = List.of(Shard.routerName(routerName, count - 1, count), slot + Shard.suffix(count - 1, count),
                    publication + Shard.suffix(count - 1, count));
            if (longest.stream().anyMatch(l -> l.length() > 63)) {
                pg.problem(key, "with " + count + " shards the names grow past Postgres's 63 characters (" + String.join(", ", longest)
                        + "): choose a shorter name, source.postgres.slot or source.postgres.publication");
            }
        }
        var binlog = n.child("binlog");
        // A stable id per router name, in a range replicas rarely use; configurable when it collides.
        long defaultServerId = 184_000 + Math.floorMod(routerName.hashCode(), 100_000);
        long serverId = binlog.integer("server-id", (int) defaultServerId, 1, Integer.MAX_VALUE);
        var snapshot = n.choice("snapshot", SnapshotMode.class, SnapshotMode.NONE);
        Duration poll = n.duration("poll-interval", RouterConfigLoader.storesEveryBatch(kind, delivery)
                ? RouterConfigLoader.DEFAULT_POLL_INTERVAL_STORING_EVERY_BATCH : RouterConfigLoader.DEFAULT_POLL_INTERVAL);
        if (poll.toMillis() < 1 || poll.toMinutes() > 1) {
            n.problem(n.key("poll-interval"), "must be between 1ms and 1m (was \"" + Durations.format(poll) + "\")");
        }
        int batch = n.integer("max-batch-size", 2048, 1, 65536);
        return new SourceConfig(kind, new JdbcConnection(url, user, password), address, tables,
                new PostgresSource(slot, publication, heartbeat, heartbeatTable, count, runs, null, messagePrefix),
                new BinlogSource(serverId), snapshot, poll, batch);
    }
}
