/**
 * Store invariants checked straight on the database (both engines, portable SQL), over
 * every session ever stored: what a crash must never break whatever the clients saw.
 */
import type { DurabilityBackend, Row } from "./backend.ts";

const usageColumns = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"] as const;

const queries = {
  // Per session: its counters next to what its turns add up to.
  sessions: `SELECT s.id, s.status, s.ended_at, s.turn_count, ${usageColumns.map((c) => `s.${c}`).join(", ")},
      COUNT(t.seq) AS turns, COALESCE(MIN(t.seq), 1) AS min_seq, COALESCE(MAX(t.seq), 0) AS max_seq,
      ${usageColumns.map((c) => `COALESCE(SUM(t.${c}), 0) AS sum_${c}`).join(", ")}
    FROM sessions s LEFT JOIN turns t ON t.session_id = s.id
    GROUP BY s.id, s.status, s.ended_at, s.turn_count, ${usageColumns.map((c) => `s.${c}`).join(", ")}`,
  // A tool call must belong to a stored turn and have either a client result or an error.
  toolCalls: `SELECT c.session_id, c.turn_seq, c.idx, c.success, c.error, t.seq AS turn
    FROM tool_calls c LEFT JOIN turns t ON t.session_id = c.session_id AND t.seq = c.turn_seq
    WHERE t.seq IS NULL OR (c.success IS NULL AND c.error IS NULL)`,
  // Every stored turn ended with a known stop reason; an `error` one carries its error.
  turns: `SELECT session_id, seq, stop_reason, error FROM turns
    WHERE stop_reason NOT IN ('end_turn', 'max_tokens', 'max_cycles', 'cancelled', 'tool_error_limit', 'budget_exceeded', 'error')
       OR (stop_reason = 'error' AND error IS NULL)`,
  // The event log of a session is gap-free (pruning only removes its oldest events).
  events: `SELECT session_id, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM session_events GROUP BY session_id`,
} as const;

const num = (v: unknown): number => Number(v);

export interface StoreCheck {
  /** The engine's physical check: `["ok"]` when sound. */
  integrity: string[];
  /** Broken invariants, one line each (empty when all hold). */
  problems: string[];
  /** Sessions by status, e.g. `{ active: 4, completed: 1 }`. */
  statuses: Record<string, number>;
}

/** Runs the physical check and the invariants on the data as it is now (no server running). */
export async function checkStore(backend: DurabilityBackend): Promise<StoreCheck> {
  const { integrity, results } = await backend.inspect(Object.values(queries));
  const [sessions, toolCalls, turns, events] = results as [Row[], Row[], Row[], Row[]];
  const problems: string[] = [];
  const statuses: Record<string, number> = {};
  for (const s of sessions) {
    const status = String(s["status"]);
    statuses[status] = (statuses[status] ?? 0) + 1;
    const id = String(s["id"]);
    const count = num(s["turns"]);
    if (num(s["turn_count"]) !== count) problems.push(`session ${id}: turn_count ${s["turn_count"]} but ${count} turns stored`);
    if (count > 0 && (num(s["min_seq"]) !== 1 || num(s["max_seq"]) !== count)) {
      problems.push(`session ${id}: turn seqs ${s["min_seq"]}..${s["max_seq"]} for ${count} turns`);
    }
    for (const c of usageColumns) {
      if (num(s[c]) !== num(s[`sum_${c}`])) problems.push(`session ${id}: ${c} ${s[c]} but its turns add up to ${s[`sum_${c}`]}`);
    }
    const terminal = ["completed", "cancelled", "error"].includes(status);
    if (terminal !== (s["ended_at"] !== null)) problems.push(`session ${id}: status ${status} with ended_at ${s["ended_at"]}`);
  }
  for (const c of toolCalls) problems.push(`tool call ${JSON.stringify(c)}: no turn, or neither result nor error`);
  for (const t of turns) problems.push(`turn ${JSON.stringify(t)}: bad stop reason`);
  for (const e of events) {
    if (num(e["hi"]) - num(e["lo"]) + 1 !== num(e["n"])) problems.push(`events of ${e["session_id"]}: ${e["n"]} events over seqs ${e["lo"]}..${e["hi"]}`);
  }
  return { integrity, problems, statuses };
}
