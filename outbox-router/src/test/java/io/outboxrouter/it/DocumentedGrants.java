package io.outboxrouter.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The statements a database page gives for the router's role (the first {@code sql} block under its heading), so that
 * the tests grant what the docs say and nothing else: {@code outbox_router}, {@code 'change-me'} and the database
 * {@code app} are replaced by the test's own.
 */
final class DocumentedGrants {
    private DocumentedGrants() {
    }

    static List<String> of(String page, String heading, String user, String password, String database) throws IOException {
        String text = Files.readString(Path.of("").toAbsolutePath().getParent().resolve("docs").resolve(page));
        int at = text.indexOf("\n" + heading + "\n");
        if (at < 0) {
            throw new IllegalStateException("docs/" + page + " has no heading " + heading);
        }
        int start = text.indexOf("```sql\n", at) + "```sql\n".length();
        String block = text.substring(start, text.indexOf("```", start));
        var statements = new ArrayList<String>();
        for (String line : block.lines().toList()) {
            String sql = line.replaceAll("\\s+--.*$", "").strip();
            if (sql.isEmpty() || sql.startsWith("--")) {
                continue;
            }
            statements.add(sql.replaceAll(";$", "").replace("outbox_router", user).replace("'change-me'", "'" + password + "'")
                    .replaceAll("\\bapp\\b", database));
        }
        return statements;
    }
}
