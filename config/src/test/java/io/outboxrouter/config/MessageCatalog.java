package io.outboxrouter.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Every message the router can print to an operator, read from the main sources where it is written: failed
 * prerequisite checks ({@code Check.fail(name, problem, fix)}), refusals to start over a drift ({@code new Drift(problem,
 * accepted)}), the exceptions the router stops with, the commands' refusals ({@code System.err.println("outbox-router:
 * ...")}), and the warnings and errors it logs. Values filled in at run time
 * are shown as {@code …}. The troubleshooting page is rendered from it, so a new message cannot be missing there.
 */
final class MessageCatalog {
    /** The modules whose code runs in the router or the Connect plugin; the benchmark, quickstart and test support do not. */
    static final List<String> MODULES = List.of("config", "retry", "routing", "offset-store", "cdc-engine", "outbox-router",
            "connect-transform");
    /** Exceptions whose message reaches the operator: the CLI prints it as the reason the router stopped or refused. */
    private static final Set<String> EXCEPTIONS = Set.of("SourceSetupException", "OffsetStoreException", "FencedException",
            "ConfigException", "UnroutableEventException", "IllegalStateException", "FencedOutException",
            "UnrecoverableException", "UnwritableTopicException", "GaveUpException", "SchemaHistoryException",
            "ConnectException", "DataException", "IllegalArgumentException");
    static final String ELLIPSIS = "…";

    enum Kind { CONFIG, CHECK, DRIFT, LIVE, STOP, CLI, ERROR_LOG, WARNING_LOG }

    /** How the commands begin what they print on stderr when they refuse or fail. */
    static final String CLI_PREFIX = "outbox-router: ";

    /** One message: its kind, where it is written, and its text (for a check: name, problem and fix). */
    record Message(Kind kind, String module, String className, String name, String text, String fix) {}

    private MessageCatalog() {}

    static List<Message> read(Path root) throws IOException {
        var out = new ArrayList<Message>();
        for (String module : MODULES) {
            Path src = root.resolve(module).resolve("src/main/java");
            if (!Files.isDirectory(src)) {
                continue;
            }
            try (Stream<Path> files = Files.walk(src)) {
                for (Path file : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                    String className = file.getFileName().toString().replace(".java", "");
                    out.addAll(messages(module, className, Files.readString(file)));
                }
            }
        }
        return dedupe(out);
    }

