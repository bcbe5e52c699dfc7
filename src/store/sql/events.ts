import type { EventStore, NewSessionEvent, SessionEvent } from "../types.ts";
import type { Dialect, Sql, SqlRow, SqlStatement } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { insertRows } from "./insert-rows.ts";
import { conflictAs } from "./rows.ts";
import { ownsSession } from "./sessions.ts";

const DEFAULT_READ_LIMIT = 1000;
/** The `conflict` message of a batch that repeats a stored (or its own) seq. */
export const EVENT_SEQ_CONFLICT = "an event with this sequence number is already stored";

/**
 * SQLite: a batch of events as one statement of constant text (prepared once) with four
 * parameters: the payloads joined into one blob, and a JSON list of `[seq, offset, length]`
 * cutting it up (`substr` counts bytes in a blob, from 1).
 */
const SQLITE_INSERT_EVENTS = `INSERT INTO session_events (session_id, seq, payload, created_at)
SELECT ?, j.value ->> 0, substr(?, j.value ->> 1, j.value ->> 2), ? FROM json_each(?) AS j`;

/** SQLite: the statement that inserts a session's events (one or more), all stamped `at`. */
export function sqliteEventsStatement(sessionId: string, events: readonly NewSessionEvent[], at: number): SqlStatement {
  return { sql: SQLITE_INSERT_EVENTS, params: sqliteEventParams(sessionId, events, at) };
}

function sqliteEventParams(sessionId: string, events: readonly NewSessionEvent[], at: number): [string, Uint8Array, number, string] {
  const blob = Buffer.concat(events.map((e) => e.payload));
  const cuts: [number, number, number][] = [];
  let offset = 1;
  for (const e of events) {
    cuts.push([e.seq, offset, e.payload.length]);
    offset += e.payload.length;
  }
  return [sessionId, blob, at, JSON.stringify(cuts)];
}

/**
 * Inserts a session's events, all stamped `at`; call it inside a transaction (a repeated
 * seq is a unique violation, which the caller maps with `conflictAs(…, EVENT_SEQ_CONFLICT, …)`).
 */
export async function insertEvents(tx: Sql, dialect: Dialect, sessionId: string, events: readonly NewSessionEvent[], at: number): Promise<void> {
  if (events.length === 0) return;
  if (dialect.name === "sqlite") {
    const { sql, params } = sqliteEventsStatement(sessionId, events, at);
    await tx.run(sql, params);
    return;
  }
  await insertRows(
    tx,
    "session_events",
    ["session_id", "seq", "payload", "created_at"],
    events.map((e) => [sessionId, e.seq, e.payload, at]),
  );
}

const eventOf = (row: SqlRow): SessionEvent => ({
  seq: Number(row.seq),
  payload: row.payload as Uint8Array,
  createdAt: Number(row.created_at),
});

export function eventRepo({ db, now, retention }: StoreContext): EventStore {
  return {
    appendEvents(tenantId, sessionId, events) {
      return conflictAs(db.dialect, EVENT_SEQ_CONFLICT, () =>
        db.transaction(async (tx) => {
          if (!(await ownsSession(tx, tenantId, sessionId))) return false;
          await insertEvents(tx, db.dialect, sessionId, events, now());
          return true;
        }),
      );
    },

    async readEvents(tenantId, sessionId, range = {}) {
      if (!(await ownsSession(db, tenantId, sessionId))) return undefined;
      const rows = await db.all("SELECT * FROM session_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?", [
        sessionId,
        range.afterSeq ?? 0,
        range.limit ?? DEFAULT_READ_LIMIT,
      ]);
      return rows.map(eventOf);
    },

    async eventsPrunedThrough(tenantId, sessionId) {
      const row = await db.get("SELECT events_pruned_through AS seq FROM sessions WHERE tenant_id = ? AND id = ?", [tenantId, sessionId]);
      return row === undefined ? undefined : Number(row.seq);
    },

    async lastEventSeq(tenantId, sessionId) {
      if (!(await ownsSession(db, tenantId, sessionId))) return undefined;
      const row = await db.get("SELECT MAX(seq) AS seq FROM session_events WHERE session_id = ?", [sessionId]);
      return Number(row?.seq ?? 0);
    },

    pruneEvents(at = now()) {
      // Each deletion first records how far it goes (`events_pruned_through`), so a re-attach
      // from before that point is told its events expired: keepalive seqs were never stored,
      // so a hole in the seqs alone cannot say so.
      const endedBefore = at - retention.keepAfterEndMs;
      const overflowFloor = `(SELECT MAX(x.seq) FROM session_events x WHERE x.session_id = sessions.id) - ?`;
      return db.transaction(async (tx) => {
        // Sessions ended long enough ago lose their whole log.
        await tx.run(
          `UPDATE sessions SET events_pruned_through = (SELECT MAX(e.seq) FROM session_events e WHERE e.session_id = sessions.id)
           WHERE ended_at IS NOT NULL AND ended_at <= ? AND EXISTS (SELECT 1 FROM session_events e WHERE e.session_id = sessions.id)`,
          [endedBefore],
        );
        const expired = await tx.run(
          `DELETE FROM session_events WHERE session_id IN
             (SELECT id FROM sessions WHERE ended_at IS NOT NULL AND ended_at <= ?)`,
          [endedBefore],
        );
        // Every other session keeps its newest N events (by seq, which the caller assigns in order).
        await tx.run(
          `UPDATE sessions SET events_pruned_through =
             (SELECT MAX(e.seq) FROM session_events e WHERE e.session_id = sessions.id AND e.seq <= ${overflowFloor})
           WHERE EXISTS (SELECT 1 FROM session_events e WHERE e.session_id = sessions.id AND e.seq <= ${overflowFloor})`,
          [retention.maxEventsPerSession, retention.maxEventsPerSession],
        );
        const overflow = await tx.run(
          `DELETE FROM session_events WHERE seq <=
             (SELECT MAX(e.seq) FROM session_events e WHERE e.session_id = session_events.session_id) - ?`,
          [retention.maxEventsPerSession],
        );
        return expired + overflow;
      });
    },
  };
}
