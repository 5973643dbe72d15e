package io.outboxrouter.config;

import java.util.List;

/** Every problem found in a configuration, each naming its key; thrown once, after all were collected. */
public final class ConfigException extends RuntimeException {
    private final List<String> problems;

    public ConfigException(List<String> problems) {
        super(format(problems));
        this.problems = List.copyOf(problems);
    }

    public List<String> problems() {
        return problems;
    }

    private static String format(List<String> problems) {
        var sb = new StringBuilder("invalid configuration (")
                .append(problems.size()).append(problems.size() == 1 ? " problem" : " problems").append("):");
        problems.forEach(p -> sb.append(System.lineSeparator()).append("  - ").append(p));
        return sb.toString();
    }
}