    static List<Message> messages(String module, String className, String source) {
        var tokens = Lexer.tokens(source);
        var out = new ArrayList<Message>();
        for (int i = 0; i < tokens.size(); i++) {
            Token t = tokens.get(i);
            if (t.is("fail") && next(tokens, i, "(") && !afterDot(tokens, i, "Check", className)) {
                continue;
            }
            boolean checkWarning = t.is("warn") && i >= 2 && tokens.get(i - 1).is(".") && tokens.get(i - 2).is("Check");
            if ((t.is("fail") || checkWarning) && next(tokens, i, "(")) {
                var args = args(tokens, i + 1);
                if (args.size() == 3) {
                    out.add(new Message(Kind.CHECK, module, className, render(args.get(0)), render(args.get(1)), render(args.get(2))));
                }
            } else if (t.is("problem") && next(tokens, i, "(") && module.equals("config") && !(i > 0 && tokens.get(i - 1).is("void"))) {
                var args = args(tokens, i + 1);
                if (args.size() == 2) {
                    out.add(new Message(Kind.CONFIG, module, className, render(args.get(0)), render(args.get(1)), ""));
                }
            } else if (t.is("new") && i + 2 < tokens.size() && tokens.get(i + 1).is("Drift") && tokens.get(i + 2).is("(")) {
                var args = args(tokens, i + 2);
                if (args.size() >= 2) {
                    out.add(new Message(Kind.DRIFT, module, className, "", render(args.get(0)), render(args.get(1))));
                }
            } else if (t.is("new") && i + 2 < tokens.size() && tokens.get(i + 1).is("Change") && tokens.get(i + 2).is("(")) {
                var args = args(tokens, i + 2);
                if (args.size() >= 2) {
                    out.add(new Message(Kind.LIVE, module, className, "", render(args.get(0)), render(args.get(1))));
                }
            } else if (t.is("stop") && i + 3 < tokens.size() && tokens.get(i + 1).is(".") && tokens.get(i + 2).is("accept")
                    && tokens.get(i + 3).is("(")) {
                var args = args(tokens, i + 3);
                if (args.size() == 1) {
                    out.add(new Message(Kind.LIVE, module, className, "", render(args.get(0)), ""));
                }
            } else if (t.is("new") && exceptionCall(tokens, i) > 0) {
                // Thrown here or made by a helper and thrown by its caller; the class name may be qualified.
                var args = args(tokens, exceptionCall(tokens, i));
                if (!args.isEmpty()) {
                    out.add(new Message(Kind.STOP, module, className, "", render(args.get(0)), ""));
                }
            } else if (t.is("System") && i + 5 < tokens.size() && tokens.get(i + 1).is(".") && tokens.get(i + 2).is("err")
                    && tokens.get(i + 3).is(".") && tokens.get(i + 4).is("println") && tokens.get(i + 5).is("(")) {
                var args = args(tokens, i + 5);
                String text = args.isEmpty() ? "" : render(args.get(0));
                if (text.startsWith(CLI_PREFIX)) {
                    out.add(new Message(Kind.CLI, module, className, "", text.substring(CLI_PREFIX.length()), ""));
                }
            } else if ((t.is("LOG") || t.is("log") || t.is(")")) && i + 3 < tokens.size() && tokens.get(i + 1).is(".")
                    && (tokens.get(i + 2).is("error") || tokens.get(i + 2).is("warn")) && tokens.get(i + 3).is("(")) {
                var args = args(tokens, i + 3);
                if (!args.isEmpty()) {
                    String text = render(args.get(0)).replace("{}", ELLIPSIS);
                    out.add(new Message(tokens.get(i + 2).is("error") ? Kind.ERROR_LOG : Kind.WARNING_LOG, module, className, "",
                            collapse(text), ""));
                }
            }
        }
        return out.stream().filter(m -> words(m.text()) >= 2 || words(m.fix()) >= 2).toList();
    }

    /**
     * Where the argument list of {@code new [Qualifier.]SomeException(} opens, when the token at {@code i} is that
     * {@code new} and the exception is one whose message reaches the operator; else -1.
     */
    private static int exceptionCall(List<Token> tokens, int i) {
        int j = i + 1;
        while (j + 2 < tokens.size() && tokens.get(j + 1).is(".")) {
            j += 2;
        }
        return j + 1 < tokens.size() && EXCEPTIONS.contains(tokens.get(j).text) && tokens.get(j + 1).is("(") ? j + 1 : -1;
    }

    /** A bare {@code fail(...)} counts inside Check itself; elsewhere only {@code Check.fail(...)}. */
    private static boolean afterDot(List<Token> tokens, int i, String owner, String className) {
        if (i >= 2 && tokens.get(i - 1).is(".")) {
            return tokens.get(i - 2).is(owner);
        }
        return className.equals(owner);
    }

    private static boolean next(List<Token> tokens, int i, String text) {
        return i + 1 < tokens.size() && tokens.get(i + 1).is(text);
    }

    /** The arguments of the call whose opening parenthesis is at {@code open}, split at top-level commas. */
    private static List<List<Token>> args(List<Token> tokens, int open) {
        var out = new ArrayList<List<Token>>();
        var current = new ArrayList<Token>();
        int depth = 0;
        for (int i = open; i < tokens.size(); i++) {
            Token t = tokens.get(i);
            if (t.is("(") || t.is("[") || t.is("{")) {
                depth++;
                if (depth == 1) {
                    continue;
                }
            } else if (t.is(")") || t.is("]") || t.is("}")) {
                depth--;
                if (depth == 0) {
                    if (!current.isEmpty()) {
                        out.add(current);
                    }
                    return out;
                }
            } else if (depth == 1 && t.is(",")) {
                out.add(current);
                current = new ArrayList<>();
                continue;
            }
            current.add(t);
        }
        return out;
    }

