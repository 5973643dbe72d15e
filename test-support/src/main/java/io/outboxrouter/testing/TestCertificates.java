package io.outboxrouter.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A certificate authority of the test's own and certificates it signs, made with the JDK's {@code keytool} into a
 * directory of the test: nothing is checked in, and every run has fresh keys. Each certificate is written as a PKCS#12
 * keystore (for Java clients and Kafka), as a PEM certificate and a PEM private key (for Postgres and MariaDB), and as a
 * PKCS#8 DER key (pgjdbc's client key format).
 */
public final class TestCertificates {
    /** The password of every keystore, truststore and key made here. */
    public static final String PASSWORD = "test-store-secret";

    private final Path dir;

    private TestCertificates(Path dir) {
        this.dir = dir;
    }

    /** A new authority in {@code dir}: {@code ca.p12}, {@code ca.pem} and the truststore {@code truststore.p12}. */
    public static TestCertificates authority(Path dir) {
        var certs = new TestCertificates(dir);
        try {
            Files.createDirectories(dir);
            certs.keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=outbox-router test CA",
                    "-ext", "bc:c", "-validity", "3", "-keystore", certs.path("ca.p12"), "-storetype", "PKCS12", "-storepass", PASSWORD);
            certs.keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", certs.path("ca.p12"), "-storepass", PASSWORD,
                    "-file", certs.path("ca.pem"));
            certs.keytool("-importcert", "-noprompt", "-alias", "ca", "-file", certs.path("ca.pem"), "-keystore",
                    certs.path("truststore.p12"), "-storetype", "PKCS12", "-storepass", PASSWORD);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return certs;
    }

    /** The authority's certificate, PEM: what a client is told to trust ({@code sslrootcert}, {@code ssl-ca}). */
    public Path caPem() {
        return dir.resolve("ca.pem");
    }

    /** A PKCS#12 truststore holding the authority's certificate ({@link #PASSWORD}). */
    public Path truststore() {
        return dir.resolve("truststore.p12");
    }

    /** A certificate of {@code name}, signed by this authority. */
    public record Issued(Path keystore, Path certPem, Path keyPem, Path keyPk8) {
    }

    /** A server certificate for {@code localhost} and {@code 127.0.0.1}, with common name {@code cn}. */
    public Issued server(String cn) {
        return issue(cn, "SAN=dns:localhost,ip:127.0.0.1", "EKU=serverAuth,clientAuth");
    }

    /** A client certificate with common name {@code cn}: the user name Postgres's {@code cert} check and Kafka's principal see. */
    public Issued client(String cn) {
        return issue(cn, null, "EKU=clientAuth");
    }

    private Issued issue(String cn, String san, String eku) {
        try {
            String store = path(cn + ".p12");
            keytool("-genkeypair", "-alias", "key", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=" + cn, "-validity", "3",
                    "-keystore", store, "-storetype", "PKCS12", "-storepass", PASSWORD);
            keytool("-certreq", "-alias", "key", "-keystore", store, "-storepass", PASSWORD, "-file", path(cn + ".csr"));
            var gencert = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", "ca", "-keystore", path("ca.p12"), "-storepass",
                    PASSWORD, "-infile", path(cn + ".csr"), "-outfile", path(cn + ".pem"), "-validity", "3", "-ext", eku));
            if (san != null) {
                gencert.addAll(List.of("-ext", san));
            }
            keytool(gencert.toArray(String[]::new));
            keytool("-importcert", "-noprompt", "-alias", "ca", "-file", path("ca.pem"), "-keystore", store, "-storepass", PASSWORD);
            keytool("-importcert", "-noprompt", "-alias", "key", "-file", path(cn + ".pem"), "-keystore", store, "-storepass", PASSWORD);
            byte[] pkcs8 = privateKey(Path.of(store));
            var keyPem = dir.resolve(cn + ".key");
            var keyPk8 = dir.resolve(cn + ".pk8");
            Files.writeString(keyPem, "-----BEGIN PRIVATE KEY-----\n"
                    + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(pkcs8) + "\n-----END PRIVATE KEY-----\n");
            Files.write(keyPk8, pkcs8);
            for (var key : List.of(keyPem, keyPk8)) {
                Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------")); // Postgres and pgjdbc insist
            }
            return new Issued(Path.of(store), dir.resolve(cn + ".pem"), keyPem, keyPk8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static byte[] privateKey(Path keystore) throws IOException {
        try (InputStream in = Files.newInputStream(keystore)) {
            var ks = KeyStore.getInstance("PKCS12");
            ks.load(in, PASSWORD.toCharArray());
            return ks.getKey("key", PASSWORD.toCharArray()).getEncoded();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("reading the key just made in " + keystore, e);
        }
    }

    private String path(String name) {
        return dir.resolve(name).toString();
    }

    private void keytool(String... args) throws IOException {
        var cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "keytool").toString()));
        cmd.addAll(List.of(args));
        var process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(process.getInputStream().readAllBytes());
            if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IllegalStateException("keytool " + String.join(" ", args) + " failed:\n" + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
