package io.outboxrouter.offsets;

import static org.assertj.core.api.Assertions.assertThat;

import java.security.cert.CertPathValidatorException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

/** Which failures of the offsets database are tried again: outages are, what the next try would meet again is not. */
class JdbcStoreTransientTest {
    @Test
    void aLostConnectionIsTriedAgain() {
        var pool = new SQLTransientConnectionException("Connection is not available, request timed out after 5000ms",
                new SQLException("Connection refused", "08001"));
        assertThat(JdbcStore.isTransient(pool)).isTrue();
    }

    @Test
    void badCredentialsAndAnUntrustedCertificateAreNot() {
        assertThat(JdbcStore.isTransient(new SQLTransientConnectionException("pool", new SQLException("password authentication failed", "28P01"))))
                .isFalse();
        var handshake = new SSLHandshakeException("PKIX path validation failed");
        handshake.initCause(new CertPathValidatorException("signature check failed"));
        var refused = new SQLException("SSL error: PKIX path validation failed", "08006", handshake);
        assertThat(JdbcStore.isTransient(new SQLTransientConnectionException("Connection is not available", refused))).isFalse();
        var plain = new SQLException("Connections using insecure transport are prohibited while --require_secure_transport=ON.", "08004");
        assertThat(JdbcStore.isTransient(new SQLTransientConnectionException("Connection is not available", plain))).isFalse();
    }
}
