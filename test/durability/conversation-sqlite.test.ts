// Issue 5, sessions end to end on the embedded store: tool-call conversation → REST → StartSession.history.
import { sqliteBackend } from "./support/backend.ts";
import { defineConversationSuite } from "./support/conversation-suite.ts";

defineConversationSuite("sqlite", sqliteBackend);
