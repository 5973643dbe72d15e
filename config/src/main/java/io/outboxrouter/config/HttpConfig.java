package io.outboxrouter.config;

/** The health endpoint. Bound to loopback by default. */
public record HttpConfig(boolean enabled, String host, int port) {
}
