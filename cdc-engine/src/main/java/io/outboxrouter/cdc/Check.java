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

    /** A failed connection to the source, with the fix its SQLState points to. */
    static Check connectionFailed(String url, java.sql.SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        String hint = state.startsWith("28") ? "check source.user and source.password"
                : state.startsWith("08") ? "check that the database at " + url + " is running and reachable"
                : state.startsWith("3D") || state.startsWith("42000") ? "check the database name in source.url"
                : "check the source settings";
        return fail("source connection", "cannot use the source database " + url + ": " + e.getMessage(), hint);
    }

    /** One line for an operator: the failed check, what was seen, and the fix. */
    public String problem() {
        return name + ": " + detail + (fix.isEmpty() ? "" : "; fix: " + fix);
    }
}
