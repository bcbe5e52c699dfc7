/**
 * StreamSession in test vocabulary: request builders, typed access to responses, reading
 * a whole turn, and the ordering invariants of session-behaviour.md §1–§2 as checks.
 * Works with any `SessionClient` (see session-client.ts).
 */
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import {
  type StartSessionSchema,
  type SessionResponse,
  ToolCategoryHint,
  type ToolSchemaSchema,
  type UserMessageSchema,
} from "../../src/gen/roz/v1/agent_pb.js";
import type { SessionClient, SessionRequestInit } from "./session-client.ts";

export type StartInit = MessageInitShape<typeof StartSessionSchema>;
export type UserMessageInit = Omit<MessageInitShape<typeof UserMessageSchema>, "content" | "$typeName">;
export type ToolInit = MessageInitShape<typeof ToolSchemaSchema>;

/** Request builders, so tests read like the protocol. */
export const rq = {
  ping: (): SessionRequestInit => ({ request: { case: "ping", value: {} } }),
  start: (start: StartInit = {}): SessionRequestInit => ({ request: { case: "start", value: { environmentId: "", ...start } } }),
  user: (content: string, extra: UserMessageInit = {}): SessionRequestInit => ({ request: { case: "userMessage", value: { content, ...extra } } }),
  toolResult: (toolCallId: string, result: string, success = true): SessionRequestInit => ({
    request: { case: "toolResult", value: { toolCallId, success, result } },
  }),
  decision: (toolCallId: string, approved: boolean): SessionRequestInit => ({
    request: { case: "permissionDecision", value: { toolCallId, approved } },
  }),
  cancelTurn: (reason = "test"): SessionRequestInit => ({ request: { case: "cancelTurn", value: { reason } } }),
  cancelSession: (reason = "test"): SessionRequestInit => ({ request: { case: "cancelSession", value: { reason } } }),
  register: (tools: ToolInit[], source?: string, systemContext?: string): SessionRequestInit => ({
    request: {
      case: "registerTools",
      value: { tools, ...(source !== undefined ? { source } : {}), ...(systemContext !== undefined ? { systemContext } : {}) },
    },
  }),
};

/** A client tool: PURE when `pure`, with an optional own timeout and parameter schema. */
export function tool(name: string, options: { pure?: boolean; timeoutMs?: number; parameters?: JsonObject } = {}): ToolInit {
  return {
    name,
    description: `test tool ${name}`,
    ...(options.parameters ? { parametersSchema: options.parameters } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    category: options.pure ? ToolCategoryHint.TOOL_CATEGORY_PURE : ToolCategoryHint.TOOL_CATEGORY_UNSPECIFIED,
  };
}

export type ResponseCase = NonNullable<SessionResponse["response"]["case"]>;
export type ValueOf<K extends ResponseCase> = Extract<SessionResponse["response"], { case: K }>["value"];

const bigintSafe = (_key: string, value: unknown): unknown => (typeof value === "bigint" ? Number(value) : value);

/** A response as one readable line, for assertion messages. */
export function show(response: SessionResponse): string {
  const { $typeName: _t, ...value } = (response.response.value ?? {}) as Record<string, unknown>;
  return `#${response.seq} ${response.response.case}${JSON.stringify(value, bigintSafe)}`;
}

export const caseOf = (response: SessionResponse): ResponseCase | undefined => response.response.case;

/** The value of `response`, which must be a `kind`. */
export function responseValue<K extends ResponseCase>(response: SessionResponse, kind: K): ValueOf<K> {
  if (response.response.case !== kind) throw new Error(`expected ${kind}, got ${show(response)}`);
  return response.response.value as ValueOf<K>;
}

/** The values of every `kind` among `responses`, in order. */
export function valuesOf<K extends ResponseCase>(responses: readonly SessionResponse[], kind: K): ValueOf<K>[] {
  return responses.filter((r) => r.response.case === kind).map((r) => r.response.value as ValueOf<K>);
}

/** Skips to the next `kind` (keepalives and anything else in between are passed over). */
export async function nextOf<K extends ResponseCase>(client: SessionClient, kind: K, timeoutMs = 10_000): Promise<ValueOf<K>> {
  const response = await client.responses.nextMatching((r) => r.response.case === kind, timeoutMs);
  return response.response.value as ValueOf<K>;
}

/** Skips to the next `kind` whose value satisfies `match`. */
export async function nextWhere<K extends ResponseCase>(
  client: SessionClient,
  kind: K,
  match: (value: ValueOf<K>) => boolean,
  timeoutMs = 10_000,
): Promise<ValueOf<K>> {
  const response = await client.responses.nextMatching((r) => r.response.case === kind && match(r.response.value as ValueOf<K>), timeoutMs);
  return response.response.value as ValueOf<K>;
}

/** The next `activity_update{waiting_approval}`. */
export const nextApprovalQuestion = (client: SessionClient, timeoutMs?: number): Promise<ValueOf<"activityUpdate">> =>
  nextWhere(client, "activityUpdate", (a) => a.state === "waiting_approval", timeoutMs);

/** Sends `start` and reads `session_started` (which must come next, keepalives aside). */
export async function startSession(client: SessionClient, start: StartInit = {}): Promise<ValueOf<"sessionStarted">> {
  client.send(rq.start(start));
  const first = await client.responses.nextMatching((r) => r.response.case !== "keepalive", 10_000);
  return responseValue(first, "sessionStarted");
}

/** Reads up to and including the next `turn_complete`; returns everything read. */
export async function readTurn(client: SessionClient, timeoutMs = 20_000): Promise<SessionResponse[]> {
  const deadline = Date.now() + timeoutMs;
  const out: SessionResponse[] = [];
  for (;;) {
    const response = await client.next(Math.max(1, deadline - Date.now()));
    out.push(response);
    if (response.response.case === "turnComplete") return out;
  }
}

/** The `turn_complete` of a turn read by `readTurn` (its last response). */
export const turnCompleteOf = (turn: readonly SessionResponse[]): ValueOf<"turnComplete"> => responseValue(turn.at(-1)!, "turnComplete");

/** The text of every `text_delta`, joined. */
export const textOf = (responses: readonly SessionResponse[]): string =>
  valuesOf(responses, "textDelta")
    .map((d) => d.content)
    .join("");

/** A ping/pong round trip: everything the server emitted before the pong has been read when it returns. */
export async function barrier(client: SessionClient, timeoutMs = 10_000): Promise<SessionResponse[]> {
  client.send(rq.ping());
  const out: SessionResponse[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await client.next(Math.max(1, deadline - Date.now()));
    if (response.response.case === "pong") return out;
    out.push(response);
  }
}

/**
 * The §6 numbering: from `session_started` on, sequence numbers go up by exactly one.
 * Returns a problem description, or undefined when the numbering holds.
 */
export function sequenceProblem(responses: readonly SessionResponse[]): string | undefined {
  const start = responses.findIndex((r) => r.response.case === "sessionStarted");
  if (start < 0) return "no session_started";
  let expected = responses[start]!.seq;
  if (expected !== 1n) return `session_started has seq ${expected}, expected 1`;
  for (const response of responses.slice(start + 1)) {
    expected++;
    if (response.seq !== expected) return `expected seq ${expected}, got ${show(response)}`;
  }
  return undefined;
}
