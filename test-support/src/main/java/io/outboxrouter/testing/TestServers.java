package io.outboxrouter.testing;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * One Postgres, one MariaDB and one Kafka broker per test JVM, started on first use. They are stopped in order when the JUnit
 * launcher session closes (registered as a {@link LauncherSessionListener}), while the JVM is still fully alive:
 * stopping them from shutdown hooks raced with embedded Postgres's own hook and could fail the test JVM's exit.
 * Tests isolate themselves with their own database ({@link PostgresServer#createDatabase}) and topic names.
 */
public final class TestServers implements LauncherSessionListener {
    private static PostgresServer postgres;
    private static KafkaBroker kafka;
    private static MariaDbServer mariadb;

    /** Instantiated by the JUnit Platform through ServiceLoader. */
    public TestServers() {
    }

    public static synchronized PostgresServer postgres() {
        if (postgres == null) {
            postgres = PostgresServer.start();
        }
        return postgres;
    }

    public static synchronized MariaDbServer mariadb() {
        if (mariadb == null) {
            mariadb = MariaDbServer.start();
        }
        return mariadb;
    }

    public static synchronized KafkaBroker kafka() {
        if (kafka == null) {
            kafka = KafkaBroker.start();
        }
        return kafka;
    }

    @Override
    public void launcherSessionClosed(LauncherSession session) {
        stopAll();
    }

    static synchronized void stopAll() {
        if (kafka != null) {
            try {
                kafka.close();
            } catch (RuntimeException e) {
                System.err.println("test Kafka broker did not stop cleanly: " + e);
            }
            kafka = null;
        }
        if (postgres != null) {
            postgres.close();
            postgres = null;
        }
        if (mariadb != null) {
            mariadb.close();
            mariadb = null;
        }
    }
}
