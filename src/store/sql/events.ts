import type { EventStore, NewSessionEvent, SessionEvent } from "../types.ts";
import type { Sql, SqlRow } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { insertRows } from "./insert-rows.ts";
import { conflictAs } from "./rows.ts";
import { ownsSession } from "./sessions.ts";

const DEFAULT_READ_LIMIT = 1000;
/** The `conflict` message of a batch that repeats a stored (or its own) seq. */
export const EVENT_SEQ_CONFLICT = "an event with this sequence number is already stored";

/**
 * Inserts a session's events, all stamped `at`; call it inside a transaction (a repeated
 * seq is a unique violation, which the caller maps with `conflictAs(…, EVENT_SEQ_CONFLICT, …)`).
 */
export function insertEvents(tx: Sql, sessionId: string, events: readonly NewSessionEvent[], at: number): Promise<void> {
  return insertRows(tx, "session_events", ["session_id", "seq", "payload", "created_at"], events.map((e) => [sessionId, e.seq, e.payload, at]));
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
          await insertEvents(tx, sessionId, events, now());
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

    async lastEventSeq(tenantId, sessionId) {
      if (!(await ownsSession(db, tenantId, sessionId))) return undefined;
      const row = await db.get("SELECT MAX(seq) AS seq FROM session_events WHERE session_id = ?", [sessionId]);
      return Number(row?.seq ?? 0);
    },

    async pruneEvents(at = now()) {
      // Sessions ended long enough ago lose their whole log.
      const expired = await db.run(
        `DELETE FROM session_events WHERE session_id IN
           (SELECT id FROM sessions WHERE ended_at IS NOT NULL AND ended_at <= ?)`,
        [at - retention.keepAfterEndMs],
      );
      // Every other session keeps its newest N events (by seq, which the caller assigns in order).
      const overflow = await db.run(
        `DELETE FROM session_events WHERE seq <=
           (SELECT MAX(e.seq) FROM session_events e WHERE e.session_id = session_events.session_id) - ?`,
        [retention.maxEventsPerSession],
      );
      return expired + overflow;
    },
  };
}
