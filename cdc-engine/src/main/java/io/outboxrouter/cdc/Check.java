package io.outboxrouter.cdc;

/**
 * One prerequisite, checked: what, whether it holds, what was seen, and the fix when it does not.
 *
 * @param fix empty when it passed
 */
public record Check(String name, boolean ok, String detail, String fix) {

    public static Check pass(String name, String detail) {
        return new Check(name, true, detail, "");
    }

    public static Check fail(String name, String detail, String fix) {
        return new Check(name, false, detail, fix);
    }

    /** One line for an operator: the failed check, what was seen, and the fix. */
    public String problem() {
        return name + ": " + detail + (fix.isEmpty() ? "" : "; fix: " + fix);
    }
}
