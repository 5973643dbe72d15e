package io.outboxrouter.config;

import java.util.List;

/**
 * The configuration reference: one line per key, rendered into docs/configuration.md. A test checks that these keys are
 * exactly the keys the loader reads, and that the page holds this table, so the two cannot drift apart.
 */
public final class ConfigReference {

    /** @param key a key, or a pass-through map as {@code prefix.*} */
    record Entry(String key, String defaultValue, String meaning) {
    }

    static final List<Entry> ENTRIES = List.of(
            new Entry("name", "required", "router name, `[a-z0-9][a-z0-9_-]*`: names the offset rows, the default slot and publication, the engine"),
            new Entry("source.kind", "`postgres`", "`postgres`, `mariadb` or `mysql`"),
            new Entry("source.url", "required", "`jdbc:postgresql://host:5432/db`, `jdbc:mariadb://host:3306/db` or `jdbc:mysql://host:3306/db`. "
                    + "Postgres may name several hosts (`jdbc:postgresql://a:5432,b:5432/db`): the router uses the primary among them, "
                    + "found again at every start (`targetServerType=primary` is added)"),
            new Entry("source.user", "required", "Postgres: a role with `REPLICATION LOGIN` and `SELECT` on the outbox tables; "
                    + "MySQL/MariaDB: a user with `SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT`"),
            new Entry("source.password", "empty", "its password (`${VAR}` reads the environment)"),
            new Entry("source.password-file", "", "or a file holding the password (Docker/Kubernetes secrets)"),
            new Entry("source.tables", "`[public.outbox]`; MySQL/MariaDB: `[<database>.outbox]`", "qualified outbox tables; all use the column names below (none needed with `source.postgres.messages.prefix`)"),
            new Entry("source.postgres.slot", "name, `-` as `_`", "replication slot, created on first start"),
            new Entry("source.postgres.publication", "name, `-` as `_`", "publication; created with only `source.tables` when missing, used as it is when it exists"),
            new Entry("source.postgres.heartbeat-interval", "`0s` (off)", "how often the router writes a heartbeat row, e.g. `10s`: on Postgres 13 and older, so that a quiet outbox on a busy database does not pin WAL (from 14 on the router's heartbeat message does that with no setting)"),
            new Entry("source.postgres.heartbeat-table", "`public.outbox_router_heartbeat`", "the heartbeat row's table: created when missing, and it must be in the publication (added when the router creates it)"),
            new Entry("source.postgres.shards", "`1`", "Postgres 15+: split the outbox over this many replication slots by a hash of the aggregate id (each shard its own slot `<slot>_shard_<i>_of_<N>`, publication, offsets, lock and engine thread, in this process); order per aggregate is kept. See Sharding"),
            new Entry("source.postgres.shard", "all", "`i/N`: run only shard i (from 0) of N in this process, for one process per shard"),
            new Entry("source.postgres.messages.prefix", "none", "Postgres 14+: also route transactional logical decoding messages with this prefix (`pg_logical_emit_message(true, '<prefix>', '<json>')`, or the `outbox_emit` function `schema` prints): a tableless outbox; `source.tables` then defaults to none. See Tableless outbox"),
            new Entry("source.binlog.server-id", "derived from name", "MySQL/MariaDB: the replica id the router connects with; unique among the server's replicas"),
            new Entry("source.snapshot", "`none`", "`none`: rows committed after the slot exists; `initial`: also the rows already in the table at first start "
                    + "(Postgres: not when the slot exists without a stored position, which resumes from the slot so that nothing it "
                    + "holds is skipped)"),
            new Entry("source.poll-interval", "`5ms` on Postgres, `10ms` on MySQL/MariaDB and with exactly-once", "how long the connector waits for more changes before handing over a batch: the longest an event waits for its batch while events trickle in. Where every batch also stores a position or commits a Kafka transaction the default is longer, for fewer of those writes a second"),
            new Entry("source.max-batch-size", "`2048`", "most changes per batch"),
            new Entry("outbox.columns.id", "`id`", "event id column: the `id` header, for consumer de-duplication"),
            new Entry("outbox.columns.aggregate-type", "`aggregatetype`", "aggregate type column: `${aggregatetype}` in the topic template"),
            new Entry("outbox.columns.aggregate-id", "`aggregateid`", "aggregate id column: the record key"),
            new Entry("outbox.columns.type", "`type`", "event type column: the `type` header"),
            new Entry("outbox.columns.payload", "`payload`", "payload column: the record value, bytes as stored"),
            new Entry("outbox.payload-format", "`bytes`", "`bytes`: payloads published as stored, unchecked; `json`: a payload that is not one valid JSON document is dead-lettered (`invalid_json`)"),
            new Entry("outbox.retention", "`0` (off)", "delete outbox rows older than this (e.g. `7d`), only those the self-audit proved published and whose position is stored, in small batches off the publishing path. See Outbox retention"),
            new Entry("outbox.retention-time-column", "`created_at`", "the column that dates a row (its insert time) for `outbox.retention` and `outbox.audit`"),
            new Entry("outbox.audit.enabled", "`true`", "the running self-audit: the outbox rows committed are matched with the events the stream delivered, and a row it passed without delivering stops the router (or is published again). See Self-audit"),
            new Entry("outbox.audit.interval", "`10s`", "how often the audit reads the newly committed rows"),
            new Entry("outbox.audit.lag", "`1m`", "how old a row (by `outbox.retention-time-column`) must be before the audit reads it: a transaction open longer than this before its commit is not audited"),
            new Entry("outbox.audit.on-loss", "`stop`", "`stop`: the router stops, naming the rows and how to publish them again; `replay`: they are published again at once (header `replayed=true`), counted and logged"),
            new Entry("outbox.retention-batch-size", "`1000`", "rows deleted per statement; each batch is followed by a pause as long as it took"),
            new Entry("outbox.headers.*", "none", "`column: header-name` pairs: more columns sent as Kafka headers"),
            new Entry("routing.topic", "`outbox.event.${aggregatetype}`", "topic template: `${id}`, `${aggregatetype}`, `${aggregateid}`, `${type}`, or any column named under `outbox.columns` or `outbox.headers`"),
            new Entry("routing.event-router.*", "none", "Debezium's outbox EventRouter options under Debezium's names (`route.topic.replacement`, `table.field.event.key`, `table.fields.additional.placement`, ...): records made and serialised as Debezium Server makes them, in place of `outbox.columns`, `outbox.headers` and `routing.topic` ([migrating-from-debezium.md](migrating-from-debezium.md))"),
            new Entry("routing.format.key", "`json`", "with `routing.event-router`: how keys become bytes, as Debezium Server's `debezium.format.key`: `json` (with schemas), `schemaless-json`, `string` or `bytes`"),
            new Entry("routing.format.value", "`json`", "with `routing.event-router`: the same for values"),
            new Entry("routing.format.header", "`json`", "with `routing.event-router`: the same for headers"),
            new Entry("routing.dead-letters.policy", "`dead-letter`", "for rows that cannot become events: `dead-letter`, `fail`, `skip` "
                    + "or `park-aggregate` (dead-letter the row and hold its aggregate's later events until released: see "
                    + "[parking](parking.md))"),
            new Entry("routing.dead-letters.topic", "`outbox.dead-letters`", "the dead-letter topic"),
            new Entry("routing.dead-letters.parking-topic", "`outbox.parked.<name>`", "where a parked aggregate's events are held, in "
                    + "order, until released (created with unlimited retention when missing); one per router"),
            new Entry("routing.dead-letters.keep-ended-parks", "`1h`", "how long the records of a released or dropped park stay in the "
                    + "parking topic before the router deletes them (`0s`: for good); an active park's records are never deleted "
                    + "([parking.md](parking.md#the-parking-topic))"),
            new Entry("routing.envelope", "`none`", "`none` (the payload is the record's value) or `cloudevents`: each event a CloudEvent 1.0 in the Kafka protocol binding ([cloudevents.md](cloudevents.md))"),
            new Entry("routing.cloudevents.mode", "`binary`", "with `routing.envelope: cloudevents`: `binary` (the payload as the value, the attributes as `ce_*` headers) or `structured` (one `application/cloudevents+json` envelope as the value)"),
            new Entry("routing.cloudevents.source", "`/outbox/${aggregatetype}`", "with `routing.envelope: cloudevents`: the `source` attribute, a template of the row's columns as `routing.topic`"),
            new Entry("delivery", "`at-least-once`", "`at-least-once`: consumers de-duplicate on the `id` header after a crash; `exactly-once`: Kafka transactions, each event once for consumers reading `read_committed` (see Exactly-once delivery)"),
            new Entry("kafka.bootstrap-servers", "required", "Kafka brokers, `host:port,...`"),
            new Entry("kafka.producer.*", "", "producer properties passed through (security, compression, ...); `acks` and `enable.idempotence` cannot be weakened; `partitioner.class` and `partitioner.ignore.keys` are refused (order per aggregate depends on partitioning by key), `transactional.id` too (exactly-once sets it from the name)"),
            new Entry("kafka.offsets-topic", "`outbox-router.<name>.offsets`", "exactly-once: the compacted topic the source position is committed to with the records (created when missing)"),
            new Entry("kafka.give-up-after", "`5m`", "how long a failing batch is retried before the router stops; `0` retries forever"),
            new Entry("offsets.table", "`outbox_router_offsets`", "offsets table, created when missing; may be schema-qualified"),
            new Entry("offsets.schema-history-table", "`outbox_router_schema_history`", "MySQL/MariaDB: the table shapes the binlog reader needs, beside the offsets; created when missing"),
            new Entry("offsets.commit-interval", "`200ms` on Postgres, `0` on MySQL/MariaDB and with exactly-once", "how often the acknowledged position is stored (only ever at a transaction boundary, after Kafka's acks): the first position after a quieter spell at once, then at most this often (what waits is stored with the next batch, and always on a clean stop); a crash sends up to this much again. `0` stores after every batch (fewest duplicates, one offsets-database transaction per batch); `1s` or more suits a distant offsets database. Postgres's connector heartbeat makes a batch every 250 ms while nothing arrives; on the binlog the next batch may be the next change or the 30 s heartbeat"),
            new Entry("offsets.give-up-after", "`10m`", "how long the router waits, with backoff, for the database that holds its lock and offsets (down at start, restarting, its lock session lost) before it stops; `0` waits forever"),
            new Entry("offsets.url", "the source's", "keep offsets in another database (`jdbc:postgresql:`, `jdbc:mysql:`, `jdbc:mariadb:`)"),
            new Entry("offsets.user", "the source's", "its user"),
            new Entry("offsets.password", "the source's", "its password"),
            new Entry("offsets.password-file", "", "or a file holding it"),
            new Entry("http.enabled", "`true`", "serve the health endpoints, `/status`, the status page and `/metrics`"),
            new Entry("http.listen", "`127.0.0.1:8080`", "where to serve them (loopback by default)"),
            new Entry("tracing.enabled", "`false`", "an OpenTelemetry span for each event published, child of the writer's trace when the record carries a `traceparent` header, exported as the standard `OTEL_*` settings say ([delivery.md](delivery.md#trace-context))"),
            new Entry("debezium.*", "", "Debezium connector properties passed through, for the rare setting not modelled here; `provide.transaction.metadata`, `topic.prefix`, `offset.storage*`, `snapshot.mode`, `name` and `connector.class` are refused (the router sets them, or `source.snapshot` does), and on Postgres `heartbeat.interval.ms` and `heartbeat.action.query` (its heartbeat tells where a transaction ended)"));

    private ConfigReference() {
    }

    /** The table of docs/configuration.md: key, environment variable, default, meaning. */
    public static String markdown() {
        var sb = new StringBuilder("| key | environment | default | meaning |\n|---|---|---|---|\n");
        for (Entry e : ENTRIES) {
            String env = e.key().endsWith(".*") ? "" : "`" + ConfigNode.envName(e.key()) + "`";
            sb.append("| `").append(e.key()).append("` | ").append(env).append(" | ").append(e.defaultValue())
                    .append(" | ").append(e.meaning()).append(" |\n");
        }
        return sb.toString();
    }
}
