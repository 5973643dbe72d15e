package io.outboxrouter.quickstart;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import io.outboxrouter.testing.PostgresServer;

/**
 * A sample service: every change to an order and its outbox row are written in one transaction (the transactional
 * outbox pattern). It records when each event's transaction committed, so the console can show the latency.
 */
final class Shop implements AutoCloseable {
    private final Connection connection;
    private final Map<String, Long> commits;
    private final Duration interval;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "shop-writer"));
    private final List<long[]> open = new ArrayList<>(); // {orderId, step}: 0 placed, 1 paid
    private long nextOrder = 1;

    Shop(String url, Map<String, Long> commits, Duration interval) throws SQLException {
        this.connection = DriverManager.getConnection(url, PostgresServer.USER, PostgresServer.PASSWORD);
        this.connection.setAutoCommit(false);
        this.commits = commits;
        this.interval = interval;
    }

    static void createSchema(String url) throws SQLException {
        try (var c = DriverManager.getConnection(url, PostgresServer.USER, PostgresServer.PASSWORD); var st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE orders (
                      id bigint PRIMARY KEY,
                      customer text NOT NULL,
                      status text NOT NULL,
                      total numeric(10,2) NOT NULL,
                      updated_at timestamptz NOT NULL DEFAULT now())""");
            st.execute("""
                    CREATE TABLE outbox (
                      id uuid PRIMARY KEY,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload jsonb,
                      created_at timestamptz NOT NULL DEFAULT now())""");
        }
    }

    void start() {
        timer.scheduleAtFixedRate(this::step, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void step() {
        try {
            var random = ThreadLocalRandom.current();
            if (open.isEmpty() || random.nextInt(3) == 0) {
                long id = nextOrder++;
                String customer = List.of("ada", "grace", "linus", "barbara", "ken").get(random.nextInt(5));
                String total = String.format(java.util.Locale.ROOT, "%d.%02d", 5 + random.nextInt(200), random.nextInt(100));
                update("INSERT INTO orders (id, customer, status, total) VALUES (" + id + ", '" + customer + "', 'PLACED', " + total + ")",
                        id, "OrderPlaced", "{\"orderId\": " + id + ", \"total\": " + total + ", \"customer\": \"" + customer + "\"}");
                open.add(new long[] {id, 0});
            } else {
                long[] order = open.get(random.nextInt(open.size()));
                if (order[1] == 0) {
                    update("UPDATE orders SET status = 'PAID', updated_at = now() WHERE id = " + order[0],
                            order[0], "OrderPaid", "{\"orderId\": " + order[0] + ", \"status\": \"PAID\"}");
                    order[1] = 1;
                } else {
                    update("UPDATE orders SET status = 'SHIPPED', updated_at = now() WHERE id = " + order[0],
                            order[0], "OrderShipped", "{\"orderId\": " + order[0] + ", \"status\": \"SHIPPED\"}");
                    open.remove(order);
                }
            }
        } catch (SQLException e) {
            System.err.println("shop: " + e.getMessage());
        }
    }

    /** The state change and its event, in one transaction. */
    private void update(String stateChange, long orderId, String type, String payload) throws SQLException {
        String eventId = UUID.randomUUID().toString();
        try (var st = connection.createStatement();
             var outbox = connection.prepareStatement(
                     "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, 'Order', ?, ?, ?::jsonb)")) {
            st.executeUpdate(stateChange);
            outbox.setString(1, eventId);
            outbox.setString(2, "order-" + orderId);
            outbox.setString(3, type);
            outbox.setString(4, payload);
            outbox.executeUpdate();
            connection.commit();
            commits.put(eventId, System.nanoTime());
        } catch (SQLException e) {
            connection.rollback();
            throw e;
        }
    }

    @Override
    public void close() throws SQLException {
        Quickstart.awaitTermination(timer);
        connection.close();
    }
}
