package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceKind;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The TLS settings written in {@code source.url}, given to Debezium's connector as its own keys: the connector connects
 * from host, port, user and password and never reads the URL, so without this a URL that asks for {@code verify-full}
 * would have the router's JDBC connections verified and the replication stream not. Keys given under {@code debezium.*}
 * are applied after these and win.
 */
final class SourceTls {
    private SourceTls() {
    }

    /** Debezium's TLS keys for what the URL asks; empty when it asks for nothing. */
    static Map<String, String> connectorProperties(SourceKind kind, String url) {
        var params = parameters(url);
        var out = new LinkedHashMap<String, String>();
        if (url.startsWith("jdbc:postgresql:")) {
            String mode = params.get("sslmode");
            if (mode == null && "true".equalsIgnoreCase(params.get("ssl"))) {
                mode = "verify-full"; // pgjdbc: ssl=true without a mode verifies the certificate and the host
            }
            put(out, "database.sslmode", mode);
            for (String key : new String[] {"sslrootcert", "sslcert", "sslkey", "sslpassword", "sslfactory"}) {
                put(out, "database." + key, params.get(key));
            }
            return out;
        }
        Mode mode;
        String truststore;
        String truststorePassword;
        String keystore;
        String keystorePassword;
        if (url.startsWith("jdbc:mariadb:")) {
            mode = switch (lower(params.get("sslMode"))) {
                case "disable" -> Mode.DISABLED;
                case "trust" -> Mode.REQUIRED;
                case "verify-ca" -> Mode.VERIFY_CA;
                case "verify-full" -> Mode.VERIFY_FULL;
                default -> null;
            };
            if (params.containsKey("serverSslCert")) {
                throw new SourceSetupException("source.url gives the server's certificate as serverSslCert, which Debezium's "
                        + kind.name().toLowerCase(Locale.ROOT) + " connector cannot read: put it in a truststore (keytool -importcert "
                        + "-file <cert> -keystore truststore.p12) and give it as trustStore=<path>&trustStorePassword=<password> in "
                        + "source.url, or as debezium.database.ssl.truststore and debezium.database.ssl.truststore.password", null);
            }
            truststore = params.get("trustStore");
            truststorePassword = params.get("trustStorePassword");
            keystore = params.get("keyStore");
            keystorePassword = params.get("keyStorePassword");
        } else {
            String sslMode = lower(params.get("sslMode"));
            mode = switch (sslMode) {
                case "disabled" -> Mode.DISABLED;
                case "preferred" -> Mode.PREFERRED;
                case "required" -> Mode.REQUIRED;
                case "verify_ca" -> Mode.VERIFY_CA;
                case "verify_identity" -> Mode.VERIFY_FULL;
                default -> sslMode.isEmpty() && "true".equalsIgnoreCase(params.get("requireSSL")) ? Mode.REQUIRED : null;
            };
            truststore = params.get("trustCertificateKeyStoreUrl");
            truststorePassword = params.get("trustCertificateKeyStorePassword");
            keystore = params.get("clientCertificateKeyStoreUrl");
            keystorePassword = params.get("clientCertificateKeyStorePassword");
        }
        if (mode != null) {
            out.put("database.ssl.mode", kind == SourceKind.MARIADB ? mode.mariadb : mode.mysql);
        }
        put(out, "database.ssl.truststore", path(truststore));
        put(out, "database.ssl.truststore.password", truststorePassword);
        put(out, "database.ssl.keystore", path(keystore));
        put(out, "database.ssl.keystore.password", keystorePassword);
        return out;
    }

    /** The modes both drivers know, with the names Debezium's MySQL and MariaDB connectors give them. */
    private enum Mode {
        DISABLED("disabled", "disable"), PREFERRED("preferred", "trust"), REQUIRED("required", "trust"),
        VERIFY_CA("verify_ca", "verify-ca"), VERIFY_FULL("verify_identity", "verify-full");

        final String mysql;
        final String mariadb;

        Mode(String mysql, String mariadb) {
            this.mysql = mysql;
            this.mariadb = mariadb;
        }
    }

    private static void put(Map<String, String> out, String key, String value) {
        if (value != null && !value.isBlank()) {
            out.put(key, value);
        }
    }

    private static String lower(String value) {
        return value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    }

    /** A keystore named as a {@code file:} URL (Connector/J's form) as the path Debezium reads. */
    private static String path(String location) {
        if (location == null) {
            return null;
        }
        return location.startsWith("file://") ? location.substring("file://".length())
                : location.startsWith("file:") ? location.substring("file:".length()) : location;
    }

    /** The URL's query parameters, decoded; the drivers also take {@code ;} between them after the first {@code ?}. */
    static Map<String, String> parameters(String url) {
        var out = new LinkedHashMap<String, String>();
        int q = url.indexOf('?');
        if (q < 0) {
            return out;
        }
        for (String pair : url.substring(q + 1).split("[&;]")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                out.put(URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return out;
    }
}
