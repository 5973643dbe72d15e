package io.outboxrouter.app;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;

/**
 * What the JVM runs the router with, for the start log: its heap limit, collector and compilers, the settings the README's
 * launch options choose ({@code -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx128m -Xmn80m}), so that an operator sees at once
 * whether they took effect.
 */
final class JvmSettings {
    private JvmSettings() {
    }

    /** For example "Java 17.0.15, heap up to 120 MiB, serial collector, client compiler only". */
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
