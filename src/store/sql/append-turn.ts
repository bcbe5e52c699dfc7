import type { TurnRecord } from "../../domain/index.ts";
import { stateWriteParts, type MessageRows, type NewSessionEvent, type TranscriptStore } from "../types.ts";
import type { SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { EVENT_SEQ_CONFLICT, insertEvents } from "./events.ts";
import { insertRows } from "./insert-rows.ts";
import { conflictAs } from "./rows.ts";
import { PG_MESSAGE_CTE, pgMessageParams, writeMessageRows } from "./session-state.ts";
import { indexText, PG_WORDS, turnText } from "./session-text.ts";
import { SESSION_TOTALS, TOOL_CALL_COLUMNS, TOOL_CALL_FIELDS, TURN_COLUMNS, TURN_FIELDS, toolCallValues, turnValues } from "./turns.ts";

/**
 * The whole turn write as one Postgres statement: the session row is bumped (its row lock
 * numbers the turn and serialises appends), then the turn, its tool calls, its events, its
 * search text and the session's changed message rows are written (from arrays). No row when
 * the session is unknown or another tenant's.
 */
const PG_APPEND_TURN = `WITH s AS (
  UPDATE sessions SET ${SESSION_TOTALS} WHERE id = ? AND tenant_id = ? RETURNING id, turn_count
), t AS (
  INSERT INTO turns (${TURN_COLUMNS.join(", ")})
  SELECT s.id, s.turn_count, ${TURN_FIELDS.map(([, type]) => `?::${type}`).join(", ")} FROM s
), c AS (
  INSERT INTO tool_calls (${TOOL_CALL_COLUMNS.join(", ")})
  SELECT s.id, s.turn_count, x.* FROM s, unnest(${TOOL_CALL_FIELDS.map(([, type]) => `?::${type}[]`).join(", ")}) AS x
), e AS (
  INSERT INTO session_events (session_id, seq, payload, created_at)
  SELECT s.id, x.seq, x.payload, ?::bigint FROM s, unnest(?::bigint[], ?::bytea[]) AS x (seq, payload)
), w AS (
  INSERT INTO session_text (session_id, turn_seq, words) SELECT s.id, s.turn_count, ${PG_WORDS} FROM s
), ${PG_MESSAGE_CTE}
SELECT turn_count FROM s`;

function pgAppendTurnParams(
  sessionId: string,
  tenantId: string,
  values: { totals: SqlValue[]; turn: SqlValue[] },
  record: TurnRecord,
  events: readonly NewSessionEvent[],
  at: number,
  messages: SqlValue[],
): SqlValue[] {
  // One array per tool-call field (session_id and turn_seq come from `s`).
  const rows = record.toolCalls.map((c, i) => toolCallValues(i, c));
  const columns = TOOL_CALL_FIELDS.map((_, col) => rows.map((row) => row[col] ?? null));
  // node-pg sends JS arrays as Postgres arrays; SqlValue has no array case of its own.
  const arrays = (list: unknown[]): SqlValue => list as unknown as SqlValue;
  return [
    ...values.totals,
    sessionId,
    tenantId,
    ...values.turn,
    ...columns.map(arrays),
    at,
    arrays(events.map((e) => e.seq)),
    arrays(events.map((e) => e.payload)),
    turnText(record),
    ...messages,
  ];
}

const NO_ROWS: readonly MessageRows[] = [];

/** `TranscriptStore.appendTurn` over the shared SQL. */
export function appendTurnRepo({ db, now }: StoreContext): Pick<TranscriptStore, "appendTurn"> {
  return {
    appendTurn: (tenantId, sessionId, record, events = [], write) => {
      const at = now();
      const { state, messages } = write === undefined ? { state: undefined, messages: NO_ROWS } : stateWriteParts(write);
      const values = turnValues(record, at, state);
      // Only the events can clash: the turn's own seq comes from the session row it locks.
      return conflictAs(db.dialect, EVENT_SEQ_CONFLICT, async () => {
        if (db.dialect.name === "postgres") {
          const inline = pgMessageParams(messages);
          const params = pgAppendTurnParams(sessionId, tenantId, values, record, events, at, inline ?? (pgMessageParams(NO_ROWS) as SqlValue[]));
          // One statement, one round trip, atomic by itself (a turn write is on every turn's path).
          if (inline !== undefined) {
            const row = await db.get<{ turn_count: number }>(PG_APPEND_TURN, params);
            return row === undefined ? undefined : Number(row.turn_count);
          }
          // Large messages and truncated lists are written by statements of their own, in the turn's transaction.
          return db.transaction(async (tx) => {
            const row = await tx.get<{ turn_count: number }>(PG_APPEND_TURN, params);
            if (row === undefined) return undefined;
            await writeMessageRows(tx, sessionId, messages);
            return Number(row.turn_count);
          });
        }
        return db.transaction(async (tx) => {
          // Bumping the session first both checks ownership and numbers the turn: the write
          // lock it takes serialises concurrent appends.
          const session = await tx.get<{ turn_count: number }>(`UPDATE sessions SET ${SESSION_TOTALS} WHERE id = ? AND tenant_id = ? RETURNING turn_count`, [
            ...values.totals,
            sessionId,
            tenantId,
          ]);
          if (session === undefined) return undefined;
          const seq = Number(session.turn_count);
          await tx.run(`INSERT INTO turns (${TURN_COLUMNS.join(", ")}) VALUES (${TURN_COLUMNS.map(() => "?").join(", ")})`, [sessionId, seq, ...values.turn]);
          await insertRows(
            tx,
            "tool_calls",
            TOOL_CALL_COLUMNS,
            record.toolCalls.map((c, i) => [sessionId, seq, ...toolCallValues(i, c)]),
          );
          // The turn's events share its transaction: a replay never shows a turn the store lacks.
          await insertEvents(tx, db.dialect, sessionId, events, at);
          await indexText(tx, db.dialect, sessionId, seq, turnText(record));
          await writeMessageRows(tx, sessionId, messages);
          return seq;
        });
      });
    },
  };
}
