package io.outboxrouter.testing;

/**
 * One Postgres and one Kafka broker per test JVM, started on first use and stopped when the JVM exits.
 * Tests isolate themselves with their own database ({@link PostgresServer#createDatabase}) and topic names.
 */
public final class TestServers {
    private static PostgresServer postgres;
    private static KafkaBroker kafka;

    private TestServers() {
    }

    public static synchronized PostgresServer postgres() {
        if (postgres == null) {
            postgres = PostgresServer.start();
            Runtime.getRuntime().addShutdownHook(new Thread(postgres::close, "stop-test-postgres"));
        }
        return postgres;
    }

    public static synchronized KafkaBroker kafka() {
        if (kafka == null) {
            kafka = KafkaBroker.start();
            Runtime.getRuntime().addShutdownHook(new Thread(kafka::close, "stop-test-kafka"));
        }
        return kafka;
    }
}
