import type { Migration } from "./migration.ts";

/**
 * A session's message lists (`history`: 0, `start`: 1) a row per message, so that a write
 * stores what a turn added instead of the whole conversation in `sessions.state`. States
 * stored before this keep their history inline and are read as they are; a session's next
 * write stores its rows and a state without it.
 */
export const sessionMessages: Migration = {
  version: 14,
  name: "session_messages",
  statements: () => [
    `CREATE TABLE session_messages (
      session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
      list SMALLINT NOT NULL,
      position INTEGER NOT NULL,
      message TEXT NOT NULL,
      PRIMARY KEY (session_id, list, position)
    )`,
  ],
};
