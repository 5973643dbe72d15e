package io.outboxrouter.cdc;

import io.debezium.connector.mariadb.MariaDbConnector;
import io.debezium.connector.mariadb.MariaDbConnectorTask;
import io.debezium.connector.mysql.MySqlConnector;
import io.debezium.connector.mysql.MySqlConnectorTask;
import io.debezium.connector.postgresql.PostgresConnector;
import io.debezium.connector.postgresql.PostgresConnectorTask;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;

/**
 * Debezium's connectors as the engine runs them: each task is Debezium's own, wrapped so that its polling thread waits
 * in an {@link IdleGate} rather than in Debezium's queue while the stream is quiet. The tasks' configuration names
 * Debezium's connector class again, which the connector matches when it picks its snapshot implementations. The engine's
 * own signaller ({@code DebeziumEngine.getSignaler()}) looks for Debezium's task class and finds none, so the router does
 * not use it; the connector's signal channels (a signal table, Kafka) are the task's own and unchanged.
 */
public final class QuietConnectors {
    /** The property that carries the pattern of the engine's streaming metrics bean, which the gate reads. */
    static final String STREAMING_METRICS_PROPERTY = "outbox.engine.streaming-metrics";

    private QuietConnectors() {
    }

    /** Postgres. */
    public static final class Postgres extends PostgresConnector {
        @Override
        public Class<? extends Task> taskClass() {
            return PostgresTask.class;
        }

        @Override
        public List<Map<String, String>> taskConfigs(int maxTasks) {
            return asDebezium(super.taskConfigs(maxTasks), PostgresConnector.class);
        }
    }

    /** MySQL. */
    public static final class MySql extends MySqlConnector {
        @Override
        public Class<? extends Task> taskClass() {
            return MySqlTask.class;
        }

        @Override
        public List<Map<String, String>> taskConfigs(int maxTasks) {
            return asDebezium(super.taskConfigs(maxTasks), MySqlConnector.class);
        }
    }

    /** MariaDB. */
    public static final class MariaDb extends MariaDbConnector {
        @Override
        public Class<? extends Task> taskClass() {
            return MariaDbTask.class;
        }

        @Override
        public List<Map<String, String>> taskConfigs(int maxTasks) {
            return asDebezium(super.taskConfigs(maxTasks), MariaDbConnector.class);
        }
    }

    /** Postgres's task. */
    public static final class PostgresTask extends Quiet {
        public PostgresTask() {
            super(new PostgresConnectorTask());
        }
    }

    /** MySQL's task. */
    public static final class MySqlTask extends Quiet {
        public MySqlTask() {
            super(new MySqlConnectorTask());
        }
    }

    /** MariaDB's task. */
    public static final class MariaDbTask extends Quiet {
        public MariaDbTask() {
            super(new MariaDbConnectorTask());
        }
    }

    private static List<Map<String, String>> asDebezium(List<Map<String, String>> configs, Class<?> connector) {
        return configs.stream().map(c -> {
            var copy = new HashMap<>(c);
            copy.put("connector.class", connector.getName());
            return (Map<String, String>) copy;
        }).toList();
    }

    /** A Debezium task, polled through an {@link IdleGate}; everything else is the task's own. */
    abstract static class Quiet extends SourceTask {
        private final SourceTask task;
        private volatile IdleGate gate = new IdleGate(null);

        Quiet(SourceTask task) {
            this.task = task;
        }

        @Override
        public String version() {
            return task.version();
        }

        @Override
        public void initialize(SourceTaskContext context) {
            super.initialize(context);
            task.initialize(context);
        }

        @Override
        public void start(Map<String, String> props) {
            gate = new IdleGate(pattern(props.get(STREAMING_METRICS_PROPERTY)));
            task.start(props);
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            gate.awaitWork();
            var records = task.poll();
            gate.polled(records);
            return records;
        }

        @Override
        public void commit() throws InterruptedException {
            task.commit();
            gate.commitRequested();
        }

        @Override
        public void commitRecord(SourceRecord record, RecordMetadata metadata) throws InterruptedException {
            task.commitRecord(record, metadata);
        }

        @Override
        public void stop() {
            task.stop();
        }

        private static ObjectName pattern(String value) {
            if (value == null || value.isBlank()) {
                return null;
            }
            try {
                return new ObjectName(value);
            } catch (MalformedObjectNameException e) {
                throw new IllegalStateException(e); // the engine sets it from a bean name of its own
            }
        }
    }
}
