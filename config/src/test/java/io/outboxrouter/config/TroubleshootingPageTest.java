package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.config.MessageCatalog.Kind;
import io.outboxrouter.config.MessageCatalog.Message;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** docs/troubleshooting.md lists every message the router's code can print, rendered from that code. */
class TroubleshootingPageTest {
    static final String START = "<!-- messages:start (generated from the main sources; see TroubleshootingPageTest) -->\n";
    static final String END = "<!-- messages:end -->";
    private static final Path ROOT = Path.of("..");
    private static final Path PAGE = ROOT.resolve("docs").resolve("troubleshooting.md");

    /** Run with -Dtroubleshooting.update=true to rewrite the page's catalog after adding or changing a message. */
    @Test
    void thePageListsEveryMessageTheCodePrints() throws Exception {
        String page = Files.readString(PAGE);
        int start = page.indexOf(START);
        int end = page.indexOf(END);
        assertThat(start).as("docs/troubleshooting.md has the messages markers").isNotNegative();
        assertThat(end).isGreaterThan(start);
        String expected = markdown(MessageCatalog.read(ROOT));
        String actual = page.substring(start + START.length(), end);
        if (!actual.equals(expected) && Boolean.getBoolean("troubleshooting.update")) {
            Files.writeString(PAGE, page.substring(0, start + START.length()) + expected + page.substring(end));
            return;
        }
        assertThat(actual).as("docs/troubleshooting.md messages; regenerate with "
                + "./mvnw -q -pl config test -Dtest=TroubleshootingPageTest -Dtroubleshooting.update=true").isEqualTo(expected);
    }

    @Test
    void theCatalogFindsChecksDriftsStopsAndLogLines() throws Exception {
        var messages = MessageCatalog.read(ROOT);
        assertThat(messages).anySatisfy(m -> {
            assertThat(m.kind()).isEqualTo(Kind.CHECK);
            assertThat(m.name()).isEqualTo("wal_level");
            assertThat(m.text()).isEqualTo("wal_level is …, logical decoding needs logical");
            assertThat(m.fix()).contains("wal_level");
        });
        assertThat(messages).anySatisfy(m -> {
            assertThat(m.kind()).isEqualTo(Kind.DRIFT);
            assertThat(m.text()).startsWith("replication slot … does not exist");
        });
        assertThat(messages).anySatisfy(m -> assertThat(m.kind()).isEqualTo(Kind.CONFIG));
        assertThat(messages).anySatisfy(m -> assertThat(m.kind()).isEqualTo(Kind.STOP));
        assertThat(messages).anySatisfy(m -> assertThat(m.kind()).isEqualTo(Kind.ERROR_LOG));
        assertThat(messages).anySatisfy(m -> assertThat(m.kind()).isEqualTo(Kind.WARNING_LOG));
        assertThat(MessageCatalog.classes(messages)).contains("PostgresPreflight", "BinlogPreflight", "PositionCheck",
                "JdbcOffsetBackingStore", "KafkaPublisher", "RouterConfigLoader");
    }

    @Test
    void valuesFilledInAtRunTimeShowAsAnEllipsis() {
        String src = """
                class X {
                    void f() {
                        if (a) throw new SourceSetupException("slot " + slot + " of " + name(x, y) + " is gone: " + e.getMessage(), e);
                        LOG.warn("Router {}: lag {} s", name, lag);
                        var c = Check.fail("tables", "table " + t + (quoted ? " (quoted)" : " (plain)") + " is missing",
                                String.format("CREATE TABLE %s (...)", t));
                        throw new IllegalStateException(\"""
                                one text block
                                  on two lines\""");
                    }
                    // LOG.error("a comment is not a message");
                }
                """;
        List<Message> messages = MessageCatalog.messages("cdc-engine", "X", src);
        assertThat(messages).extracting(Message::text).containsExactly(
                "slot … of … is gone: …", "Router …: lag … s", "table … (quoted) / (plain) is missing",
                "one text block on two lines");
        assertThat(messages.get(2).fix()).isEqualTo("CREATE TABLE … (...)");
    }