    /**
     * An expression as the operator reads it: the string literals joined by {@code +} at its top level, every other
     * operand (a variable, a call, a conditional) as {@code …}; a conditional whose two sides are literals shows both.
     */
    static String render(List<Token> expr) {
        return collapse(raw(expr)).strip();
    }

    /** As {@link #render}, the spaces at either end kept, for a part of a longer text. */
    private static String raw(List<Token> expr) {
        int q = topLevel(expr, "?");
        int c = topLevel(expr, ":");
        if (q > 0 && c > q) {
            String yes = raw(expr.subList(q + 1, c));
            String no = raw(expr.subList(c + 1, expr.size()));
            if (yes.isBlank() || no.isBlank()) {
                String some = (yes.isBlank() ? no : yes).strip(); // a part written only sometimes
                return some.isEmpty() ? "" : (Character.isLetterOrDigit(some.charAt(0)) ? " [" : "[") + some + "]";
            }
            return yes.equals(ELLIPSIS) && no.equals(ELLIPSIS) ? ELLIPSIS : (yes + " / " + no).replace("  ", " ");
        }
        var text = new StringBuilder();
        int depth = 0;
        var operand = new ArrayList<Token>();
        for (Token t : expr) {
            if (t.is("(") || t.is("[") || t.is("{")) {
                depth++;
            } else if (t.is(")") || t.is("]") || t.is("}")) {
                depth--;
            }
            if (depth == 0 && t.is("+")) {
                text.append(operand(operand));
                operand = new ArrayList<>();
            } else {
                operand.add(t);
            }
        }
        text.append(operand(operand));
        return text.toString();
    }

    private static String operand(List<Token> tokens) {
        if (tokens.size() == 1 && tokens.get(0).literal) {
            return tokens.get(0).text;
        }
        // ("a" + x) in parentheses: render the inside.
        if (tokens.size() >= 2 && tokens.get(0).is("(") && tokens.get(tokens.size() - 1).is(")") && closesAtEnd(tokens)) {
            return raw(tokens.subList(1, tokens.size() - 1));
        }
        // List.of("..."): the one message of a list.
        if (tokens.size() > 4 && tokens.get(0).is("List") && tokens.get(2).is("of") && tokens.get(3).is("(")) {
            var inner = args(tokens, 3);
            return inner.size() == 1 ? raw(inner.get(0)) : ELLIPSIS;
        }
        // String.format("...%s...", x) and "...".formatted(x): the format with its placeholders as values.
        if (tokens.size() > 3 && tokens.get(0).is("String") && tokens.get(2).is("format") && tokens.get(4).literal) {
            return tokens.get(4).text.replaceAll("%[-0-9.]*[sdf]", ELLIPSIS);
        }
        if (tokens.size() > 2 && tokens.get(0).literal && tokens.get(2).is("formatted")) {
            return tokens.get(0).text.replaceAll("%[-0-9.]*[sdf]", ELLIPSIS);
        }
        return ELLIPSIS;
    }

    private static boolean closesAtEnd(List<Token> tokens) {
        int depth = 0;
        for (int i = 0; i < tokens.size(); i++) {
            if (tokens.get(i).is("(")) {
                depth++;
            } else if (tokens.get(i).is(")")) {
                depth--;
                if (depth == 0 && i < tokens.size() - 1) {
                    return false;
                }
            }
        }
        return true;
    }

    private static int topLevel(List<Token> tokens, String text) {
        int depth = 0;
        for (int i = 0; i < tokens.size(); i++) {
            Token t = tokens.get(i);
            if (t.is("(") || t.is("[") || t.is("{")) {
                depth++;
            } else if (t.is(")") || t.is("]") || t.is("}")) {
                depth--;
            } else if (depth == 0 && t.is(text)) {
                return i;
            }
        }
        return -1;
    }

    private static String collapse(String s) {
        String out = s;
        while (out.contains(ELLIPSIS + ELLIPSIS)) {
            out = out.replace(ELLIPSIS + ELLIPSIS, ELLIPSIS);
        }
        return out.replace(ELLIPSIS + " " + ELLIPSIS, ELLIPSIS);
    }

