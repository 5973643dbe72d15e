package io.outboxrouter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** Consumers and admin clients take the producer's security settings, config providers included. */
class ClientConfigsTest {
    private static Properties producer() {
        var p = new Properties();
        p.put("bootstrap.servers", "127.0.0.1:9093");
        p.put("security.protocol", "SSL");
        p.put("config.providers", "dir");
        p.put("config.providers.dir.class", "org.apache.kafka.common.config.provider.DirectoryConfigProvider");
        p.put("ssl.keystore.password", "${dir:/run/secrets:keystore-password}");
        p.put("linger.ms", "20");
        return p;
    }

    @Test
    void consumersAndAdminClientsKeepTheConfigProvidersThatResolveASecret() {
        var admin = ClientConfigs.admin(producer());
        assertThat(admin).containsEntry("config.providers", "dir")
                .containsEntry("config.providers.dir.class", "org.apache.kafka.common.config.provider.DirectoryConfigProvider")
                .containsEntry("ssl.keystore.password", "${dir:/run/secrets:keystore-password}")
                .containsEntry("security.protocol", "SSL").doesNotContainKey("linger.ms");
    }

    @Test
    void consumersKeepThemToo() {
        try (var consumer = ClientConfigs.consumer(withoutProviders(), "test-", Map.of())) {
            assertThat(consumer).isNotNull();
        }
        assertThat(ClientConfigs.applies("config.providers.dir.class", java.util.Set.of())).isTrue();
        assertThat(ClientConfigs.applies("linger.ms", org.apache.kafka.clients.consumer.ConsumerConfig.configNames())).isFalse();
    }

    private static Properties withoutProviders() {
        var p = new Properties();
        p.put("bootstrap.servers", "127.0.0.1:9093");
        return p;
    }

    @Test
    void aBootstrapHostThatDoesNotResolveYetIsAnOutageNotASetupError() {
        var settings = Map.<String, Object>of("bootstrap.servers", "no-such-host.invalid:9092");
        assertThatThrownBy(() -> KafkaClients.admin(settings)).isNotInstanceOf(KafkaClients.SetupException.class)
                .satisfies(e -> assertThat(KafkaPublisher.isRetryable(e)).isTrue());
    }

    @Test
    void aClientThatCannotBeMadeSaysWhyAndIsNotRetried() {
        var settings = Map.<String, Object>of("bootstrap.servers", "127.0.0.1:9093", "security.protocol", "SSL",
                "ssl.keystore.location", "/nonexistent/router.p12", "ssl.keystore.password", "x");
        assertThatThrownBy(() -> KafkaClients.admin(settings)).isInstanceOf(KafkaClients.SetupException.class)
                .hasMessageStartingWith("cannot make a Kafka admin client with the kafka.producer settings: ")
                .hasMessageContaining("/nonexistent/router.p12")
                .satisfies(e -> assertThat(KafkaPublisher.isRetryable(e)).isFalse());
    }
}
