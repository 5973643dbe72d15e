package io.outboxrouter.app;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;

/**
 * The JVM options the router is meant to run with, and what the JVM runs it with, for the start log: its heap limit,
 * collector and compilers, so that an operator sees at once whether the options took effect.
 */
public final class JvmSettings {
    /**
     * The serial collector, a 128 MB heap of which 80 MB for new objects, exit on running out, and both compilers (for the
     * steady rate; docs/operations.md says why). The README's run command and the Dockerfile spell them out (JvmSettingsTest
     * checks they agree); the tests, the quickstart and the benchmark take them from here.
     */
    public static final List<String> RECOMMENDED_OPTIONS = List.of("-XX:+UseSerialGC", "-Xmx128m",
            "-Xmn80m", "-XX:+ExitOnOutOfMemoryError");

    private JvmSettings() {
    }

    /** For example "Java 17.0.15, heap up to 120 MiB, serial collector, both compilers". */
    static String describe() {
        long heap = Runtime.getRuntime().maxMemory();
        String heapLimit = heap == Long.MAX_VALUE ? "no heap limit" : "heap up to " + (heap >> 20) + " MiB";
        return "Java " + Runtime.version() + ", " + heapLimit + ", " + collector(ManagementFactory.getGarbageCollectorMXBeans().stream()
                .map(GarbageCollectorMXBean::getName).toList()) + " collector, " + compilers();
    }

    static String collector(List<String> collectors) {
        return collectors.contains("Copy") ? "serial" : collectors.stream().anyMatch(n -> n.startsWith("G1")) ? "G1"
                : collectors.contains("PS Scavenge") ? "parallel" : collectors.stream().anyMatch(n -> n.startsWith("ZGC")) ? "Z"
                : String.join("/", collectors);
    }

    private static String compilers() {
        try {
            var diagnostics = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            return "1".equals(diagnostics.getVMOption("TieredStopAtLevel").getValue()) ? "client compiler only" : "both compilers";
        } catch (RuntimeException | LinkageError e) {
            return "compilers unknown";
        }
    }
}
