package io.outboxrouter.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP forwarder standing for the address a cluster moves to its primary (a virtual IP, a DNS name, a
 * Kubernetes service): {@link #switchTo} points it at another port and drops every open connection, as a failover does.
 */
public final class TcpProxy implements AutoCloseable {
    private final ServerSocket server;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private volatile int target;

    private TcpProxy(int target) throws IOException {
        this.target = target;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        var accept = new Thread(this::accept, "tcp-proxy-" + server.getLocalPort());
        accept.setDaemon(true);
        accept.start();
    }

    public static TcpProxy to(int port) {
        try {
            return new TcpProxy(port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /** New connections go to {@code port}; the open ones are cut. */
    public void switchTo(int port) {
        target = port;
        for (Socket s : open) {
            closeQuietly(s);
        }
        open.clear();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream;
                try {
                    upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                } catch (IOException refused) {
                    closeQuietly(client);
                    continue;
                }
                open.add(client);
                open.add(upstream);
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                // closed
            }
        }
    }

    private void pump(Socket from, Socket to) {
        var t = new Thread(() -> {
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                in.transferTo(out);
            } catch (IOException e) {
                // either side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
                open.remove(from);
                open.remove(to);
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // already closed
        }
        switchTo(target);
    }
}
