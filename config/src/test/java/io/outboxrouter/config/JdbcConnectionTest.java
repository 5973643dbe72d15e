package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class JdbcConnectionTest {
    @Test
    void aUrlIsPrintedWithItsSecretsHiddenAndItsTlsSettingsReadable() {
        var c = new JdbcConnection("jdbc:mariadb://db:3306/app?sslMode=verify-full&trustStore=/ts.p12&trustStorePassword=hunter2"
                + "&user=u;keyStorePassword=k3y&clientSecret=s", "u", Secret.of("p"));
        assertThat(c.redactedUrl()).isEqualTo("jdbc:mariadb://db:3306/app?sslMode=verify-full&trustStore=/ts.p12&trustStorePassword=…"
                + "&user=…;keyStorePassword=…&clientSecret=…").doesNotContain("hunter2", "k3y");
        assertThat(new JdbcConnection("jdbc:postgresql://db/app?sslmode=verify-full&sslpassword=x", "u", Secret.of("p")).redactedUrl())
                .isEqualTo("jdbc:postgresql://db/app?sslmode=verify-full&sslpassword=…");
        assertThat(new JdbcConnection("jdbc:postgresql://db/app", "u", Secret.of("p")).redactedUrl()).isEqualTo("jdbc:postgresql://db/app");
    }
}
