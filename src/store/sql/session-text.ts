/**
 * The full-text index of sessions, on each engine's own index (migration 010): one
 * `session_text` row per searchable text — the title (`turn_seq` 0) and each turn — whose
 * words PostgreSQL keeps in a GIN-indexed `tsvector` and SQLite in a contentless FTS5 table
 * keyed by the row id. Rows are written in the same transaction as what they index.
 */
import type { TurnRecord } from "../../domain/index.ts";
import type { Dialect, Sql, SqlStatement, SqlValue } from "./database.ts";

/** How much of one text is indexed: a `tsvector` has a size limit, and words past it are rarely what people look for. */
export const INDEXED_CHARS = 100_000;

/** `turn_seq` of a session's title row. */
const TITLE_SEQ = 0;

/** What a turn makes searchable: the user's message, messages steered into it, and the assistant's text. */
export function turnText(record: TurnRecord): string {
  const steered = (record.steered ?? []).map((s) => s.content);
  return [record.userContent, ...steered, record.assistantText].join(" ").slice(0, INDEXED_CHARS);
}

/** The PostgreSQL expression of the words of a text parameter. */
export const PG_WORDS = "to_tsvector('simple', ?::text)";

/** Indexes `text` as the session's text at `turnSeq`; call it inside the write of what it indexes. */
export async function indexText(tx: Sql, dialect: Dialect, sessionId: string, turnSeq: number, text: string): Promise<void> {
  if (dialect.name === "postgres") {
    await tx.run(`INSERT INTO session_text (session_id, turn_seq, words) VALUES (?, ?, ${PG_WORDS})`, [sessionId, turnSeq, text.slice(0, INDEXED_CHARS)]);
    return;
  }
  const row = await tx.get<{ id: number }>("INSERT INTO session_text (session_id, turn_seq) VALUES (?, ?) RETURNING id", [sessionId, turnSeq]);
  await tx.run("INSERT INTO session_text_fts (rowid, body) VALUES (?, ?)", [row!.id, text.slice(0, INDEXED_CHARS)]);
}

/**
 * SQLite: the statements that index a turn's text inside the turn's batch, its number read
 * from the session row the batch bumped.
 */
export function sqliteTurnTextStatements(sessionId: string, text: string): SqlStatement[] {
  return [
    { sql: "INSERT INTO session_text (session_id, turn_seq) SELECT id, turn_count FROM sessions WHERE id = ?", params: [sessionId] },
    { sql: "INSERT INTO session_text_fts (rowid, body) VALUES (last_insert_rowid(), ?)", params: [text.slice(0, INDEXED_CHARS)] },
  ];
}

/** Replaces the indexed title (none when `title` is undefined); inside the session write. */
export async function indexTitle(tx: Sql, dialect: Dialect, sessionId: string, title: string | undefined): Promise<void> {
  await tx.run("DELETE FROM session_text WHERE session_id = ? AND turn_seq = ?", [sessionId, TITLE_SEQ]);
  if (title !== undefined && title !== "") await indexText(tx, dialect, sessionId, TITLE_SEQ, title);
}

/**
 * A condition on `sessions` that holds when every word occurs in one indexed text of the
 * session (its title, or one turn), answered by the full-text index. `words` must not be empty.
 */
export function textMatch(dialect: Dialect, words: readonly string[]): { sql: string; params: SqlValue[] } {
  if (dialect.name === "postgres") {
    return {
      // The matching ids are collected first (one GIN lookup), whatever the planner's statistics
      // say: as an IN subquery, a table it has not analysed yet could get a plan that repeats
      // the index lookup for every session of the tenant.
      sql: "sessions.id = ANY (ARRAY(SELECT x.session_id FROM session_text x WHERE x.words @@ plainto_tsquery('simple', ?::text)))",
      params: [words.join(" ")],
    };
  }
  // Each word a quoted FTS5 string: no word is read as an operator or column filter.
  const match = words.map((w) => `"${w.replaceAll('"', '""')}"`).join(" ");
  return {
    sql: "sessions.id IN (SELECT x.session_id FROM session_text x WHERE x.id IN (SELECT rowid FROM session_text_fts WHERE session_text_fts MATCH ?))",
    params: [match],
  };
}
