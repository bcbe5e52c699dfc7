// session-behaviour.md §3: a model's tool call whose arguments nest deeper than clients may
// send (MAX_JSON_DEPTH, the REST limit) is refused as ToolDenied{invalid_arguments}: the model
// is told, and no client gets a ToolRequest its decoder cannot read.
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { AgentService, type SessionRequest, SessionRequestSchema, type SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { MAX_JSON_DEPTH } from "../../src/models/index.ts";
import { createGrpcJsClient, req, type WireResponse } from "../support/grpc-js-client.ts";
import { type SessionFixture, startSessionFixture } from "../session/fixture.ts";
import { messagesOf, toolMessages } from "../session/chat-body.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

/** An object `levels` deep: `{ "a": { "a": … {} } }`. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < levels; level++) value = { a: value };
  return value;
}

const DEEP = 100;

it("grpc-js (proto-loader): 100-level arguments come back as ToolDenied{invalid_arguments}, no ToolRequest; the session goes on", async () => {
  const client = createGrpcJsClient(fx.server.url);
  const call = client.openSession();
  try {
    call.send(req.start({ tools: [{ name: "deep", description: "takes anything", timeout_ms: 5000 }] }));
    expect((await call.next()).response).toBe("session_started");
    fx.fake.plan({ toolCalls: [{ id: "call_deep", name: "deep", arguments: nested(DEEP) }] }, { text: "Understood." }, { text: "Still here." });
    call.send(req.userMessage("go deep", { message_id: "deep-1" }));
    const seen: WireResponse[] = [];
    const done = await call.responses.nextMatching((r) => {
      seen.push(r);
      return r.response === "turn_complete";
    }, 10_000);
    expect(seen.filter((r) => r.response === "tool_request")).toEqual([]);
    const denied = seen.filter((r) => r.response === "tool_denied").map((r) => r["tool_denied"]);
    expect(denied).toEqual([expect.objectContaining({ tool_call_id: "call_deep", tool_name: "deep", reason: "invalid_arguments" })]);
    expect((denied[0] as { detail: string }).detail).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
    expect(done["turn_complete"]).toMatchObject({ message_id: "deep-1", stop_reason: "end_turn" });
    // The model was told why.
    const told = toolMessages((await fx.request(1)).body);
    expect(told).toEqual([expect.objectContaining({ role: "tool", tool_call_id: "call_deep" })]);
    expect(String(told[0]!.content)).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);

    call.send(req.userMessage("and now?", { message_id: "deep-2" }));
    const next = await call.responses.nextMatching((r) => r.response === "turn_complete", 10_000);
    expect(next["turn_complete"]).toMatchObject({ message_id: "deep-2", stop_reason: "end_turn" });
    expect(messagesOf((await fx.request(2)).body).at(-1)).toMatchObject({ role: "user" });
    call.send(req.cancelSession());
    expect((await call.status).code).toBe(0);
  } finally {
    call.cancel();
    client.close();
  }
});

it(`arguments ${MAX_JSON_DEPTH} levels deep still reach the client (Connect JSON)`, async () => {
  const responses = await connectJsonTurn(MAX_JSON_DEPTH, "at-limit");
  expect(responses.filter((r) => r.response.case === "toolDenied")).toEqual([]);
  const request = responses.find((r) => r.response.case === "toolRequest");
  expect(request?.response.value).toMatchObject({ toolCallId: "call_at-limit", parameters: nested(MAX_JSON_DEPTH) });
});

it("Connect JSON: 100-level arguments come back as ToolDenied{invalid_arguments}, no ToolRequest", async () => {
  const responses = await connectJsonTurn(DEEP, "deep");
  expect(responses.filter((r) => r.response.case === "toolRequest")).toEqual([]);
  const denied = responses.filter((r) => r.response.case === "toolDenied").map((r) => r.response.value);
  expect(denied).toEqual([expect.objectContaining({ toolCallId: "call_deep", reason: "invalid_arguments" })]);
  expect(responses.at(-1)?.response).toMatchObject({ case: "turnComplete", value: { stopReason: "end_turn" } });
});

/**
 * One session over Connect with JSON messages: the model calls `tool` with arguments `levels`
 * deep; the responses until the turn completes, or until the ToolRequest (answered, so that
 * the turn can end).
 */
async function connectJsonTurn(levels: number, id: string): Promise<SessionResponse[]> {
  const sessionManager = new Http2SessionManager(fx.server.url);
  const transport = createConnectTransport({ httpVersion: "2", baseUrl: fx.server.url, sessionManager, useBinaryFormat: false });
  const requests = createWritableIterable<SessionRequest>();
  const send = (init: Parameters<typeof create<typeof SessionRequestSchema>>[1]) => void requests.write(create(SessionRequestSchema, init));
  const seen: SessionResponse[] = [];
  try {
    send({ request: { case: "start", value: { tools: [{ name: "tool", description: "takes anything" }] } } });
    fx.fake.plan({ toolCalls: [{ id: `call_${id}`, name: "tool", arguments: nested(levels) }] }, { text: "Understood." });
    for await (const response of createClient(AgentService, transport).streamSession(requests)) {
      seen.push(response);
      const kind = response.response.case;
      if (kind === "sessionStarted") send({ request: { case: "userMessage", value: { content: "go" } } });
      if (kind === "toolRequest")
        send({ request: { case: "toolResult", value: { toolCallId: response.response.value.toolCallId, success: true, result: "ok" } } });
      if (kind === "turnComplete") {
        send({ request: { case: "cancelSession", value: { reason: "test over" } } });
        requests.close();
      }
    }
    return seen;
  } finally {
    sessionManager.abort();
  }
}
