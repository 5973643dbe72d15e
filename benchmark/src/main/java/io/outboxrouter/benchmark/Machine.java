package io.outboxrouter.benchmark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** One line about the machine, for the results. */
final class Machine {
    static String describe() {
        String cpu = "unknown CPU";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse(cpu);
        } catch (IOException e) {
            // not Linux
        }
        long memGiB = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize() >> 30;
        return Runtime.getRuntime().availableProcessors() + " cores (" + cpu + "), " + memGiB + " GiB RAM, Java "
                + System.getProperty("java.version") + ", " + System.getProperty("os.name") + " " + System.getProperty("os.version")
                + "; Postgres, MariaDB and Kafka embedded on the same machine";
    }

    private Machine() {
    }
}
