// session-behaviour.md §6 "Every client sees the whole conversation": every attached stream
// gets ToolFinished for each call that got a result, whoever answered it; envelope streams get
// tool_call_finished; a timed-out call ends as a failure; the echo is cut to
// ROZ_TOOL_RESULT_ECHO_BYTES.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/app/config.ts";
import { RozError } from "../../src/errors/index.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { type ClientKind, type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, tool, valuesOf } from "../support/session-protocol.ts";
import { createUpstreamClient, up, type UpstreamClient } from "../support/upstream-client.ts";

const script = (responses: unknown[][]): string => `script: ${JSON.stringify({ responses })}`;
const toolTurn = script([[{ tool_call: { id: "call_1", name: "read_file", arguments: { path: "a.txt" } } }], [{ text: "done" }]]);
const resume = (sessionId: string, afterSeq: number) => ({ request: { case: "resume", value: { sessionId, afterSeq: BigInt(afterSeq) } } }) as const;
const lastSeq = (client: SessionClient) => Number(client.responses.seen.at(-1)?.seq ?? 0n);

let server: TestServer;
let upstream: UpstreamClient;
const factories = new Map<ClientKind, SessionClientFactory>();
const open = (kind: ClientKind): SessionClient => {
  let f = factories.get(kind);
  if (!f) factories.set(kind, (f = sessionClientFactory(kind, server.url)));
  return f.open();
};
beforeAll(async () => {
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  upstream = createUpstreamClient(server.url);
});
afterAll(async () => {
  for (const f of factories.values()) f.close();
  upstream?.close();
  await server?.close();
});

/** A session started on `first` with a second client (`second`) attached from the current seq on. */
async function pair(first: ClientKind, second: ClientKind, timeoutMs?: number) {
  const one = open(first);
  const { sessionId } = await startSession(one, { tools: [tool("read_file", timeoutMs !== undefined ? { timeoutMs } : {})] });
  const two = open(second);
  two.send(resume(sessionId, lastSeq(one)));
  // A pong on the second stream: it is attached before the turn starts.
  two.send(rq.ping());
  await nextOf(two, "pong");
  return { one, two };
}

async function close(...clients: SessionClient[]): Promise<void> {
  for (const c of clients) c.end();
  await Promise.all(clients.map((c) => c.status));
}

describe.each<[ClientKind, ClientKind]>([
  ["grpc-js", "connect"],
  ["connect", "grpc-js"],
])("ToolFinished on every attached stream (%s answers, %s watches)", (first, second) => {
  it("the client that did not answer sees the result, after the request and before the model's next call", async () => {
    const { one, two } = await pair(first, second);
    one.send(rq.user(toolTurn));
    const request = await nextOf(one, "toolRequest");
    one.send(rq.toolResult(request.toolCallId, "hello from a.txt"));
    const [turnOne, turnTwo] = await Promise.all([readTurn(one), readTurn(two)]);
    const expected = { toolCallId: "call_1", toolName: "read_file", success: true, result: "hello from a.txt", truncated: false, workerId: "" };
    expect(valuesOf(turnTwo, "toolFinished")).toEqual([expect.objectContaining(expected)]);
    expect(valuesOf([...one.responses.seen], "toolFinished")).toEqual([expect.objectContaining(expected)]);
    const cases = turnTwo.map((r) => r.response.case);
    expect(cases.indexOf("toolRequest")).toBeLessThan(cases.indexOf("toolFinished"));
    expect(cases.indexOf("toolFinished")).toBeLessThan(cases.lastIndexOf("textDelta"));
    expect(turnOne.at(-1)!.response.case).toBe("turnComplete");
    await close(one, two);
  });

  it("a call that times out after its request went out ends as ToolFinished{success:false} with the reason", async () => {
    const { one, two } = await pair(first, second, 200);
    one.send(rq.user(toolTurn));
    const turn = await readTurn(two);
    expect(valuesOf(turn, "toolFinished")).toEqual([
      expect.objectContaining({ toolCallId: "call_1", success: false, result: "tool timeout after 200ms", truncated: false }),
    ]);
    await close(one, two);
  });
});

describe("ToolFinished contents", () => {
  it("a 40 KB result arrives cut to 16 KiB of whole UTF-8 characters, with truncated", async () => {
    const { one, two } = await pair("grpc-js", "connect");
    one.send(rq.user(toolTurn));
    const request = await nextOf(one, "toolRequest");
    const big = "é".repeat(20_000);
    one.send(rq.toolResult(request.toolCallId, big));
    const finished = await nextOf(two, "toolFinished");
    expect(finished.truncated).toBe(true);
    expect(Buffer.byteLength(finished.result)).toBe(16_384);
    expect(finished.result).toBe("é".repeat(8192));
    await readTurn(two);
    await close(one, two);
  });

  it("a refused call gets ToolDenied and no ToolFinished", async () => {
    const one = open("grpc-js");
    await startSession(one, { tools: [tool("read_file")] });
    one.send(rq.user(script([[{ tool_call: { id: "x1", name: "no_such_tool", arguments: {} } }], [{ text: "ok" }]])));
    const turn = await readTurn(one);
    expect(valuesOf(turn, "toolDenied").map((d) => d.toolCallId)).toEqual(["x1"]);
    expect(valuesOf(turn, "toolFinished")).toEqual([]);
    await close(one);
  });

  it("an envelope stream gets tool_call_finished{call_id, tool_name, result_summary}", async () => {
    const call = upstream.openSession("envelope");
    call.send(up.start({ tools: [{ name: "read_file", description: "reads a file" }] }));
    const event = (type: string) =>
      call.responses.nextMatching((r) => r.response === "session_event" && r.session_event!.event_type === type, 10_000).then((r) => r.session_event!);
    await event("session_started");
    call.send(up.user(toolTurn));
    await event("tool_call_requested");
    call.send(up.toolResult("call_1", "hi"));
    const finished = await event("tool_call_finished");
    expect(finished.tool_call_finished).toEqual({ call_id: "call_1", tool_name: "read_file", result_summary: "hi" });
    await event("turn_finished");
    call.send(up.cancelSession());
    call.end();
  });
});

describe("ROZ_TOOL_RESULT_ECHO_BYTES", () => {
  it("defaults to 16384, takes 0 (no result text) up to 4 MiB, and names itself when invalid", () => {
    expect(loadConfig({}).toolResultEchoBytes).toBe(16_384);
    expect(loadConfig({ ROZ_TOOL_RESULT_ECHO_BYTES: "0" }).toolResultEchoBytes).toBe(0);
    for (const bad of ["-1", "16k", String(4 * 1024 * 1024 + 1)]) {
      expect(() => loadConfig({ ROZ_TOOL_RESULT_ECHO_BYTES: bad })).toThrow(RozError);
      expect(() => loadConfig({ ROZ_TOOL_RESULT_ECHO_BYTES: bad })).toThrow(/ROZ_TOOL_RESULT_ECHO_BYTES/);
    }
  });
});
