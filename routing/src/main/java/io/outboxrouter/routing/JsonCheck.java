package io.outboxrouter.routing;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/** Checks that bytes hold exactly one JSON document, streaming through its tokens without building a tree. */
final class JsonCheck {
    private static final JsonFactory FACTORY = new JsonFactory();

    /** Null when valid; else what is wrong and where, in one line. */
    static String problem(byte[] json) {
        try (var parser = FACTORY.createParser(json)) {
            if (parser.nextToken() == null) {
                return "it is empty";
            }
            parser.skipChildren();
            JsonToken after = parser.nextToken();
            if (after != null) {
                return "more than one JSON value (another starts at byte " + parser.currentTokenLocation().getByteOffset() + ")";
            }
            return null;
        } catch (JsonProcessingException e) {
            return e.getOriginalMessage() + " at byte " + (e.getLocation() == null ? "?" : e.getLocation().getByteOffset());
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    private JsonCheck() {
    }
}
