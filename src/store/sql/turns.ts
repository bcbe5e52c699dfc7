import type { ContextBlock, JsonObject, SteeredInput, StoredText, ThinkingRecord, ToolCallRecord, TurnRecord } from "../../domain/index.ts";
import type { StoredTurn, TranscriptStore, TurnOrigin } from "../types.ts";
import type { SqlRow, SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { fromJson, opt, optNum, toJson, usageOf } from "./rows.ts";
import { ownsSession } from "./sessions.ts";

/** A context block as JSON: binary data travels as base64. */
type StoredBlock = { label?: string; text: string } | { label?: string; mimeType: string; data: string };

const storeBlock = (b: ContextBlock): StoredBlock => ("text" in b ? b : { label: b.label, mimeType: b.mimeType, data: Buffer.from(b.data).toString("base64") });

type StoredSteer = Omit<SteeredInput, "context"> & { context: StoredBlock[] };

const storeSteer = (s: SteeredInput): StoredSteer => ({ ...s, context: s.context.map(storeBlock) });
const loadSteer = (s: StoredSteer): SteeredInput => ({ ...s, context: s.context.map(loadBlock) });

function loadBlock(b: StoredBlock): ContextBlock {
  if ("text" in b) return b;
  const data = Buffer.from(b.data, "base64");
  return { label: b.label, mimeType: b.mimeType, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/**
 * The columns of a tool-call row after `session_id, turn_seq` (which every row keys by),
 * with their Postgres types: one list, so the SQLite insert and the Postgres arrays agree.
 */
export const TOOL_CALL_FIELDS = [
  ["idx", "integer"],
  ["tool_call_id", "text"],
  ["name", "text"],
  ["parameters", "text"],
  ["permission", "text"],
  ["success", "smallint"],
  ["result", "text"],
  ["exit_code", "integer"],
  ["truncated", "smallint"],
  ["duration_ms", "bigint"],
  ["error", "text"],
  ["started_at", "bigint"],
  ["ended_at", "bigint"],
] as const;
export const TOOL_CALL_COLUMNS = ["session_id", "turn_seq", ...TOOL_CALL_FIELDS.map(([name]) => name)];

/** A tool call's values for `TOOL_CALL_FIELDS`, in order. */
export const toolCallValues = (idx: number, c: ToolCallRecord): SqlValue[] => [
  idx,
  c.id,
  c.name,
  toJson(c.parameters),
  c.permission,
  c.outcome === undefined ? null : c.outcome.success ? 1 : 0,
  c.outcome?.result,
  c.outcome?.exitCode,
  c.outcome === undefined ? null : c.outcome.truncated ? 1 : 0,
  c.outcome?.durationMs,
  c.error,
  c.startedAt,
  c.endedAt,
];

function toolCallOf(row: SqlRow): ToolCallRecord {
  const call: ToolCallRecord = {
    id: String(row.tool_call_id),
    name: String(row.name),
    parameters: fromJson<JsonObject>(row.parameters),
    permission: row.permission as ToolCallRecord["permission"],
    startedAt: Number(row.started_at),
    endedAt: Number(row.ended_at),
  };
  if (row.success !== null) {
    call.outcome = {
      success: Number(row.success) === 1,
      result: String(row.result ?? ""),
      exitCode: optNum(row.exit_code),
      truncated: Number(row.truncated) === 1,
      durationMs: optNum(row.duration_ms),
    };
  }
  if (row.error !== null) call.error = String(row.error);
  return call;
}

function turnOf(row: SqlRow, toolCalls: ToolCallRecord[]): StoredTurn {
  const turn: StoredTurn = {
    sessionId: String(row.session_id),
    seq: Number(row.seq),
    messageId: String(row.message_id),
    userContent: String(row.user_content),
    userContext: fromJson<StoredBlock[]>(row.user_context).map(loadBlock),
    mode: row.mode as TurnRecord["mode"],
    assistantText: String(row.assistant_text),
    assistantThinking: String(row.assistant_thinking),
    assistantThinkingBlocks: fromJson<ThinkingRecord[]>(row.assistant_thinking_blocks),
    toolCalls,
    usage: usageOf(row),
    costUsd: Number(row.cost_usd ?? 0),
    stopReason: row.stop_reason as TurnRecord["stopReason"],
    compactions: Number(row.compactions),
    startedAt: Number(row.started_at),
    endedAt: Number(row.ended_at),
    turn: optNum(row.turn) ?? Number(row.seq),
    rolledBack: Number(row.rolled_back) === 1,
  };
  const error = opt(row.error as string | null);
  if (error !== undefined) turn.error = fromJson<NonNullable<TurnRecord["error"]>>(error);
  if (row.forked_from_session !== null) turn.forkedFrom = { sessionId: String(row.forked_from_session), turn: Number(row.forked_from_turn) };
  const steered = fromJson<StoredSteer[]>(row.steered ?? "[]");
  if (steered.length > 0) turn.steered = steered.map(loadSteer);
  return turn;
}

/** The session totals a turn adds to (parameters: `turnValues(…).totals`). */
export const SESSION_TOTALS = `turn_count = turn_count + 1, compaction_count = compaction_count + ?,
  input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
  cache_read_tokens = cache_read_tokens + ?, cache_creation_tokens = cache_creation_tokens + ?, cost_usd = cost_usd + ?, updated_at = ?,
  state = COALESCE(?, state)`;

/** The columns of a turn row after `session_id, seq`, with their Postgres types (see `TOOL_CALL_FIELDS`). */
export const TURN_FIELDS = [
  ["message_id", "text"],
  ["user_content", "text"],
  ["user_context", "text"],
  ["mode", "text"],
  ["assistant_text", "text"],
  ["assistant_thinking", "text"],
  ["assistant_thinking_blocks", "text"],
  ["input_tokens", "bigint"],
  ["output_tokens", "bigint"],
  ["cache_read_tokens", "bigint"],
  ["cache_creation_tokens", "bigint"],
  ["stop_reason", "text"],
  ["error", "text"],
  ["compactions", "integer"],
  ["started_at", "bigint"],
  ["ended_at", "bigint"],
  ["turn", "integer"],
  ["rolled_back", "smallint"],
  ["forked_from_session", "text"],
  ["forked_from_turn", "integer"],
  ["steered", "text"],
  ["cost_usd", "double precision"],
] as const;
export const TURN_COLUMNS = ["session_id", "seq", ...TURN_FIELDS.map(([name]) => name)];

/** A turn's parameters: the session totals, and its values for `TURN_FIELDS` (`origin`: a fork's copy). */
export function turnValues(record: TurnRecord, at: number, state: StoredText | undefined, origin?: TurnOrigin): { totals: SqlValue[]; turn: SqlValue[] } {
  const { usage } = record;
  return {
    totals: [record.compactions, usage.inputTokens, usage.outputTokens, usage.cacheReadTokens, usage.cacheCreationTokens, record.costUsd, at, state ?? null],
    turn: [
      record.messageId,
      record.userContent,
      toJson(record.userContext.map(storeBlock)),
      record.mode,
      record.assistantText,
      record.assistantThinking,
      toJson(record.assistantThinkingBlocks),
      usage.inputTokens,
      usage.outputTokens,
      usage.cacheReadTokens,
      usage.cacheCreationTokens,
      record.stopReason,
      record.error === undefined ? null : toJson(record.error),
      record.compactions,
      record.startedAt,
      record.endedAt,
      record.turn,
      record.rolledBack ? 1 : 0,
      origin?.sessionId,
      origin?.turn,
      toJson((record.steered ?? []).map(storeSteer)),
      record.costUsd,
    ],
  };
}

/** Reading turns; `append-turn.ts` writes them. */
export function turnRepo({ db }: StoreContext): Pick<TranscriptStore, "listTurns"> {
  return {
    async listTurns(tenantId, sessionId, range = {}) {
      if (!(await ownsSession(db, tenantId, sessionId))) return undefined;
      const afterSeq = range.afterSeq ?? 0;
      const limited = range.limit !== undefined;
      const rows = await db.all(
        `SELECT * FROM turns WHERE session_id = ? AND seq > ? ORDER BY seq${limited ? " LIMIT ?" : ""}`,
        limited ? [sessionId, afterSeq, range.limit] : [sessionId, afterSeq],
      );
      if (rows.length === 0) return [];
      // Turns never change once written, so the tool calls of the same seq range match them.
      const calls = await db.all("SELECT * FROM tool_calls WHERE session_id = ? AND turn_seq >= ? AND turn_seq <= ? ORDER BY turn_seq, idx", [
        sessionId,
        Number(rows[0]!.seq),
        Number(rows.at(-1)!.seq),
      ]);
      const bySeq = new Map<number, ToolCallRecord[]>();
      for (const call of calls) {
        const seq = Number(call.turn_seq);
        const list = bySeq.get(seq) ?? [];
        list.push(toolCallOf(call));
        bySeq.set(seq, list);
      }
      return rows.map((row) => turnOf(row, bySeq.get(Number(row.seq)) ?? []));
    },
  };
}
