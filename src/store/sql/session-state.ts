import { TextParts } from "../../domain/index.ts";
import { type MessageList, type MessageRows, type MessageStore, type SessionStore, stateWriteParts, type StoredMessages } from "../types.ts";
import type { Sql, SqlStatement, SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { insertStatements } from "./insert-rows.ts";
import { ownsSession } from "./sessions.ts";

/** How each list is numbered in `session_messages.list`. */
const LIST_CODES: Record<MessageList, number> = { history: 0, start: 1 };
const LISTS = Object.keys(LIST_CODES) as MessageList[];

const MESSAGE_COLUMNS = ["session_id", "list", "position", "message"];
/** A row written again (a write whose commit was not seen, a rewritten message) replaces the stored one. */
const UPSERT = "ON CONFLICT (session_id, list, position) DO UPDATE SET message = excluded.message";

/**
 * The statements that write `rows` for the session (to run in the transaction of the write
 * they belong to): per list, when it is truncated, the rows past the given ones deleted; then
 * every list's rows in one upsert (the lists are independent, and each truncation is done).
 */
export function messageRowStatements(sessionId: string, rows: readonly MessageRows[]): SqlStatement[] {
  const truncations = rows
    .filter((r) => r.truncate)
    .map((r) => ({
      sql: "DELETE FROM session_messages WHERE session_id = ? AND list = ? AND position >= ?",
      params: [sessionId, LIST_CODES[r.list], r.from + r.messages.length],
    }));
  const values = rows.flatMap((r) => r.messages.map((message, i): SqlValue[] => [sessionId, LIST_CODES[r.list], r.from + i, message]));
  return [...truncations, ...insertStatements("session_messages", MESSAGE_COLUMNS, values, UPSERT)];
}

/** Writes `rows` for the session with `q`, inside the transaction of the write they belong to (see `messageRowStatements`). */
export async function writeMessageRows(q: Sql, sessionId: string, rows: readonly MessageRows[]): Promise<void> {
  for (const { sql, params } of messageRowStatements(sessionId, rows)) await q.run(sql, params);
}

/**
 * The message rows of a PostgreSQL turn write, as a CTE over the locked session row `s`
 * (parameters: `pgMessageParams`): the given rows upserted, from arrays, so that the
 * statement's text is always the same.
 */
export const PG_MESSAGE_CTE = `m AS (
  INSERT INTO session_messages (${MESSAGE_COLUMNS.join(", ")})
  SELECT s.id, x.list, x.position, x.message FROM s, unnest(?::smallint[], ?::integer[], ?::text[]) AS x (list, position, message)
  ${UPSERT}
)`;

/**
 * The parameters of `PG_MESSAGE_CTE`; undefined when the rows need statements of their own
 * (`writeMessageRows`): a truncated list (compaction, rollback: rare), or a message held as
 * parts (a large one), which an array parameter would build into one escaped string on the
 * event loop, where a statement of its own sends it as UTF-8.
 */
export function pgMessageParams(rows: readonly MessageRows[]): SqlValue[] | undefined {
  if (rows.some((r) => r.truncate || r.messages.some((m) => m instanceof TextParts))) return undefined;
  // node-pg sends JS arrays as Postgres arrays; SqlValue has no array case of its own.
  const array = (list: unknown[]): SqlValue => list as unknown as SqlValue;
  const all = rows.flatMap((r) => r.messages.map((message, i) => ({ list: LIST_CODES[r.list], position: r.from + i, message })));
  return [array(all.map((m) => m.list)), array(all.map((m) => m.position)), array(all.map((m) => m.message))];
}

/** A session's state: its state row (`sessions.state`) and its message rows. */
export function sessionStateRepo({ db, now }: StoreContext): MessageStore & Pick<SessionStore, "saveSessionState"> {
  return {
    async saveSessionState(tenantId, id, write) {
      const { state, messages } = stateWriteParts(write);
      const save: SqlStatement = {
        sql: "UPDATE sessions SET state = ?, updated_at = ? WHERE tenant_id = ? AND id = ?",
        params: [state, now(), tenantId, id],
        mustChange: true,
      };
      if (messages.length === 0) return (await db.run(save.sql, save.params)) > 0;
      // One batch (one round trip on SQLite); no message row for a session that is not the tenant's.
      const [saved = 0] = await db.batch([save, ...messageRowStatements(id, messages)]);
      return saved > 0;
    },

    async listSessionMessages(tenantId, sessionId) {
      if (!(await ownsSession(db, tenantId, sessionId))) return undefined;
      const rows = await db.all<{ list: number; message: string }>("SELECT list, message FROM session_messages WHERE session_id = ? ORDER BY list, position", [
        sessionId,
      ]);
      const lists: StoredMessages = { history: [], start: [] };
      for (const row of rows) {
        const list = LISTS.find((name) => LIST_CODES[name] === Number(row.list));
        if (list !== undefined) lists[list].push(String(row.message));
      }
      return lists;
    },
  };
}