    static String markdown(List<Message> messages) {
        var sb = new StringBuilder();
        var sections = Map.of(
                Kind.CONFIG, "### Configuration problems (exit 2)\n\nPrinted by `run`, `check` and `config` for an invalid file, one line per "
                        + "problem, each after the key it is about.\n",
                Kind.CHECK, "### Prerequisites not met (`check` FAIL, refused at start, exit 1)\n\n`check` prints these as FAIL with the "
                        + "fix; `run` refuses to start with all of them at once. A few are warnings (`check` prints WARN and "
                        + "exits 0; `run` starts and logs them): something worth changing before it costs events.\n",
                Kind.DRIFT, "### The stored position and the database disagree (refused at start, exit 1)\n\nThe router does not start "
                        + "over on its own. Read what would be lost, then either repair the state or start once with "
                        + "`run --accept-gap`, which does what *Accepting it* says.\n",
                Kind.LIVE, "### The database changed under a running router (a stop, exit 1)\n\nThe router stops at once, unready, "
                        + "and says what changed, the fix, and the events that may not be published: the transactions from a "
                        + "given xid on, with the `replay --from-xid N` command that publishes them again (or, without a "
                        + "clean look to count from, `replay --since` the stored position's time). The next start is refused "
                        + "until `run --accept-gap`. The cases and the way back: [database-changes.md](database-changes.md).\n",
                Kind.STOP, "### Stops and refusals (exit 1)\n\nThe one line `run` (or another command) prints on stderr before it exits "
                        + "1; the router also logs it. A stop while running first makes `/health/ready` answer 503.\n",
                Kind.CLI, "### Command refusals (exit 1, or 2 for bad usage)\n\nWhat a command other than `run` prints on stderr, after "
                        + "`outbox-router:`, when it refuses (a router with that name runs, a missing `--yes`, a position it "
                        + "cannot use) or fails.\n",
                Kind.ERROR_LOG, "### Errors logged\n\nLogged at ERROR, counted in `logback_events_total{level=\"error\"}` and shown on "
                        + "the status page among the recent problems.\n",
                Kind.WARNING_LOG, "### Warnings logged\n\nLogged at WARN, counted in `logback_events_total{level=\"warn\"}` and shown "
                        + "on the status page among the recent problems.\n");
        for (Kind kind : Kind.values()) {
            sb.append('\n').append(sections.get(kind)).append('\n');
            for (Message m : messages) {
                if (m.kind() != kind) {
                    continue;
                }
                sb.append("- ");
                switch (kind) {
                    case CONFIG -> sb.append(m.name().contains(MessageCatalog.ELLIPSIS) ? "*key*" : "`" + m.name().replace("`", "") + "`")
                            .append(": ").append(escape(m.text()));
                    case CHECK -> sb.append(m.name().equals(MessageCatalog.ELLIPSIS) ? "" : "**" + escape(m.name()) + "**: ")
                            .append(escape(m.text()))
                            .append(m.fix().isBlank() ? "" : ". *Fix:* " + escape(m.fix()));
                    case DRIFT -> sb.append(escape(m.text())).append(". *Accepting it:* ").append(escape(m.fix()));
                    case LIVE -> sb.append(escape(m.text())).append(m.fix().isBlank() ? "" : ". *Fix:* " + escape(m.fix()));
                    default -> sb.append(escape(m.text()));
                }
                sb.append(" <sub>").append(m.module()).append(": ").append(m.className()).append("</sub>\n");
            }
        }
        return sb.toString();
    }

    /** Plain text as Markdown that shows it as written: no emphasis, no HTML, no links. */
    static String escape(String text) {
        return text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                .replace("*", "\\*").replace("_", "\\_").replace("`", "\\`").replace("[", "&#91;").replace("]", "&#93;")
                .replace("#", "\\#");
    }
}
