import type { TurnRecord } from "../../domain/index.ts";
import { stateWriteParts, type MessageRows, type NewSessionEvent, type TranscriptStore } from "../types.ts";
import type { SqlStatement, SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { EVENT_SEQ_CONFLICT, sqliteEventsStatement } from "./events.ts";
import { valuesChunks } from "./insert-rows.ts";
import { conflictAs } from "./rows.ts";
import { messageRowStatements, PG_MESSAGE_CTE, pgMessageParams, writeMessageRows } from "./session-state.ts";
import { PG_WORDS, sqliteTurnTextStatements, turnText } from "./session-text.ts";
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

/** One turn's write, as both engines' statements take it (besides its message rows). */
interface TurnWrite {
  sessionId: string;
  tenantId: string;
  values: { totals: SqlValue[]; turn: SqlValue[] };
  record: TurnRecord;
  events: readonly NewSessionEvent[];
  at: number;
}

function pgAppendTurnParams({ sessionId, tenantId, values, record, events, at }: TurnWrite, messages: SqlValue[]): SqlValue[] {
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

/** SQLite: a turn row, its number read from the session row the batch bumped. */
const SQLITE_INSERT_TURN = `INSERT INTO turns (${TURN_COLUMNS.join(", ")})
VALUES (?, (SELECT turn_count FROM sessions WHERE id = ?), ${TURN_FIELDS.map(() => "?").join(", ")})`;

/**
 * The whole turn write on SQLite, as one batch (one request to the connection's thread, one
 * transaction): the session row is bumped first, which checks ownership (nothing else is
 * written when it is not the tenant's) and numbers the turn, read back by every row after it;
 * its write lock serialises concurrent appends. The turn's events share the transaction: a
 * replay never shows a turn the store lacks.
 */
function sqliteAppendTurn({ sessionId, tenantId, values, record, events, at }: TurnWrite, messages: readonly MessageRows[]): SqlStatement[] {
  const toolCalls = valuesChunks(
    TOOL_CALL_FIELDS.length,
    record.toolCalls.map((c, i) => toolCallValues(i, c)),
  ).map(({ values: rows, params }) => ({
    sql: `INSERT INTO tool_calls (${TOOL_CALL_COLUMNS.join(", ")}) SELECT s.id, s.turn_count, v.* FROM sessions s, (${rows}) AS v WHERE s.id = ?`,
    params: [...params, sessionId],
  }));
  return [
    { sql: `UPDATE sessions SET ${SESSION_TOTALS} WHERE id = ? AND tenant_id = ?`, params: [...values.totals, sessionId, tenantId], mustChange: true },
    { sql: SQLITE_INSERT_TURN, params: [sessionId, sessionId, ...values.turn] },
    ...toolCalls,
    ...(events.length > 0 ? [sqliteEventsStatement(sessionId, events, at)] : []),
    ...sqliteTurnTextStatements(sessionId, turnText(record)),
    ...messageRowStatements(sessionId, messages),
  ];
}

const NO_ROWS: readonly MessageRows[] = [];

/** `TranscriptStore.appendTurn` over the shared SQL. */
export function appendTurnRepo({ db, now }: StoreContext): Pick<TranscriptStore, "appendTurn"> {
  return {
    appendTurn: (tenantId, sessionId, record, events = [], write) => {
      const at = now();
      const { state, messages } = write === undefined ? { state: undefined, messages: NO_ROWS } : stateWriteParts(write);
      const turn: TurnWrite = { sessionId, tenantId, values: turnValues(record, at, state), record, events, at };
      // Only the events can clash: the turn's own seq comes from the session row it locks.
      return conflictAs(db.dialect, EVENT_SEQ_CONFLICT, async () => {
        if (db.dialect.name === "postgres") {
          const inline = pgMessageParams(messages);
          const params = pgAppendTurnParams(turn, inline ?? (pgMessageParams(NO_ROWS) as SqlValue[]));
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
        const row = await db.batchThenGet<{ turn_count: number }>(sqliteAppendTurn(turn, messages), {
          sql: "SELECT turn_count FROM sessions WHERE id = ?",
          params: [sessionId],
        });
        return row === undefined ? undefined : Number(row.turn_count);
      });
    },
  };
}
