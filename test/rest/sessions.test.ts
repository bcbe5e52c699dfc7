// /v1/sessions and /metrics after real sessions ran over gRPC (scripted model).
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConversationMessageSchema, type SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import type { ConnectSession } from "../server/connect-session.ts";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, request, startAuthServer, startSession, type TestKey } from "./support.ts";

let server: TestServer;
let key: TestKey;
let api: ReturnType<typeof client>;
let environmentId: string;
let toolSessionId: string;

const usage = { input_tokens: 100, output_tokens: 20, cache_read_tokens: 30, cache_creation_tokens: 5 };
const script = {
  responses: [[{ thinking: "need the file" }, { tool_call: { id: "call-1", name: "read_file", arguments: { path: "a.txt" } } }], [{ text: "done" }]],
  usage,
};
const tools = [{ name: "read_file", description: "reads a file", parametersSchema: { type: "object" } }];

type Response = SessionResponse["response"];
type ValueOf<C> = Extract<Response, { case: C }> extends { value: infer V } ? V : never;

/** Skips responses until one of `kind` arrives. */
async function nextOf<C extends NonNullable<Response["case"]>>(session: ConnectSession, kind: C): Promise<ValueOf<C>> {
  for (;;) {
    const r = (await session.next(10_000)).response;
    if (r.case === kind) return r.value as ValueOf<C>;
  }
}

const sessionIdOf = (first: SessionResponse): string => (first.response.case === "sessionStarted" ? first.response.value.sessionId : "");

beforeAll(async () => {
  server = await startAuthServer();
  key = await makeKey(server, "acme");
  api = client(server, key.secret);
  environmentId = (await api.post("/v1/environments", { body: { name: "work", permissions: [{ tool_pattern: "rm_*", policy: "deny" }] } })).json.id;

  // One session with a turn that called a tool, ended by half-close.
  const { first, session } = await startSession(server.url, key.secret, { environmentId, tools, hostId: "laptop" });
  toolSessionId = sessionIdOf(first);
  session.send({ request: { case: "userMessage", value: { content: `script:${JSON.stringify(script)}`, messageId: "m1" } } });
  const call = await nextOf(session, "toolRequest");
  session.send({ request: { case: "toolResult", value: { toolCallId: call.toolCallId, success: true, result: "file body", exitCode: 0, durationMs: 12n } } });
  await nextOf(session, "turnComplete");
  session.end();
  expect(await session.done).toBeUndefined();
});
afterAll(async () => {
  await server?.close();
});

describe("GET /v1/sessions/{id}", () => {
  it("reports status, model, host, turns and usage with cache tokens", async () => {
    const reply = await api.get(`/v1/sessions/${toolSessionId}`);
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({
      id: toolSessionId,
      environment_id: environmentId,
      model: "scripted/default",
      status: "completed",
      host_id: "laptop",
      turn_count: 1,
      compaction_count: 0,
      usage: { input_tokens: 200, output_tokens: 40, cache_read_tokens: 60, cache_creation_tokens: 10 },
    });
    expect(Date.parse(reply.json.ended_at)).toBeGreaterThanOrEqual(Date.parse(reply.json.created_at));
  });
});

describe("GET /v1/sessions/{id}/messages", () => {
  it("returns the transcript as ConversationMessage JSON (snake_case, like the rest of REST) and as turns", async () => {
    const reply = await api.get(`/v1/sessions/${toolSessionId}/messages`);
    expect(reply.status).toBe(200);
    expect(reply.json.messages).toEqual([
      { role: "user", parts: [{ text: { text: `script:${JSON.stringify(script)}` } }] },
      {
        role: "assistant",
        parts: [{ thinking: { thinking: "need the file" } }, { tool_use: { id: "call-1", name: "read_file", input: { path: "a.txt" } } }],
      },
      { role: "user", parts: [{ tool_result: { tool_use_id: "call-1", name: "read_file", content: "file body" } }] },
      { role: "assistant", parts: [{ text: { text: "done" } }] },
    ]);
    const [turn] = reply.json.turns;
    expect(turn).toMatchObject({
      seq: 1,
      message_id: "m1",
      mode: "react",
      assistant: { text: "done", thinking: "need the file" },
      stop_reason: "end_turn",
      usage: { input_tokens: 200, cache_read_tokens: 60 },
    });
    expect(turn.tool_calls).toEqual([
      expect.objectContaining({
        id: "call-1",
        name: "read_file",
        parameters: { path: "a.txt" },
        permission: "allowed",
        success: true,
        result: "file body",
        exit_code: 0,
        duration_ms: 12,
      }),
    ]);
  });

  it("can be pasted into StartSession.history", async () => {
    const { messages } = (await api.get(`/v1/sessions/${toolSessionId}/messages?format=conversation`)).json as { messages: JsonValue[] };
    const history = messages.map((m) => fromJson(ConversationMessageSchema, m));
    const { first, session } = await startSession(server.url, key.secret, { environmentId, history });
    expect(first.response.case).toBe("sessionStarted");
    session.end();
    expect(await session.done).toBeUndefined();
  });

  it("format selects the views", async () => {
    const conversation = await api.get(`/v1/sessions/${toolSessionId}/messages?format=conversation`);
    expect(conversation.json.turns).toBeUndefined();
    const turns = await api.get(`/v1/sessions/${toolSessionId}/messages?format=turns`);
    expect(turns.json.messages).toBeUndefined();
    expect(turns.json.turns).toHaveLength(1);
    expect((await api.get(`/v1/sessions/${toolSessionId}/messages?format=xml`)).status).toBe(400);
  });
});

