package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.config.SourceKind;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SourceTlsTest {
    @Test
    void aPostgresUrlsTlsSettingsReachTheConnector() {
        assertThat(SourceTls.connectorProperties(SourceKind.POSTGRES, "jdbc:postgresql://db:5432/app?sslmode=verify-full&sslrootcert=/etc/ca%20bundle.pem&sslcert=/c.pem&sslkey=/k.pk8", Map.of()))
                .containsExactly(Map.entry("database.sslmode", "verify-full"), Map.entry("database.sslrootcert", "/etc/ca bundle.pem"),
                        Map.entry("database.sslcert", "/c.pem"), Map.entry("database.sslkey", "/k.pk8"));
        assertThat(SourceTls.connectorProperties(SourceKind.POSTGRES, "jdbc:postgresql://db/app?ssl=true", Map.of()))
                .as("pgjdbc's ssl=true verifies").containsExactly(Map.entry("database.sslmode", "verify-full"));
        assertThat(SourceTls.connectorProperties(SourceKind.POSTGRES, "jdbc:postgresql://db/app", Map.of())).isEmpty();
    }

    @Test
    void connectorJsAndMariaDbsDriverSettingsAreGivenInEachConnectorsWords() {
        String mysql = "jdbc:mysql://db:3306/app?sslMode=VERIFY_IDENTITY&trustCertificateKeyStoreUrl=file:/etc/ts.p12"
                + "&trustCertificateKeyStorePassword=changeit";
        assertThat(SourceTls.connectorProperties(SourceKind.MYSQL, mysql, Map.of())).containsExactly(Map.entry("database.ssl.mode", "verify_identity"),
                Map.entry("database.ssl.truststore", "/etc/ts.p12"), Map.entry("database.ssl.truststore.password", "changeit"));
        assertThat(SourceTls.connectorProperties(SourceKind.MARIADB, mysql, Map.of())).containsEntry("database.ssl.mode", "verify-full");
        String mariadb = "jdbc:mariadb://db:3306/app?sslMode=verify-ca&trustStore=/etc/ts.p12&trustStorePassword=changeit";
        assertThat(SourceTls.connectorProperties(SourceKind.MARIADB, mariadb, Map.of())).containsExactly(Map.entry("database.ssl.mode", "verify-ca"),
                Map.entry("database.ssl.truststore", "/etc/ts.p12"), Map.entry("database.ssl.truststore.password", "changeit"));
        assertThat(SourceTls.connectorProperties(SourceKind.MYSQL, "jdbc:mariadb://db/app?sslMode=trust", Map.of()))
                .containsExactly(Map.entry("database.ssl.mode", "required"));
        assertThat(SourceTls.connectorProperties(SourceKind.MARIADB, "jdbc:mariadb://db/app", Map.of())).isEmpty();
    }

    @Test
    void theDriversOtherSpellingsAreReadAndAnUnknownOneIsRefusedUnlessTheConnectorIsToldDirectly() {
        assertThat(SourceTls.connectorProperties(SourceKind.MARIADB, "jdbc:mariadb://db/app?SSLMODE=VERIFY_IDENTITY", Map.of()))
                .containsExactly(Map.entry("database.ssl.mode", "verify-full"));
        assertThat(SourceTls.connectorProperties(SourceKind.MARIADB, "jdbc:mariadb://db/app?useSsl=true", Map.of()))
                .as("the driver's older switch verifies").containsExactly(Map.entry("database.ssl.mode", "verify-full"));
        assertThat(SourceTls.connectorProperties(SourceKind.MYSQL, "jdbc:mysql://db/app?useSSL=true&verifyServerCertificate=true", Map.of()))
                .containsExactly(Map.entry("database.ssl.mode", "verify_ca"));
        assertThat(SourceTls.connectorProperties(SourceKind.MYSQL, "jdbc:mysql://db/app?sslmode=required", Map.of()))
                .containsExactly(Map.entry("database.ssl.mode", "required"));
        assertThat(SourceTls.connectorProperties(SourceKind.POSTGRES, "jdbc:postgresql://db/app?ssl", Map.of()))
                .containsExactly(Map.entry("database.sslmode", "verify-full"));
        assertThat(SourceTls.connectorProperties(SourceKind.POSTGRES, "jdbc:postgresql://db/app?ssl=false", Map.of())).isEmpty();
        assertThatThrownBy(() -> SourceTls.connectorProperties(SourceKind.MYSQL, "jdbc:mysql://db/app?sslMode=STRICT", Map.of()))
                .isInstanceOf(SourceSetupException.class).hasMessageContaining("sslMode=STRICT").hasMessageContaining("debezium.database.ssl.mode");
        assertThat(SourceTls.connectorProperties(SourceKind.POSTGRES, "jdbc:postgresql://db/app?sslmode=strict",
                Map.of("database.sslmode", "verify-full"))).doesNotContainKey("database.sslmode");
    }

    @Test
    void aPemCertificateTheConnectorCannotReadIsRefusedWithTheFix() {
        assertThatThrownBy(() -> SourceTls.connectorProperties(SourceKind.MARIADB, "jdbc:mariadb://db/app?sslMode=verify-full&serverSslCert=/ca.pem", Map.of()))
                .isInstanceOf(SourceSetupException.class).hasMessageContaining("serverSslCert").hasMessageContaining("truststore");
    }

    @Test
    void theConnectorGetsThemAndAnExplicitDebeziumKeyWins() {
        var config = RouterConfigLoader.parse("""
                name: orders
                source: { url: "jdbc:postgresql://db:5432/app?sslmode=verify-full&sslrootcert=/ca.pem", user: u, password: p, tables: [public.outbox] }
                kafka: { bootstrap-servers: "k:9092" }
                """, Map.of());
        var p = ConnectorProperties.of(config);
        assertThat(p.getProperty("database.sslmode")).isEqualTo("verify-full");
        assertThat(p.getProperty("database.sslrootcert")).isEqualTo("/ca.pem");
        var overridden = RouterConfigLoader.parse("""
                name: orders
                source: { url: "jdbc:postgresql://db:5432/app?sslmode=verify-full", user: u, password: p, tables: [public.outbox] }
                kafka: { bootstrap-servers: "k:9092" }
                debezium: { database.sslmode: require }
                """, Map.of());
        assertThat(ConnectorProperties.of(overridden).getProperty("database.sslmode")).isEqualTo("require");
    }
}
