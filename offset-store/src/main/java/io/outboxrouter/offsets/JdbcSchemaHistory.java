package io.outboxrouter.offsets;

import io.debezium.config.Configuration;
import io.debezium.document.DocumentReader;
import io.debezium.document.DocumentWriter;
import io.debezium.relational.history.AbstractSchemaHistory;
import io.debezium.relational.history.HistoryRecord;
import io.debezium.relational.history.HistoryRecordComparator;
import io.debezium.relational.history.SchemaHistoryException;
import io.debezium.relational.history.SchemaHistoryListener;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The schema history of a binlog source (MySQL, MariaDB) in a JDBC table beside the offsets: one row per DDL record,
 * in order, per router name; every statement names the router. Debezium replays it on start to know the table
 * shapes at the stored binlog position. Failures are retried, then surface as {@link OffsetStoreException}.
 */
public final class JdbcSchemaHistory extends AbstractSchemaHistory {
    private OffsetTableSettings settings;
    private JdbcStore store;
    private long nextSeq = -1;

    /** Instantiated by the connector through reflection; settings arrive in {@link #configure}. */
    public JdbcSchemaHistory() {
    }

    @Override
    public void configure(Configuration config, HistoryRecordComparator comparator, SchemaHistoryListener listener,
                          boolean useCatalogBeforeSchema) {
        super.configure(config, MariaDbGtidOrder.around(comparator), listener, useCatalogBeforeSchema);
        settings = OffsetTableSettings.fromProperties(OffsetTableSettings.SCHEMA_HISTORY_PREFIX, config.asMap());
    }

    @Override
    public synchronized void start() {
        super.start();
        store();
    }

    /** The connection pool, opened on first use: Debezium asks about storage before it calls start(). */
    private JdbcStore store() {
        if (store == null) {
            store = JdbcStore.open(settings, "schema-history-" + settings.routerName());
        }
        return store;
    }

    @Override
    public synchronized void stop() {
        if (store != null) {
            store.close();
            store = null;
        }
        super.stop();
    }

    @Override
    protected synchronized void storeRecord(HistoryRecord record) throws SchemaHistoryException {
        String text;
        try {
            text = DocumentWriter.defaultWriter().write(record.document());
        } catch (IOException e) {
            throw new SchemaHistoryException("cannot serialize a schema history record", e);
        }
        if (nextSeq < 0) {
            nextSeq = maxSeq() + 1;
        }
        long seq = nextSeq;
        store().run("store schema history of " + settings.routerName(), c -> {
            try (var ps = c.prepareStatement("INSERT INTO " + store.table() + " (router_name, seq, record, created_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP)")) {
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                ps.setString(1, settings.routerName());
                ps.setLong(2, seq);
                ps.setString(3, text);
                ps.executeUpdate();
            }
            return null;
        });
        nextSeq = seq + 1;
    }

    @Override
    protected synchronized void recoverRecords(Consumer<HistoryRecord> records) {
        List<String> texts = store().run("read schema history of " + settings.routerName(), c -> {
            var out = new ArrayList<String>();
            try (var ps = c.prepareStatement("SELECT record FROM " + store.table() + " WHERE router_name = ? ORDER BY seq")) {
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                ps.setString(1, settings.routerName());
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(rs.getString(1));
                    }
                }
            }
            return out;
        });
        var reader = DocumentReader.defaultReader();
        for (String text : texts) {
            try {
                records.accept(new HistoryRecord(reader.read(text)));
            } catch (IOException e) {
                throw new SchemaHistoryException("unreadable schema history record of " + settings.routerName() + ": " + text, e);
            }
        }
    }

    private long maxSeq() {
        return store().run("read schema history position of " + settings.routerName(), c -> {
            try (var ps = c.prepareStatement("SELECT COALESCE(MAX(seq), -1) FROM " + store.table() + " WHERE router_name = ?")) {
                ps.setString(1, settings.routerName());
                try (var rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    @Override
    public synchronized boolean exists() {
        if (!storageExists()) {
            return false;
        }
        return maxSeq() >= 0;
    }

    @Override
    public synchronized boolean storageExists() {
        return store().run("look for table " + store.table(), c -> {
            String name = store.table().contains(".") ? store.table().substring(store.table().indexOf('.') + 1) : store.table();
            try (var rs = c.getMetaData().getTables(c.getCatalog(), null, name, null)) {
                if (rs.next()) {
                    return true;
                }
            }
            try (var rs = c.getMetaData().getTables(c.getCatalog(), null, name.toUpperCase(), null)) {
                return rs.next();
            }
        });
    }

    @Override
    public synchronized void initializeStorage() {
        store().run("create table " + store.table(), c -> {
            try (var st = c.createStatement()) {
                st.execute(store.dialect().createHistoryTable(store.table()));
            }
            return null;
        });
    }

    @Override
    public String toString() {
        return "JDBC schema history" + (settings == null ? "" : " in " + settings.table());
    }
}