describe("GET /v1/sessions", () => {
  it("filters by status and environment and pages newest first without repeats", async () => {
    for (let i = 0; i < 3; i++) {
      const { session } = await startSession(server.url, key.secret);
      session.end();
      await session.done;
    }
    const all: { id: string; created_at: string }[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.get(`/v1/sessions?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.json.items.length).toBeLessThanOrEqual(2);
      all.push(...page.json.items);
      cursor = page.json.next_cursor;
    } while (cursor);
    expect(new Set(all.map((s) => s.id)).size).toBe(all.length);
    expect(all.length).toBeGreaterThanOrEqual(5);
    const times = all.map((s) => Date.parse(s.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const inEnv = (await api.get(`/v1/sessions?environment_id=${environmentId}`)).json.items.map((s: { id: string }) => s.id);
    expect(inEnv).toContain(toolSessionId);
    expect(inEnv.length).toBeLessThan(all.length);
    expect((await api.get("/v1/sessions?status=completed")).json.items.map((s: { id: string }) => s.id)).toContain(toolSessionId);
    expect((await api.get("/v1/sessions?status=active")).json.items.map((s: { id: string }) => s.id)).not.toContain(toolSessionId);
  });
});

describe("DELETE /v1/sessions/{id}", () => {
  it("ends a live session (cancelled) and keeps its record", async () => {
    const { first, session } = await startSession(server.url, key.secret);
    const id = sessionIdOf(first);
    expect(server.app.registry.get(key.tenantId, id)).toBeDefined();
    expect((await api.get(`/v1/sessions/${id}`)).json.status).toBe("active");
    const reply = await api.delete(`/v1/sessions/${id}`);
    expect(reply.status).toBe(204);
    expect(reply.text).toBe("");
    expect(server.app.registry.get(key.tenantId, id)).toBeUndefined();
    const after = await api.get(`/v1/sessions/${id}`);
    expect(after.json.status).toBe("cancelled");
    expect(after.json.ended_at).toBeDefined();
    session.end();
    await session.done;
    expect((await api.get(`/v1/sessions/${id}`)).json.status).toBe("cancelled");
  });

  it("takes a JSON content type with no body, as clients that set it on every call send it", async () => {
    const headers = { authorization: `Bearer ${key.secret}`, "content-type": "application/json" };
    const unknown = await fetch(`${server.url}/v1/sessions/00000000-0000-4000-8000-000000000000`, { method: "DELETE", headers });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("not_found");
    const listed = await fetch(`${server.url}/v1/sessions`, { headers });
    expect(listed.status).toBe(200);
    // A POST still needs its body.
    const post = await fetch(`${server.url}/v1/environments`, { method: "POST", headers });
    expect(post.status).toBe(400);
  });

  it("leaves an ended session as it was", async () => {
    expect((await api.delete(`/v1/sessions/${toolSessionId}`)).status).toBe(204);
    expect((await api.get(`/v1/sessions/${toolSessionId}`)).json.status).toBe("completed");
    expect((await api.get(`/v1/sessions/${toolSessionId}/messages`)).json.turns).toHaveLength(1);
  });
});

describe("GET /metrics", () => {
  it("exposes session, turn, token, latency, store and error metrics in Prometheus format", async () => {
    // An error the session reports: a second start.
    const { session } = await startSession(server.url, key.secret);
    session.send({ request: { case: "start", value: {} } });
    expect((await nextOf(session, "error")).code).toBe("already_started");
    const live = await request(server.url, "GET", "/metrics");
    expect(live.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(live.text).toMatch(/^roz_sessions\{status="active"\} 1$/m);
    session.end();
    await session.done;

    const text = (await request(server.url, "GET", "/metrics")).text;
    expect(text).toMatch(/^roz_sessions\{status="active"\} 0$/m);
    expect(text).toMatch(/^roz_sessions\{status="detached"\} 0$/m);
    expect(text).toMatch(/^roz_turns_total\{stop_reason="end_turn"\} 1$/m);
    expect(text).toMatch(/^roz_tokens_total\{kind="input"\} 200$/m);
    expect(text).toMatch(/^roz_tokens_total\{kind="output"\} 40$/m);
    expect(text).toMatch(/^roz_tokens_total\{kind="cache_read"\} 60$/m);
    expect(text).toMatch(/^roz_tokens_total\{kind="cache_creation"\} 10$/m);
    expect(text).toMatch(/^roz_model_time_to_first_token_seconds_count\{provider="scripted"\} 2$/m);
    expect(text).toMatch(/^roz_tool_round_trip_seconds_count 1$/m);
    expect(text).toMatch(/^roz_turn_duration_seconds_count 1$/m);
    expect(text).toMatch(/^roz_store_operation_seconds_count\{op="append_turn",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^roz_store_operation_seconds_count\{op="create_session",outcome="ok"\} \d+$/m);
    expect(text).toMatch(/^roz_errors_total\{code="already_started"\} 1$/m);
    expect(text).toMatch(/^roz_http_requests_total\{method="GET",route="\/v1\/sessions\/:id",status="200"\} \d+$/m);
    expect(text).toMatch(/^roz_process_cpu_seconds_total /m);
  });
});
