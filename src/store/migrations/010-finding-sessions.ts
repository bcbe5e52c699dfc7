import type { Migration } from "./migration.ts";

/**
 * Finding sessions again: a session's `title`, string `metadata` (JSON object text) and
 * `archived` flag; `session_text`, one row per searchable text of a session (its title with
 * `turn_seq` 0, each turn's user and assistant text with the turn's seq), indexed by each
 * engine's own full-text index (PostgreSQL: a `tsvector` column with a GIN index; SQLite: a
 * contentless FTS5 table keyed by the row's id, kept in step by a delete trigger); and
 * `leases`, which lets one node at a time do a cluster-wide chore. Turns stored before it are
 * indexed here.
 */
export const findingSessions: Migration = {
  version: 10,
  name: "finding_sessions",
  statements: (d) => [
    `ALTER TABLE sessions ADD COLUMN title TEXT`,
    `ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'`,
    `ALTER TABLE sessions ADD COLUMN archived SMALLINT NOT NULL DEFAULT 0`,
    `CREATE INDEX sessions_by_ended_status ON sessions (ended_at, status)`,
    `CREATE TABLE leases (
      name TEXT PRIMARY KEY,
      holder TEXT NOT NULL,
      expires_at BIGINT NOT NULL
    )`,
    ...(d.name === "postgres" ? postgresText : sqliteText),
  ],
};

/** The indexed text of a turn: user message, then assistant text (SQL over `turns` columns). */
const TURN_TEXT = "user_content || ' ' || assistant_text";

const postgresText = [
  `CREATE TABLE session_text (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_seq INTEGER NOT NULL,
    words TSVECTOR NOT NULL
  )`,
  `CREATE INDEX session_text_by_session ON session_text (session_id, turn_seq)`,
  `CREATE INDEX session_text_words ON session_text USING GIN (words)`,
  `INSERT INTO session_text (session_id, turn_seq, words)
   SELECT session_id, seq, to_tsvector('simple', left(${TURN_TEXT}, 100000)) FROM turns`,
];

const sqliteText = [
  `CREATE TABLE session_text (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_seq INTEGER NOT NULL
  )`,
  `CREATE INDEX session_text_by_session ON session_text (session_id, turn_seq)`,
  `CREATE VIRTUAL TABLE session_text_fts USING fts5 (body, content = '', contentless_delete = 1)`,
  // Cascaded deletes (a session deleted with its rows) fire it too.
  `CREATE TRIGGER session_text_unindex AFTER DELETE ON session_text BEGIN
     DELETE FROM session_text_fts WHERE rowid = old.id;
   END`,
  `INSERT INTO session_text (session_id, turn_seq) SELECT session_id, seq FROM turns`,
  `INSERT INTO session_text_fts (rowid, body)
   SELECT x.id, substr(${TURN_TEXT}, 1, 100000)
   FROM session_text x JOIN turns ON turns.session_id = x.session_id AND turns.seq = x.turn_seq`,
];