    private static int words(String s) {
        return s.replace(ELLIPSIS, " ").replaceAll("[^\\p{L}\\s]", " ").trim().split("\\s+").length
                - (s.replace(ELLIPSIS, "").isBlank() ? 1 : 0);
    }

    /** One entry per distinct message; where the same text is written in several places, the first is kept. */
    private static List<Message> dedupe(List<Message> messages) {
        Map<String, Message> seen = new LinkedHashMap<>();
        for (Message m : messages) {
            seen.putIfAbsent(m.kind() + "\u0000" + m.name() + "\u0000" + m.text() + "\u0000" + m.fix(), m);
        }
        return new ArrayList<>(seen.values());
    }

    /** A Java token: a string literal (its value), or any other word or symbol. */
    record Token(String text, boolean literal) {
        boolean is(String s) {
            return !literal && text.equals(s);
        }
    }

    /** Just enough of Java's lexical grammar to find calls and their string arguments: comments, literals, text blocks. */
    static final class Lexer {
        private Lexer() {}

        static List<Token> tokens(String src) {
            var out = new ArrayList<Token>();
            int i = 0;
            int n = src.length();
            while (i < n) {
                char c = src.charAt(i);
                if (Character.isWhitespace(c)) {
                    i++;
                } else if (src.startsWith("//", i)) {
                    i = src.indexOf('\n', i) < 0 ? n : src.indexOf('\n', i);
                } else if (src.startsWith("/*", i)) {
                    i = src.indexOf("*/", i + 2) < 0 ? n : src.indexOf("*/", i + 2) + 2;
                } else if (src.startsWith("\"\"\"", i)) {
                    int start = src.indexOf('\n', i) + 1;
                    int end = src.indexOf("\"\"\"", start);
                    out.add(new Token(textBlock(src.substring(start, end)), true));
                    i = end + 3;
                } else if (c == '"') {
                    var sb = new StringBuilder();
                    i++;
                    while (i < n && src.charAt(i) != '"') {
                        if (src.charAt(i) == '\\' && src.charAt(i + 1) == 'u') {
                            sb.append((char) Integer.parseInt(src.substring(i + 2, i + 6), 16));
                            i += 6;
                        } else if (src.charAt(i) == '\\') {
                            sb.append(unescape(src.charAt(i + 1)));
                            i += 2;
                        } else {
                            sb.append(src.charAt(i++));
                        }
                    }
                    out.add(new Token(sb.toString(), true));
                    i++;
                } else if (c == '\'') {
                    int end = src.charAt(i + 1) == '\\' ? src.indexOf('\'', i + 3) : i + 2;
                    out.add(new Token("'", false));
                    i = end + 1;
                } else if (Character.isJavaIdentifierStart(c)) {
                    int start = i;
                    while (i < n && Character.isJavaIdentifierPart(src.charAt(i))) {
                        i++;
                    }
                    out.add(new Token(src.substring(start, i), false));
                } else if (Character.isDigit(c)) {
                    int start = i;
                    while (i < n && (Character.isLetterOrDigit(src.charAt(i)) || src.charAt(i) == '_' || src.charAt(i) == '.')) {
                        i++;
                    }
                    out.add(new Token(src.substring(start, i), false));
                } else {
                    out.add(new Token(String.valueOf(c), false));
                    i++;
                }
            }
            return out;
        }

        private static String textBlock(String body) {
            var lines = body.split("\n", -1);
            int indent = Integer.MAX_VALUE;
            for (String line : lines) {
                if (!line.isBlank()) {
                    indent = Math.min(indent, line.length() - line.stripLeading().length());
                }
            }
            var sb = new StringBuilder();
            for (String line : lines) {
                sb.append(line.isBlank() ? "" : line.substring(Math.min(indent, line.length())).stripTrailing()).append(' ');
            }
            return sb.toString().replace("\\n", " ").replaceAll("\\s+", " ").strip();
        }

        private static char unescape(char c) {
            return switch (c) {
                case 'n', 't', 'r' -> ' ';
                default -> c;
            };
        }
    }

    /** The distinct class names of a catalog, in order: for tests. */
    static Set<String> classes(List<Message> messages) {
        var out = new LinkedHashSet<String>();
        messages.forEach(m -> out.add(m.className()));
        return out;
    }
}
