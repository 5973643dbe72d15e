package io.outboxrouter.cdc;

import java.util.Properties;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.connect.data.Struct;

/** How the engine reads a source: the connector's settings, its metrics, positions as people read them, transaction ends, drains. */
public interface SourceConnector {

    /** Adds the connector properties of this kind to the common ones. */
    void addConnectorProperties(Properties p);

    /** The JMX domain of the connector's metrics, e.g. {@code debezium.postgres}. */
    String metricsDomain();

    /**
     * The pattern of one engine run's streaming metrics bean (its {@code Connected} attribute says whether the stream is
     * open), whatever other tags the user gives the connector's beans; {@link #registered} finds it.
     */
    default ObjectName streamingMetrics(String routerName, String run) {
        try {
            return new ObjectName(metricsDomain() + ":type=connector-metrics,context=streaming," + CdcEngine.RUN_TAG + "=" + run + ",*");
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException("router " + routerName + "'s engine run " + run + " cannot name a metrics bean", e);
        }
    }

    /** The bean registered under {@code pattern}; null before the connector registered it. */
    static ObjectName registered(ObjectName pattern) {
        var names = java.lang.management.ManagementFactory.getPlatformMBeanServer().queryNames(pattern, null);
        return names.isEmpty() ? null : names.iterator().next();
    }

    /** A change record's {@code source} block as a position people can read, e.g. {@code lsn:0/16B3748}. */
    String position(Struct source);

    /** How {@code run --once} knows that everything committed before now is published and stored. */
    Drain newDrain(EngineProgress progress, ObjectName streamingMetrics);

    /** What the stream reads from, for log lines: {@code slot orders_router}, {@code binlog}. */
    String describe();

    /**
     * How the engine finds transaction ends in the connector's records, and which position it stores there; see
     * {@link TransactionBoundaries}. The connector gets transaction metadata unless this is {@link TransactionBoundaries.Mode#POSTGRES}.
     */
    default TransactionBoundaries.Mode boundaries() {
        return TransactionBoundaries.Mode.BINLOG;
    }
}
