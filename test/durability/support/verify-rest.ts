/**
 * What a restarted server must say through REST about sessions the clients ran before a
 * crash: every turn whose `turn_complete` a client saw is stored with that usage, stored
 * turns are whole and in order, and sessions that were running are `cancelled` (abandoned) with `ended_at`.
 */
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ConversationMessageSchema } from "../../../src/gen/roz/v1/agent_pb.js";
import { request } from "../../rest/support.ts";
import { addUsage, LOOKUP_TOOL, type PlannedTurn, tokensOf, type Usage, zeroUsage } from "./scripted-turns.ts";
import type { SessionLog } from "./workload.ts";

/** A turn in `GET /v1/sessions/{id}/messages?format=turns` (the fields checked here). */
interface RestTurn {
  seq: number;
  message_id: string;
  user: { content: string };
  assistant: { text: string };
  tool_calls: { id: string; name: string; parameters: unknown; success?: boolean; result?: string; error?: string }[];
  usage: Usage;
  stop_reason: string;
  error?: unknown;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Problems of one stored turn against its plan (empty when it is exactly what was planned). */
function turnProblems(stored: RestTurn, plan: PlannedTurn): string[] {
  const problems: string[] = [];
  const where = `turn ${stored.seq} (${plan.messageId})`;
  if (stored.message_id !== plan.messageId) problems.push(`${where}: stored message id ${stored.message_id}`);
  if (stored.user.content !== plan.content) problems.push(`${where}: user content differs`);
  if (stored.stop_reason !== "end_turn" || stored.error !== undefined) {
    problems.push(`${where}: stop_reason ${stored.stop_reason}, error ${JSON.stringify(stored.error)}`);
  }
  if (!same(tokensOf(stored.usage), plan.usage)) problems.push(`${where}: usage ${JSON.stringify(stored.usage)}, planned ${JSON.stringify(plan.usage)}`);
  if (stored.assistant.text !== plan.text) problems.push(`${where}: text ${JSON.stringify(stored.assistant.text)}, planned ${JSON.stringify(plan.text)}`);
  const expectedCalls = plan.tool ? [{ name: LOOKUP_TOOL, parameters: { key: plan.tool.key }, success: true, result: plan.tool.result }] : [];
  const calls = stored.tool_calls.map((c) => ({ name: c.name, parameters: c.parameters, success: c.success, result: c.result }));
  if (!same(calls, expectedCalls)) problems.push(`${where}: tool calls ${JSON.stringify(stored.tool_calls)}`);
  return problems;
}

/**
 * Checks one session of a crashed run through REST on `url`; returns its problems, one
 * line each (empty when everything holds).
 */
export async function sessionProblems(url: string, log: SessionLog): Promise<string[]> {
  const problems: string[] = [];
  const note = (text: string) => problems.push(`${log.kind} session ${log.sessionId}: ${text}`);
  const session = await request(url, "GET", `/v1/sessions/${log.sessionId}`);
  if (session.status !== 200) {
    note(`GET /v1/sessions/{id} answered ${session.status} ${session.text}`);
    return problems;
  }
  const transcript = await request(url, "GET", `/v1/sessions/${log.sessionId}/messages?format=both`);
  if (transcript.status !== 200) {
    note(`GET /v1/sessions/{id}/messages answered ${transcript.status} ${transcript.text}`);
    return problems;
  }
  const turns = transcript.json.turns as RestTurn[];

  // Status: a session that was running when the process died, and that nobody re-attached to, is abandoned.
  const expected = log.kind === "clean" ? { status: "completed", end_reason: "completed" } : { status: "cancelled", end_reason: "abandoned" };
  if (session.json.status !== expected.status || session.json.end_reason !== expected.end_reason) {
    note(`status ${session.json.status} (${session.json.end_reason}), expected ${expected.status} (${expected.end_reason})`);
  }
  if (session.json.ended_at === undefined || Date.parse(session.json.ended_at) < Date.parse(session.json.created_at)) {
    note(`ended_at ${session.json.ended_at} (created_at ${session.json.created_at})`);
  }

  // What the client saw is what the server said it stored.
  log.seen.forEach((seen, i) => {
    const plan = log.planned[i];
    if (plan === undefined || seen.messageId !== plan.messageId) note(`turn_complete #${i + 1} for ${seen.messageId}, sent ${plan?.messageId}`);
    else if (!same(seen.usage, plan.usage) || seen.stopReason !== "end_turn") {
      note(`turn_complete for ${seen.messageId}: ${JSON.stringify(seen)}, planned usage ${JSON.stringify(plan.usage)}`);
    }
  });

  // Stored turns: exactly the sent ones, in order, without gaps, each one whole. At most the
  // turn in flight at the kill may be stored without its turn_complete having reached us.
  const upper = log.kind === "clean" ? log.seen.length : Math.min(log.planned.length, log.seen.length + 1);
  if (turns.length < log.seen.length) note(`LOST TURNS: ${turns.length} stored, ${log.seen.length} turn_complete seen`);
  if (turns.length > upper) note(`${turns.length} turns stored, at most ${upper} expected (${log.planned.length} sent)`);
  turns.forEach((turn, i) => {
    if (turn.seq !== i + 1) note(`turn #${i + 1} has seq ${turn.seq}`);
    const plan = log.planned[i];
    if (plan === undefined) note(`turn ${turn.seq} (${turn.message_id}) was never sent`);
    else problems.push(...turnProblems(turn, plan).map((p) => `${log.kind} session ${log.sessionId}: ${p}`));
  });

  // Session totals agree with the stored turns (and so with every turn_complete seen).
  const total = turns.reduce((sum, t) => addUsage(sum, t.usage), zeroUsage());
  if (!same(tokensOf(session.json.usage), total)) note(`usage ${JSON.stringify(session.json.usage)}, its turns add up to ${JSON.stringify(total)}`);
  if (session.json.turn_count !== turns.length) note(`turn_count ${session.json.turn_count}, ${turns.length} turns stored`);

  // The conversation view is valid StartSession.history.
  try {
    for (const message of transcript.json.messages as JsonValue[]) fromJson(ConversationMessageSchema, message);
    if (turns.length > 0 && (transcript.json.messages as unknown[]).length === 0) note("no conversation messages for stored turns");
  } catch (err) {
    note(`conversation view does not parse: ${String(err)}`);
  }
  return problems;
}
