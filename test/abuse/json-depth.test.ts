// JSON from clients nests at most 64 levels: deeper REST bodies are a 400 naming the field
// (tool_defaults nested deeply used to be a 500 from a stack overflow), deeper Structs in
// RPC requests are invalid_argument.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { openConnectSession } from "../server/connect-session.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { sessionClientFactory, type SessionClientFactory } from "../support/session-client.ts";
import { nextOf, rq, startSession, tool } from "../support/session-protocol.ts";
import { client } from "../rest/support.ts";
import { tooDeepAt, tooDeepInText } from "../../src/models/index.ts";
import { grpcFrame, grpcHeaders, grpcStatusOf, h2Request, parseGrpcFrames } from "../server/raw-h2.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";

/** An object `depth` levels deep: {"a":{"a":…{}}}. */
function nested(depth: number): JsonObject {
  let value: JsonObject = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

/** The same as JSON text, built without recursion (JSON.stringify would overflow). */
const nestedText = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;

describe("JSON depth", () => {
  let server: TestServer;
  let factory: SessionClientFactory;
  beforeAll(async () => {
    server = await startServer();
    factory = sessionClientFactory("grpc-js", server.url);
  });
  afterAll(async () => {
    factory?.close();
    await server?.close();
  });

  it("REST: 64 levels are stored; 65 and 100,000 are a 400 naming the field", async () => {
    const api = client(server);
    expect((await api.post("/v1/environments", { body: { name: "ok", tool_defaults: nested(63) } })).status).toBe(201);
    for (const depth of [65, 100_000]) {
      const reply = await api.post("/v1/environments", {
        raw: `{"name":"deep${depth}","tool_defaults":${nestedText(depth)}}`,
        contentType: "application/json",
      });
      expect(reply.status, reply.text.slice(0, 200)).toBe(400);
      expect(reply.json.error).toMatchObject({ code: "invalid_argument", details: { field: "body.tool_defaults" } });
    }
    const patched = await api.patch("/v1/environments/00000000-0000-4000-8000-000000000000", {
      raw: `{"tool_defaults":${nestedText(1000)}}`,
      contentType: "application/json",
    });
    expect(patched.status).toBe(400);
    // Any route's body: the check runs before validation.
    const keys = await api.post("/v1/auth/keys", { raw: `{"name":${"[".repeat(5000)}${"]".repeat(5000)}}`, contentType: "application/json" });
    expect(keys.status).toBe(400);
    expect(keys.json.error.details.field).toBe("body.name");
  });

  it("RPC (binary): a start whose tool schema nests 65 levels is invalid_argument and ends the stream", async () => {
    // protobuf-es refuses it while decoding (its own recursion limit); either way it is the client's fault.
    const session = factory.open();
    session.send(rq.start({ tools: [tool("deep", { parameters: { type: "object", properties: nested(64) } })] }));
    expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument" });
    expect((await session.status).code).toBe(3);
  });

  it("RPC (Connect JSON): a start whose tool schema nests 65 levels is invalid_argument naming the field", async () => {
    const transport = createConnectTransport({ httpVersion: "2", baseUrl: server.url, useBinaryFormat: false });
    const session = openConnectSession(transport);
    session.send(rq.start({ tools: [tool("deep", { parameters: { type: "object", properties: nested(64) } })] }));
    const first = await session.next(10_000);
    expect(first.response.case).toBe("error");
    expect(first.response.value).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("start.tools[0].parameters_schema") });
    expect((await session.done)?.code).toBe(Code.InvalidArgument);
  });

  it("RPC (JSON text nested two million levels): refused before anything parses it, on every call, while another session keeps streaming", async () => {
    // 4 MB of `[` and `]`: JSON.parse would build two million arrays (about a second) before the decoder refused them.
    const deep = Buffer.from(`${"[".repeat(2_000_000)}${"]".repeat(2_000_000)}`);
    const refusal = expect.stringContaining("nested deeper than 80 levels");
    const bystander = await startBystander(server.url);
    const [unary, stream, watch] = await Promise.all([
      h2Request(server.url, { ":path": "/roz.v1.AgentService/SendToSession", "content-type": "application/json" }, deep),
      h2Request(server.url, grpcHeaders("/roz.v1.AgentService/StreamSession", "application/grpc+json"), grpcFrame(deep)),
      h2Request(server.url, grpcHeaders("/roz.v1.AgentService/WatchTeam", "application/grpc+json"), grpcFrame(deep)),
    ]);
    const report = await bystander.stop();
    // Connect unary: a 400 with the error.
    expect(unary.headers[":status"]).toBe(400);
    expect(JSON.parse(unary.data.toString())).toMatchObject({ code: "invalid_argument", message: refusal });
    // A session stream: the in-band error, then the status.
    expect(grpcStatusOf(stream)).toBe(Code.InvalidArgument);
    const [inBand] = parseGrpcFrames(stream.data);
    expect(JSON.parse(String(inBand))).toMatchObject({ error: { code: "invalid_argument", message: refusal } });
    // Any other RPC: the status.
    expect(grpcStatusOf(watch)).toBe(Code.InvalidArgument);
    expect(decodeURIComponent(String(watch.trailers["grpc-message"] ?? watch.headers["grpc-message"]))).toEqual(refusal);
    expect(report.maxMs, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
  });

  it("RPC (binary): register_tools with a 1,000-level schema is invalid_argument, as any undecodable message", async () => {
    const session = factory.open();
    await startSession(session);
    session.send(rq.register([tool("deep", { parameters: { type: "object", properties: nested(1000) } })]));
    expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument" });
    expect((await session.status).code).toBe(3);
  });
});

describe("the depth of JSON text, before parsing", () => {
  const deep = `{"a":${"[".repeat(70)}${"]".repeat(70)}}`;
  const cases: [string, unknown][] = [
    ["flat", { a: 1, b: "x" }],
    ["64 levels", nested(64)],
    ["65 levels under b", { a: "{[{[", b: nested(64), c: 1 }],
    ["brackets and escaped quotes inside strings", { 'k"{': '"[[[[\\"{{{', deep: nested(65) }],
    ["a root array, third element", [1, [2], nested(64)]],
    ["the root itself", JSON.parse(`${"[".repeat(65)}${"]".repeat(65)}`)],
    ["a key that follows a deep one", JSON.parse(deep)],
  ];
  it.each(cases)("%s: the same first field as the parsed check", (_, value) => {
    const path = tooDeepAt(value);
    expect(tooDeepInText(JSON.stringify(value))).toBe(path === undefined ? undefined : (path[0] ?? ""));
  });
  it("stops at the first level too deep, whatever follows (not JSON past it)", () => {
    expect(tooDeepInText(`{"x":${"{".repeat(100)}`)).toBe("x");
    expect(tooDeepInText("not json")).toBeUndefined();
  });
});
