package io.outboxrouter.config;

import java.util.Objects;

/** A password or token. Its {@link #toString()} never shows the value, so it is safe in logs and errors. */
public final class Secret {
    public static final String MASK = "******";
    private final String value;

    private Secret(String value) {
        this.value = Objects.requireNonNull(value, "value");
    }

    public static Secret of(String value) {
        return new Secret(value);
    }

    /** The value, for the one place that hands it to a driver. */
    public String reveal() {
        return value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Secret s && s.value.equals(value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }

    @Override
    public String toString() {
        return MASK;
    }
}
