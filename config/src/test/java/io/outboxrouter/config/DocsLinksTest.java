package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Every relative link and anchor in README.md, CHANGELOG.md and docs/ leads somewhere: a file that exists, a heading it has. */
class DocsLinksTest {
    private static final Path ROOT = Path.of("..");
    /** {@code [text](target)}, the target without a title; links in code spans and blocks are left out before matching. */
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.+?)\\s*#*$");

    @Test
    void everyRelativeLinkAndAnchorResolves() throws IOException {
        var broken = new ArrayList<String>();
        for (Path page : pages()) {
            for (String target : links(Files.readString(page))) {
                if (target.matches("^[a-z]+:.*")) {
                    continue; // http(s), mailto: not checked here
                }
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                if (!Files.exists(resolved)) {
                    broken.add(ROOT.relativize(page) + ": " + target + " (no such file)");
                } else if (hash >= 0 && resolved.toString().endsWith(".md")
                        && !anchors(Files.readString(resolved)).contains(target.substring(hash + 1))) {
                    broken.add(ROOT.relativize(page) + ": " + target + " (no such heading)");
                }
            }
        }
        assertThat(broken).as("broken links").isEmpty();
    }

    private static List<Path> pages() throws IOException {
        var pages = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("CHANGELOG.md")));
        try (Stream<Path> docs = Files.walk(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    /** The link targets outside fenced code blocks and inline code. */
    static List<String> links(String markdown) {
        var out = new ArrayList<String>();
        boolean fenced = false;
        for (String line : markdown.split("\n")) {
            if (line.trim().startsWith("```")) {
                fenced = !fenced;
                continue;
            }
            if (fenced) {
                continue;
            }
            var m = LINK.matcher(line.replaceAll("`[^`]*`", ""));
            while (m.find()) {
                out.add(m.group(1));
            }
        }
        return out;
    }

    /** The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
    static Set<String> anchors(String markdown) {
        var out = new HashSet<String>();
        boolean fenced = false;
        for (String line : markdown.split("\n")) {
            if (line.trim().startsWith("```")) {
                fenced = !fenced;
                continue;
            }
            var m = HEADING.matcher(line);
            if (fenced || !m.matches()) {
                continue;
            }
            String slug = m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
            String anchor = slug;
            for (int n = 1; !out.add(anchor); n++) {
                anchor = slug + "-" + n;
            }
        }
        return out;
    }

    @Test
    void anchorsAreMadeAsGitHubMakesThem() {
        assertThat(anchors("# Exactly-once delivery\n## What `check` says, and why\n## Notes\n## Notes\n"))
                .containsExactlyInAnyOrder("exactly-once-delivery", "what-check-says-and-why", "notes", "notes-1");
        assertThat(links("[a](b.md#c) `[x](y)`\n```\n[no](z)\n```\n")).containsExactly("b.md#c");
    }
}
