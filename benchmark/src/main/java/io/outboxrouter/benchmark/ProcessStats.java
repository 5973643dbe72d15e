package io.outboxrouter.benchmark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** CPU time and memory of a child process, from /proc (Linux). */
final class ProcessStats {
    private static final long TICKS_PER_SECOND = 100; // USER_HZ on Linux

    private final long pid;

    ProcessStats(long pid) {
        this.pid = pid;
    }

    long pid() {
        return pid;
    }

    /** User + system CPU seconds so far, or NaN when unreadable. */
    double cpuSeconds() {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) TICKS_PER_SECOND;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** User + system CPU seconds so far of each thread, by thread id and name (names as Linux shortens them). */
    java.util.Map<String, Double> threadCpuSeconds() {
        return perThread(task -> {
            String[] f = Files.readString(task.resolve("stat")).replaceFirst("^.*\\) ", "").split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) TICKS_PER_SECOND;
        });
    }

    /**
     * Seconds each thread has so far waited on a run queue, runnable but without a core (the second field of
     * {@code /proc/<pid>/task/<tid>/schedstat}), by thread id and name: how much a contender is starved on a busy machine.
     */
    java.util.Map<String, Double> threadRunQueueSeconds() {
        return perThread(task -> Long.parseLong(Files.readString(task.resolve("schedstat")).trim().split(" ")[1]) / 1e9);
    }

    private interface TaskReading {
        double read(Path task) throws IOException;
    }

    /** One reading per thread of the process, keyed by thread id and name; threads that end meanwhile are left out. */
    private java.util.Map<String, Double> perThread(TaskReading reading) {
        var threads = new java.util.TreeMap<String, Double>();
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            tasks.forEach(task -> {
                try {
                    threads.put(task.getFileName() + " " + Files.readString(task.resolve("comm")).trim(), reading.read(task));
                } catch (IOException | RuntimeException e) {
                    // a thread that ended meanwhile
                }
            });
        } catch (IOException | RuntimeException e) {
            // the process ended
        }
        return threads;
    }

    /** The threads that used CPU between two {@link #threadCpuSeconds} readings, busiest first, as percent of a core. */
    static String threadShares(java.util.Map<String, Double> before, java.util.Map<String, Double> after, double seconds) {
        return after.entrySet().stream()
                .map(e -> java.util.Map.entry(e.getKey().replaceFirst("^\\d+ ", ""), e.getValue() - before.getOrDefault(e.getKey(), 0.0)))
                .filter(e -> e.getValue() > 0)
                .sorted(java.util.Map.Entry.<String, Double>comparingByValue().reversed())
                .limit(8)
                .map(e -> String.format("%s %.2f%%", e.getKey(), e.getValue() / seconds * 100))
                .collect(java.util.stream.Collectors.joining(", "));
    }

    /** CPU seconds the whole machine spent busy so far (all cores, from /proc/stat), or NaN. */
    static double machineBusySeconds() {
        try {
            String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            long busy = 0;
            for (int i = 1; i < f.length; i++) {
                if (i != 4 && i != 5) { // idle, iowait
                    busy += Long.parseLong(f[i]);
                }
            }
            return busy / (double) TICKS_PER_SECOND;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** Peak resident memory in MiB (VmHWM), or NaN. */
    double peakRssMiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
                }
            }
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
        return Double.NaN;
    }

    /**
     * CPU seconds so far of every process on the machine, summed by what it is (the contender, Kafka, the benchmark's own
     * JVM with the load and the consumer, Postgres's walsenders, its other backends, MariaDB), for where the cores went.
     */
    static java.util.Map<String, Double> machineCpuByKind(long contenderPid) {
        var kinds = new java.util.TreeMap<String, Double>();
        long self = ProcessHandle.current().pid();
        try (var procs = Files.list(Path.of("/proc"))) {
            procs.filter(d -> d.getFileName().toString().chars().allMatch(Character::isDigit)).forEach(d -> {
                try {
                    long pid = Long.parseLong(d.getFileName().toString());
                    String stat = Files.readString(d.resolve("stat"));
                    String comm = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    double cpu = (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) TICKS_PER_SECOND;
                    if (comm.equals("postgres")) {
                        // The postmaster's children's time too: the load's backends have exited by the second reading.
                        cpu += (Long.parseLong(f[13]) + Long.parseLong(f[14])) / (double) TICKS_PER_SECOND;
                    }
                    String cmd = new String(Files.readAllBytes(d.resolve("cmdline"))).replace('\0', ' ');
                    if (pid == self) {
                        new ProcessStats(self).threadCpuSeconds().forEach((thread, seconds) -> kinds.merge(benchmarkThread(thread), seconds,
                                Double::sum));
                        return;
                    }
                    String kind = pid == contenderPid ? "contender"
                            : cmd.contains("kafka.Kafka") || cmd.contains("KafkaRaftServer") || cmd.contains("kafka.server") ? "Kafka"
                            : cmd.startsWith("postgres: walsender") || cmd.contains(" walsender ") ? "Postgres walsenders"
                            : comm.equals("postgres") ? "Postgres backends"
                            : comm.startsWith("mariadbd") || comm.startsWith("mysqld") ? "MariaDB/MySQL"
                            : comm.equals("java") ? "other JVMs" : "other";
                    kinds.merge(kind, cpu, Double::sum);
                } catch (IOException | RuntimeException e) {
                    // a process that ended meanwhile
                }
            });
        } catch (IOException e) {
            // no /proc
        }
        return kinds;
    }

    /** The benchmark's JVM holds the Kafka broker beside the load and the consumer; its threads are told apart by name. */
    private static String benchmarkThread(String idAndName) {
        String name = idAndName.replaceFirst("^\\d+ ", "");
        if (name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler") || name.startsWith("GC Thread") || name.startsWith("G1 ")
                || name.startsWith("VM ")) {
            return "benchmark JVM: JIT and GC";
        }
        for (String broker : java.util.List.of("data-plane-kafk", "kafka-cluster", "kafka-0-", "quorum-control", "controller-0",
                "broker-0", "group-coordinat", "raft-", "kafka-scheduler", "transaction-coo", "ExpirationReap", "LogDirFailure",
                "kafka-log-clean", "share-coordina", "metrics-meter")) {
            if (name.startsWith(broker)) {
                return "Kafka broker";
            }
        }
        return "benchmark JVM: load and consumer";
    }
}
