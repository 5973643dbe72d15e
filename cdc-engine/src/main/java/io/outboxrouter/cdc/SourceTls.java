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

    /**
     * Debezium's TLS keys for what the URL asks; empty when it asks for nothing.
     *
     * @param debezium the {@code debezium.*} keys given: a TLS mode given there is the user's own, and nothing is refused
     * @throws SourceSetupException when the URL asks for TLS in a way the connector cannot be told (an unknown spelling
     *                              would otherwise leave the stream on the connector's weaker default)
     */
    static Map<String, String> connectorProperties(SourceKind kind, String url, Map<String, String> debezium) {
        var params = parameters(url);
        var out = new LinkedHashMap<String, String>();
        if (url.startsWith("jdbc:postgresql:")) {
            String mode = lower(params.get("sslmode"));
            if (mode.isEmpty() && params.containsKey("ssl") && !lower(params.get("ssl")).equals("false")) {
                mode = "verify-full"; // pgjdbc: ssl (or ssl=true) without a mode verifies the certificate and the host
            }
            if (!mode.isEmpty() && !PG_MODES.contains(mode) && !debezium.containsKey("database.sslmode")) {
                throw unmapped("sslmode=" + params.get("sslmode"), "debezium.database.sslmode");
            }
            if (PG_MODES.contains(mode)) {
                out.put("database.sslmode", mode);
            }
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
            String sslMode = lower(params.get("sslmode"));
            boolean legacy = sslMode.isEmpty() && (isTrue(params.get("usessl")) || isTrue(params.get("usetls")));
            mode = legacy ? Mode.VERIFY_FULL : switch (sslMode) {
                case "" -> null;
                case "disable", "disabled", "0", "false" -> Mode.DISABLED;
                case "trust", "required" -> Mode.REQUIRED;
                case "verify-ca", "verify_ca" -> Mode.VERIFY_CA;
                case "verify-full", "verify_full", "verify_identity", "1", "true" -> Mode.VERIFY_FULL;
                default -> throw unmapped("sslMode=" + params.get("sslmode"), "debezium.database.ssl.mode");
            };
            if (params.containsKey("serversslcert") && !debezium.containsKey("database.ssl.truststore")) {
                throw new SourceSetupException("source.url gives the server's certificate as serverSslCert, which Debezium's "
                        + kind.name().toLowerCase(Locale.ROOT) + " connector cannot read: put it in a truststore (keytool -importcert "
                        + "-file <cert> -keystore truststore.p12) and name it in source.url as trustStore=<path> (its password as "
                        + "trustStorePassword), or give debezium.database.ssl.truststore and debezium.database.ssl.truststore.password", null);
            }
            truststore = params.get("truststore");
            truststorePassword = params.get("truststorepassword");
            keystore = params.get("keystore");
            keystorePassword = params.get("keystorepassword");
        } else {
            String sslMode = lower(params.get("sslmode"));
            mode = switch (sslMode) {
                case "disabled" -> Mode.DISABLED;
                case "preferred" -> Mode.PREFERRED;
                case "required" -> Mode.REQUIRED;
                case "verify_ca" -> Mode.VERIFY_CA;
                case "verify_identity" -> Mode.VERIFY_FULL;
                case "" -> legacyConnectorJ(params);
                default -> throw unmapped("sslMode=" + params.get("sslmode"), "debezium.database.ssl.mode");
            };
            truststore = params.get("trustcertificatekeystoreurl");
            truststorePassword = params.get("trustcertificatekeystorepassword");
            keystore = params.get("clientcertificatekeystoreurl");
            keystorePassword = params.get("clientcertificatekeystorepassword");
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

    private static final java.util.Set<String> PG_MODES = java.util.Set.of("disable", "allow", "prefer", "require", "verify-ca",
            "verify-full");

    /** Connector/J's older switches: useSSL, requireSSL and verifyServerCertificate, as that driver reads them. */
    private static Mode legacyConnectorJ(Map<String, String> params) {
        if (!isTrue(params.get("usessl")) && !isTrue(params.get("requiressl"))) {
            return null;
        }
        if (isTrue(params.get("verifyservercertificate"))) {
            return Mode.VERIFY_CA;
        }
        return isTrue(params.get("requiressl")) ? Mode.REQUIRED : Mode.PREFERRED;
    }

    private static boolean isTrue(String value) {
        return value != null && (value.isEmpty() || value.equalsIgnoreCase("true") || value.equals("1") || value.equalsIgnoreCase("yes"));
    }

    private static SourceSetupException unmapped(String setting, String key) {
        return new SourceSetupException("source.url asks for TLS with " + setting + ", which the router cannot give Debezium's connector "
                + "(the replication stream would fall back to the connector's default): write the mode as the driver documents it, "
                + "or set " + key + " yourself", null);
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

    /**
     * The URL's query parameters by lower-cased name (the MySQL and MariaDB drivers read names in any case), decoded; a
     * name without a value maps to an empty string. The drivers also take {@code ;} between them after the first {@code ?}.
     */
    static Map<String, String> parameters(String url) {
        var out = new LinkedHashMap<String, String>();
        int q = url.indexOf('?');
        if (q < 0) {
            return out;
        }
        for (String pair : url.substring(q + 1).split("[&;]")) {
            if (pair.isBlank()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8).toLowerCase(Locale.ROOT);
            out.put(name, eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return out;
    }
}
