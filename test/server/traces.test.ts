// §13 Traces: the real server process started with the standard OTEL_* variables exports its
// spans over OTLP/HTTP to a real receiver (test/support/otlp-receiver.ts), protobuf by default
// and JSON when asked, and a server without an endpoint loads none of it.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/app/config.ts";
import { tracingSettingsOf } from "../../src/app/tracing-setup.ts";
import { AgentService, SessionRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { type OtlpReceiver, type ReceivedSpan, SPAN_KIND, STATUS, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { type SpawnedServer, spawnServer } from "../support/server.ts";
import { type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, tool, turnCompleteOf } from "../support/session-protocol.ts";

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const traceparent = (span = CLIENT_SPAN): string => `00-${CLIENT_TRACE}-${span}-01`;
const script = (responses: unknown[][]): string => `script: ${JSON.stringify({ responses })}`;
const probe = fileURLToPath(new URL("../support/module-probe.ts", import.meta.url));

/** One model call asking for read_file, the client's result, one more call answering. */
const TOOL_TURN = script([
  [
    { text: "Let me read it." },
    { tool_call: { id: "call_read_1", name: "read_file", arguments: { path: "a.txt" } } },
    { usage: { input_tokens: 40, output_tokens: 7 } },
    { finish: "tool_use" },
  ],
  [{ text: "It says hello." }, { usage: { input_tokens: 60, output_tokens: 5 } }, { finish: "end_turn" }],
]);

/** Content attributes: recorded only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. */
const CONTENT = /^gen_ai\.(input\.messages|output\.messages|system_instructions|tool\.call\.(arguments|result))$/;

interface Rig {
  server: SpawnedServer;
  factory: SessionClientFactory;
  probeFile: string;
  dir: string;
}

async function startRig(env: Record<string, string>): Promise<Rig> {
  const dir = await mkdtemp(join(tmpdir(), "roz-traces-"));
  const probeFile = join(dir, "loaded.txt");
  const server = await spawnServer({ ROZ_LOG_LEVEL: "debug", NODE_OPTIONS: `--import=${probe}`, MODULE_PROBE_FILE: probeFile, ...env });
  return { server, factory: sessionClientFactory("grpc-js", server.url), probeFile, dir };
}

async function stopRig(rig: Rig | undefined): Promise<void> {
  rig?.factory.close();
  await rig?.server.dispose();
  if (rig) await rm(rig.dir, { recursive: true, force: true });
}

/** The @opentelemetry modules the server process resolved so far. */
const loadedModules = async (rig: Rig): Promise<string[]> => (await readFile(rig.probeFile, "utf8").catch(() => "")).split("\n").filter(Boolean);

/** A session (offering read_file) on a stream opened with `headers`. */
async function openSession(rig: Rig, headers: Record<string, string> = {}): Promise<{ client: SessionClient; sessionId: string }> {
  const client = rig.factory.open(headers);
  const started = await startSession(client, { tools: [tool("read_file")] });
  return { client, sessionId: started.sessionId };
}

/** Runs TOOL_TURN: the client answers the tool request with `result` (`success` as given). */
async function runToolTurn(client: SessionClient, text = TOOL_TURN, success = true) {
  client.send(rq.user(text));
  const request = await nextOf(client, "toolRequest");
  client.send(rq.toolResult(request.toolCallId, "hello from a.txt", success));
  return turnCompleteOf(await readTurn(client));
}

const one = (spans: readonly ReceivedSpan[], where: (s: ReceivedSpan) => boolean, what: string): ReceivedSpan => {
  const found = spans.filter(where);
  expect(found, `${what} among ${spans.map((s) => s.name).join(", ")}`).toHaveLength(1);
  return found[0]!;
};
const ofSession = (sessionId: string) => (s: ReceivedSpan) => s.attributes["gen_ai.conversation.id"] === sessionId;
const byStart = (a: ReceivedSpan, b: ReceivedSpan): number => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0);

/** The spans of a tool turn of `sessionId` once all four arrived: its turn, two model calls, one tool call. */
async function toolTurnSpans(receiver: OtlpReceiver, sessionId: string) {
  const spans = (await receiver.waitFor((all) => all.filter(ofSession(sessionId)).length >= 4)).filter(ofSession(sessionId));
  const turn = one(spans, (s) => s.name === "invoke_agent", "the turn's span");
  const chats = spans.filter((s) => s.name.startsWith("chat ")).sort(byStart);
  const toolCall = one(spans, (s) => s.name === "execute_tool read_file", "the tool call's span");
  return { spans, turn, chats, toolCall };
}

const logLine = (server: SpawnedServer, where: (line: Record<string, unknown>) => boolean) => server.logLines().find(where);

describe("tracing on: OTLP http/protobuf (the default), content not recorded", () => {
  let receiver: OtlpReceiver;
  let rig: Rig;
  let mcp: TestMcpServer;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    mcp = await startMcpServer();
    rig = await startRig({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      ROZ_TEAMS_DEFAULT: "on",
      ROZ_MCP_ALLOW_PRIVATE: "1",
      ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "mcp__trusted__*", policy: "allow" }]),
    });
  });
  afterAll(async () => {
    await stopRig(rig);
    await receiver?.close();
    await mcp?.close();
  });

  it("a turn with a client tool is an invoke_agent span under the client's span, with chat and execute_tool children", async () => {
    const { client, sessionId } = await openSession(rig, { traceparent: traceparent() });
    const done = await runToolTurn(client);
    expect(done.stopReason).toBe("end_turn");
    const { spans, turn, chats, toolCall } = await toolTurnSpans(receiver, sessionId);

    // The client's trace, the turn a child of the client's span, everything else under the turn.
    for (const span of spans) expect(span.traceId, span.name).toBe(CLIENT_TRACE);
    expect(turn.parentSpanId).toBe(CLIENT_SPAN);
    expect(turn.kind).toBe(SPAN_KIND.internal);
    expect(turn.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": "scripted",
      "gen_ai.request.model": "default",
      "gen_ai.conversation.id": sessionId,
      "gen_ai.usage.input_tokens": 100,
      "gen_ai.usage.output_tokens": 12,
    });
    expect(turn.status.code).toBe(STATUS.unset);

    expect(chats.map((s) => s.name)).toEqual(["chat default", "chat default"]);
    for (const chat of chats) {
      expect(chat.parentSpanId).toBe(turn.spanId);
      expect(chat.kind).toBe(SPAN_KIND.client);
    }
    expect(chats[0]!.attributes).toEqual({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "scripted",
      "gen_ai.request.model": "default",
      "gen_ai.conversation.id": sessionId,
      "gen_ai.usage.input_tokens": 40,
      "gen_ai.usage.output_tokens": 7,
      "gen_ai.response.finish_reasons": ["tool_use"],
    });
    expect(chats[1]!.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 60,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.response.finish_reasons": ["end_turn"],
    });

    expect(toolCall.parentSpanId).toBe(turn.spanId);
    expect(toolCall.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "read_file",
      "gen_ai.tool.call.id": "call_read_1",
      "gen_ai.tool.type": "function",
      "gen_ai.conversation.id": sessionId,
    });
    // From the tool request (after the first call) to the client's result (before the second).
    expect(toolCall.startNs).toBeGreaterThanOrEqual(chats[0]!.endNs);
    expect(toolCall.endNs).toBeLessThanOrEqual(chats[1]!.startNs);
    expect(turn.startNs).toBeLessThanOrEqual(chats[0]!.startNs);
    expect(turn.endNs).toBeGreaterThanOrEqual(chats[1]!.endNs);

    // No message content unless opted in.
    for (const span of spans)
      expect(
        Object.keys(span.attributes).filter((k) => CONTENT.test(k)),
        span.name,
      ).toEqual([]);
    expect(turn.resource).toMatchObject({ "service.name": "roz" });
    expect(turn.scope).toBe("roz");
    expect(turn.protocol).toBe("http/protobuf");
    expect(new Set(receiver.requests.map((r) => `${r.path} ${r.contentType}`))).toEqual(new Set(["/v1/traces application/x-protobuf"]));

    // A log line written inside the turn carries its trace and span ids.
    const ended = logLine(rig.server, (l) => l["msg"] === "turn ended" && l["sessionId"] === sessionId);
    expect(ended).toMatchObject({ trace_id: CLIENT_TRACE, span_id: turn.spanId });
    client.end();
  });

  it("SendToSession's traceparent parents the turn it starts; a message without one starts a new trace", async () => {
    const { client, sessionId } = await openSession(rig);
    const sessionManager = new Http2SessionManager(rig.server.url);
    const connect = createClient(AgentService, createConnectTransport({ httpVersion: "2", baseUrl: rig.server.url, sessionManager }));
    try {
      const sent = "00aa00aa00aa00aa";
      await connect.sendToSession(
        { sessionId, request: create(SessionRequestSchema, rq.user("via SendToSession")) },
        { headers: { traceparent: traceparent(sent) } },
      );
      await readTurn(client);
      client.send(rq.user("on the stream, which has no traceparent"));
      await readTurn(client);
      const turns = (await receiver.waitFor((all) => all.filter((s) => ofSession(sessionId)(s) && s.name === "invoke_agent").length >= 2))
        .filter((s) => ofSession(sessionId)(s) && s.name === "invoke_agent")
        .sort(byStart);
      expect(turns[0]).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: sent });
      expect(turns[1]!.parentSpanId).toBe("");
      expect(turns[1]!.traceId).not.toBe(CLIENT_TRACE);
    } finally {
      sessionManager.abort();
      client.end();
    }
  });

  it("errors set the span status: a failed client tool, a provider error and the turn it ends", async () => {
    const { client, sessionId } = await openSession(rig, { traceparent: traceparent() });
    const failing = script([
      [{ tool_call: { id: "call_fail_1", name: "read_file", arguments: { path: "b.txt" } } }, { finish: "tool_use" }],
      [{ error: { message: "the provider is down", retryable: false, status: 503 } }],
    ]);
    const done = await runToolTurn(client, failing, false);
    expect(done.stopReason).toBe("error");
    const { turn, chats, toolCall } = await toolTurnSpans(receiver, sessionId);
    expect(toolCall.status.code).toBe(STATUS.error);
    expect(toolCall.attributes["error.type"]).toBe("tool_error");
    expect(chats[0]!.status.code).toBe(STATUS.unset);
    expect(chats[1]!.status).toEqual({ code: STATUS.error, message: expect.stringContaining("the provider is down") });
    expect(chats[1]!.attributes["error.type"]).toBe("503");
    expect(turn.status.code).toBe(STATUS.error);
    expect(turn.attributes["error.type"]).toBe("model_error");
    client.end();
  });

  it("a team worker's run, model calls and tool calls trace under the parent turn's spawn_worker call", async () => {
    const { client, sessionId } = await openSession(rig, { traceparent: traceparent() });
    const worker = script([[{ text: "worker done" }, { usage: { input_tokens: 9, output_tokens: 2 } }, { finish: "end_turn" }]]);
    client.send(
      rq.user(
        script([
          [{ tool_call: { id: "call_spawn", name: "spawn_worker", arguments: { prompt: worker, tools: "none" } } }, { finish: "tool_use" }],
          [{ tool_call: { id: "call_wait", name: "wait_for_workers", arguments: {} } }, { finish: "tool_use" }],
          [{ text: "all done" }, { finish: "end_turn" }],
        ]),
      ),
    );
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    const spans = (await receiver.waitFor((all) => all.filter(ofSession(sessionId)).length >= 8)).filter(ofSession(sessionId));
    const turn = one(spans, (s) => s.name === "invoke_agent" && s.attributes["gen_ai.agent.id"] === undefined, "the parent's turn");
    const spawn = one(spans, (s) => s.name === "execute_tool spawn_worker", "the spawn call");
    const wait = one(spans, (s) => s.name === "execute_tool wait_for_workers", "the wait call");
    const run = one(spans, (s) => s.name === "invoke_agent" && s.attributes["gen_ai.agent.id"] !== undefined, "the worker's run");
    const workerChat = one(spans, (s) => s.name === "chat default" && s.parentSpanId === run.spanId, "the worker's model call");
    for (const span of spans) expect(span.traceId, span.name).toBe(CLIENT_TRACE);
    expect(turn.parentSpanId).toBe(CLIENT_SPAN);
    for (const call of [spawn, wait]) {
      expect(call.parentSpanId).toBe(turn.spanId);
      expect(call.attributes["gen_ai.tool.type"]).toBe("extension");
    }
    expect(run.parentSpanId).toBe(spawn.spanId);
    expect(run.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": sessionId, "gen_ai.usage.output_tokens": 2 });
    expect(workerChat.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 9, "gen_ai.response.finish_reasons": ["end_turn"] });
    client.end();
  });

  it("an MCP tool, called by the server, is an execute_tool span of type extension under the turn", async () => {
    const registered = await fetch(`${rig.server.url}/v1/mcp-servers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "trusted", url: mcp.url }),
    });
    expect(registered.status).toBe(201);
    const { client, sessionId } = await openSession(rig, { traceparent: traceparent() });
    client.send(
      rq.user(
        script([
          [{ tool_call: { id: "call_mcp_1", name: "mcp__trusted__echo", arguments: { text: "hi" } } }, { finish: "tool_use" }],
          [{ text: "echoed" }, { finish: "end_turn" }],
        ]),
      ),
    );
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    expect(mcp.calls.at(-1)).toEqual({ tool: "echo", args: { text: "hi" } });
    const spans = (await receiver.waitFor((all) => all.filter(ofSession(sessionId)).length >= 4)).filter(ofSession(sessionId));
    const turn = one(spans, (s) => s.name === "invoke_agent", "the turn");
    const call = one(spans, (s) => s.name === "execute_tool mcp__trusted__echo", "the MCP call");
    expect(call).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: turn.spanId });
    expect(call.attributes).toMatchObject({ "gen_ai.tool.call.id": "call_mcp_1", "gen_ai.tool.type": "extension" });
    expect(call.status.code).toBe(STATUS.unset);
    client.end();
  });

  it("REST requests are server spans under their traceparent, with the ids in their log lines; probes are not traced", async () => {
    const { client, sessionId } = await openSession(rig);
    const restSpan = "00bb00bb00bb00bb";
    const headers = { traceparent: traceparent(restSpan), "x-request-id": "traced-rest-1" };
    expect((await fetch(`${rig.server.url}/v1/sessions/${sessionId}`, { headers })).status).toBe(200);
    expect((await fetch(`${rig.server.url}/healthz`, { headers: { traceparent: traceparent("00cc00cc00cc00cc") } })).status).toBe(200);
    const missing = await fetch(`${rig.server.url}/v1/sessions/00000000-0000-4000-8000-000000000000`, {
      headers: { traceparent: traceparent("00dd00dd00dd00dd") },
    });
    expect(missing.status).toBe(404);
    const spans = await receiver.waitFor((all) => all.filter((s) => s.parentSpanId === "00dd00dd00dd00dd").length === 1);
    const get = one(spans, (s) => s.parentSpanId === restSpan, "the GET's span");
    expect(get).toMatchObject({ name: "GET /v1/sessions/:id", kind: SPAN_KIND.server, traceId: CLIENT_TRACE });
    expect(get.attributes).toMatchObject({
      "http.request.method": "GET",
      "http.route": "/v1/sessions/:id",
      "url.path": `/v1/sessions/${sessionId}`,
      "http.response.status_code": 200,
    });
    const notFound = one(spans, (s) => s.parentSpanId === "00dd00dd00dd00dd", "the 404's span");
    expect(notFound.attributes["http.response.status_code"]).toBe(404);
    expect(notFound.status.code).toBe(STATUS.unset);
    expect(spans.filter((s) => s.parentSpanId === "00cc00cc00cc00cc")).toEqual([]);
    const completed = logLine(rig.server, (l) => l["reqId"] === "traced-rest-1" && l["msg"] === "request completed");
    expect(completed).toMatchObject({ trace_id: CLIENT_TRACE, span_id: get.spanId });
    client.end();
  });

  it("loaded the OpenTelemetry SDK (the module probe sees it)", async () => {
    const loaded = await loadedModules(rig);
    expect(loaded.some((url) => url.includes("/@opentelemetry/sdk-trace-node/"))).toBe(true);
    expect(loaded.some((url) => url.includes("/@opentelemetry/exporter-trace-otlp-proto/"))).toBe(true);
  });
});

describe("tracing on: OTLP http/json to a traces endpoint, content recorded when opted in", () => {
  let receiver: OtlpReceiver;
  let rig: Rig;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    rig = await startRig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      OTEL_SERVICE_NAME: "roz-traces-test",
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
  });
  afterAll(async () => {
    await stopRig(rig);
    await receiver?.close();
  });

  it("prompts, completions, tool arguments and results are on the spans", async () => {
    const { client, sessionId } = await openSession(rig, { traceparent: traceparent() });
    await runToolTurn(client);
    const { turn, chats, toolCall } = await toolTurnSpans(receiver, sessionId);
    expect(turn.protocol).toBe("http/json");
    expect(new Set(receiver.requests.map((r) => r.contentType.split(";")[0]))).toEqual(new Set(["application/json"]));
    expect(turn.resource["service.name"]).toBe("roz-traces-test");
    expect(turn.parentSpanId).toBe(CLIENT_SPAN);

    expect(JSON.parse(turn.attributes["gen_ai.input.messages"] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: TOOL_TURN }] }]);
    expect(JSON.parse(turn.attributes["gen_ai.output.messages"] as string)).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "Let me read it.\n\nIt says hello." }], finish_reason: "end_turn" },
    ]);
    const [first, second] = chats as [ReceivedSpan, ReceivedSpan];
    expect(JSON.parse(first.attributes["gen_ai.input.messages"] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: TOOL_TURN }] }]);
    expect(JSON.parse(first.attributes["gen_ai.system_instructions"] as string)[0]).toMatchObject({ type: "text" });
    expect(JSON.parse(first.attributes["gen_ai.output.messages"] as string)).toEqual([
      {
        role: "assistant",
        parts: [
          { type: "text", content: "Let me read it." },
          { type: "tool_call", id: "call_read_1", name: "read_file", arguments: { path: "a.txt" } },
        ],
        finish_reason: "tool_use",
      },
    ]);
    expect(JSON.parse(second.attributes["gen_ai.input.messages"] as string).at(-1)).toEqual({
      role: "tool",
      parts: [{ type: "tool_call_response", id: "call_read_1", response: "hello from a.txt" }],
    });
    expect(JSON.parse(toolCall.attributes["gen_ai.tool.call.arguments"] as string)).toEqual({ path: "a.txt" });
    expect(toolCall.attributes["gen_ai.tool.call.result"]).toBe("hello from a.txt");
    client.end();
  });
});

describe("tracing off: no endpoint", () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({});
  });
  afterAll(() => stopRig(rig));

  it("loads no OpenTelemetry module and writes no ids, through a traced client's turn and REST call", async () => {
    const { client, sessionId } = await openSession(rig, { traceparent: traceparent() });
    expect((await runToolTurn(client)).stopReason).toBe("end_turn");
    expect((await fetch(`${rig.server.url}/v1/sessions/${sessionId}`, { headers: { traceparent: traceparent() } })).status).toBe(200);
    // Only the API, which prom-client loads for its own metrics whatever roz does; no SDK, exporter or conventions.
    expect((await loadedModules(rig)).filter((url) => !url.includes("/@opentelemetry/api/"))).toEqual([]);
    // The same log line as with tracing on, without ids.
    const ended = logLine(rig.server, (l) => l["msg"] === "turn ended" && l["sessionId"] === sessionId);
    expect(ended).toBeDefined();
    expect(rig.server.logLines().filter((l) => "trace_id" in l || "span_id" in l)).toEqual([]);
    client.end();
  });

  it("OTEL_SDK_DISABLED=true turns tracing off even with an endpoint; the traces endpoint wins over the general one", () => {
    expect(tracingSettingsOf(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }))).toBeUndefined();
    expect(tracingSettingsOf(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }))).toMatchObject({
      url: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      serviceName: "roz",
      captureContent: false,
    });
    expect(
      tracingSettingsOf(
        loadConfig({
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:9999/custom",
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
        }),
      ),
    ).toMatchObject({ url: "http://traces:9999/custom", protocol: "http/protobuf" });
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
  });
});
