package io.outboxrouter.it;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An application's load through an address that moves in a failover: single-row transactions over 20 aggregates.
 *
 * @param insert the insert of one event: id, aggregate type, aggregate id, type, payload
 * @param exists a query returning a row when the event with the given id is committed
 */
record FailoverWriter(String url, String user, String password, String insert, String exists) {

    /**
     * Single-row transactions through the moving address, as an application writes them. A commit whose outcome the
     * failover hid (the connection broke) is looked up on the new primary: an event counts as written only once it is
     * known committed, so that each aggregate's sequence has no gap.
     */
    Void write(List<TestEvent> written, AtomicBoolean stop) throws InterruptedException {
        return write(written, new java.util.ArrayList<>(), stop);
    }

    /**
     * @param lost events whose commit the failover hid and the new primary does not have: the former primary may have
     *             committed them locally (and a reader of its log may have seen them) before its standby received them
     */
    Void write(List<TestEvent> written, List<TestEvent> lost, AtomicBoolean stop) throws InterruptedException {
        var seq = new HashMap<String, Integer>();
        Connection c = null;
        int n = 0;
        TestEvent pending = null;
        while (!stop.get()) {
            try {
                if (c == null) {
                    c = DriverManager.getConnection(url, user, password);
                    c.setAutoCommit(false);
                }
                if (pending != null) {
                    if (exists(c, pending.id())) {
                        written.add(pending);
                        seq.merge(pending.aggregateId(), 1, Integer::sum);
                    } else {
                        lost.add(pending);
                    }
                    pending = null;
                }
                String aggregate = "acct-" + (n++ % 20);
                var e = TestEvent.of("Account", aggregate, seq.getOrDefault(aggregate, 0) + 1);
                pending = e;
                try (var ps = c.prepareStatement(insert)) {
                    ps.setString(1, e.id().toString());
                    ps.setString(2, e.aggregateType());
                    ps.setString(3, e.aggregateId());
                    ps.setString(4, e.type());
                    ps.setString(5, e.payload());
                    ps.executeUpdate();
                }
                c.commit();
                pending = null;
                written.add(e);
                seq.merge(aggregate, 1, Integer::sum);
                Thread.sleep(5);
            } catch (SQLException broken) {
                if (c != null) {
                    try {
                        c.close();
                    } catch (SQLException ignored) {
                        // gone with the server
                    }
                }
                c = null;
                Thread.sleep(200);
            }
        }
        if (pending != null) { // a commit whose outcome is unknown when the writing stops: looked up once more
            try (var last = DriverManager.getConnection(url, user, password)) {
                last.setAutoCommit(false);
                if (exists(last, pending.id())) {
                    written.add(pending);
                }
            } catch (SQLException e) {
                throw new IllegalStateException("cannot tell whether the last event was committed", e);
            }
        }
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // done
            }
        }
        return null;
    }

    private boolean exists(Connection c, UUID id) throws SQLException {
        try (var ps = c.prepareStatement(exists)) {
            ps.setString(1, id.toString());
            try (var rs = ps.executeQuery()) {
                boolean found = rs.next();
                c.commit();
                return found;
            }
        }
    }
}
