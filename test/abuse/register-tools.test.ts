// register_tools merges by name in linear time and is capped per request and per session
// (ROZ_MAX_TOOLS_PER_REQUEST, ROZ_MAX_TOOLS): beyond a cap the request is refused in-band with
// invalid_argument and the stream goes on; a start beyond it ends the stream.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClientTool } from "../../src/agent/index.ts";
import { mergeByName } from "../../src/agent/tool-registry.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { type SessionClientFactory, type SessionRequestInit, sessionClientFactory, sessionRequestBytes } from "../support/session-client.ts";
import { barrier, nextOf, readTurn, rq, startSession, tool, valuesOf } from "../support/session-protocol.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  AgentService,
  AttachSessionRequestSchema,
  SendToSessionRequestSchema,
  SendToSessionResponseSchema,
  SessionRequestSchema,
  SessionResponseSchema,
} from "../../src/gen/roz/v1/agent_pb.js";
import { grpcFrame, grpcHeaders, h2Request, parseGrpcFrames } from "../server/raw-h2.ts";

const tools = (n: number, prefix = "t") => Array.from({ length: n }, (_, i) => tool(`${prefix}${i}`));
const INVALID_ARGUMENT = 3;

describe("mergeByName", () => {
  it("merges 81,000 tools into 80,000 in linear time (it took 25 s)", () => {
    const make = (n: number, prefix: string): ClientTool[] =>
      Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}`, description: "", parametersSchema: {}, timeoutMs: 0, category: "unspecified" }));
    const base = make(80_000, "a");
    const started = performance.now();
    const merged = mergeByName(base, [...make(80_000, "b"), ...make(1000, "a")]);
    expect(performance.now() - started).toBeLessThan(STALL_BOUND_MS);
    expect(merged).toHaveLength(160_000);
  });
});

describe("tool caps on a server", () => {
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

  /**
   * Runs `attack` while a bystander session pings: its p99 stays under the stall bound, and the
   * server's loop (this process) is never held `loopBoundMs` or more.
   */
  const withoutStall = async <T>(attack: () => Promise<T>, loopBoundMs = 400): Promise<T> => {
    const bystander = await startBystander(server.url);
    const result = await attack();
    const report = await bystander.stop();
    expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
    expect(report.loopMaxMs, JSON.stringify(report)).toBeLessThan(loopBoundMs);
    return result;
  };

  it("the default caps: 512 per request, 1,000 per session; refusals are in-band and the stream goes on", async () => {
    const session = factory.open();
    await startSession(session);
    session.send(rq.register(tools(512, "a")));
    expect(valuesOf(await barrier(session), "error")).toEqual([]);
    session.send(rq.register(tools(513, "b")));
    expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("at most 512") });
    session.send(rq.register(tools(488, "c")));
    expect(valuesOf(await barrier(session), "error")).toEqual([]);
    // 1,000 now; one more is over the session's cap, a replacement by name is not.
    session.send(rq.register([tool("d0")]));
    expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("at most 1000") });
    session.send(rq.register([tool("a0")]));
    expect(valuesOf(await barrier(session), "error")).toEqual([]);
    session.send(rq.user("hello"));
    expect(valuesOf(await readTurn(session), "turnComplete")).toHaveLength(1);
    session.end();
    expect((await session.status).code).toBe(0);
  });

  it("a start with more tools than a request may carry ends the stream with invalid_argument", async () => {
    const session = factory.open();
    session.send(rq.start({ tools: tools(513) }));
    expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument" });
    expect((await session.status).code).toBe(INVALID_ARGUMENT);
  });

  it("40,000 tools in one register_tools are refused without stalling a bystander", async () => {
    const bystander = await startBystander(server.url);
    const session = factory.open();
    await startSession(session);
    for (let i = 0; i < 3; i++) {
      session.send(rq.register(tools(40_000, `x${i}_`)));
      expect(await nextOf(session, "error", 30_000)).toMatchObject({ code: "invalid_argument" });
    }
    session.end();
    await session.status;
    const report = await bystander.stop();
    expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
  }, 60_000);

  // About 350,000 tools of a few bytes fill the 4 MiB message limit; decoding them took
  // 0.2-0.9 s of the event loop before the lists were cut ahead of decoding.
  for (const contentType of ["application/grpc", "application/connect+proto"]) {
    it(`a 4 MiB register_tools of minimal tools is cut before decoding and refused in-band (${contentType})`, async () => {
      const frame = (request: SessionRequestInit) => grpcFrame(sessionRequestBytes(request));
      const flood = rq.register(Array.from({ length: 350_000 }, (_, i) => ({ name: `t${i}` })));
      const body = Buffer.concat([frame(rq.start()), frame(flood), frame(rq.ping())]);
      expect(body.byteLength).toBeGreaterThan(3_500_000);
      // This process runs the server: decoding the whole list held its loop 0.8-1.4 s here, the cut list under 0.1 s.
      const response = await withoutStall(() => h2Request(server.url, grpcHeaders("/roz.v1.AgentService/StreamSession", contentType), body, 30_000));
      // Messages only (flags 0): Connect ends its stream with a JSON envelope, gRPC with trailers.
      const messages = [];
      for (let at = 0; at + 5 <= response.data.length; at += 5 + response.data.readUInt32BE(at + 1)) {
        if (response.data[at] === 0)
          messages.push(fromBinary(SessionResponseSchema, response.data.subarray(at + 5, at + 5 + response.data.readUInt32BE(at + 1))));
      }
      const cases = messages.map((m) => m.response.case);
      expect(cases.slice(0, 3)).toEqual(["sessionStarted", "error", "pong"]);
      expect(messages[1]!.response.value).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("more than 512 tools") });
    }, 60_000);
  }

  // The same lists reach a session through SendToSession (field 2 holds the SessionRequest) and
  // AttachSession (field 1 holds a StartSession): they are cut before decoding too.
  const minimalTools = Array.from({ length: 350_000 }, (_, i) => ({ name: `t${i}` }));
  const refusesWithoutStall = async (path: string, contentType: string, message: Uint8Array, enveloped: boolean) => {
    const body = enveloped ? grpcFrame(Buffer.from(message)) : Buffer.from(message);
    expect(body.byteLength).toBeGreaterThan(3_500_000);
    return withoutStall(() => h2Request(server.url, grpcHeaders(path, contentType), body, 30_000));
  };

  for (const [contentType, enveloped, query] of [
    ["application/grpc", true, ""],
    ["application/grpc-web+proto", true, ""],
    ["application/proto", false, ""],
    // The same route with a query string.
    ["application/proto", false, "?x=1"],
  ] as const) {
    it(`SendToSession${query}: a 4 MiB register_tools is cut before decoding and refused in-band (${contentType})`, async () => {
      const session = factory.open();
      const { sessionId } = await startSession(session);
      const register = create(SessionRequestSchema, rq.register(minimalTools));
      const message = toBinary(SendToSessionRequestSchema, create(SendToSessionRequestSchema, { sessionId, request: register }));
      const response = await refusesWithoutStall(`/roz.v1.AgentService/SendToSession${query}`, contentType, message, enveloped);
      // Accepted by the call (the session answers in-band), as any register_tools is.
      const reply = enveloped ? parseGrpcFrames(response.data)[0]! : response.data;
      expect(Number(fromBinary(SendToSessionResponseSchema, reply).lastSeq)).toBeGreaterThan(0);
      expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("more than 512 tools") });
      session.end();
      await session.status;
    }, 60_000);
  }

  for (const contentType of ["application/grpc", "application/connect+proto"]) {
    it(`AttachSession: a 4 MiB start is cut before decoding and refused (${contentType})`, async () => {
      const message = toBinary(AttachSessionRequestSchema, create(AttachSessionRequestSchema, { target: { case: "start", value: { tools: minimalTools } } }));
      const response = await refusesWithoutStall("/roz.v1.AgentService/AttachSession", contentType, message, true);
      const messages = parseGrpcFrames(response.data)
        .filter((_, i, all) => contentType === "application/grpc" || i < all.length - 1)
        .map((m) => fromBinary(SessionResponseSchema, m));
      expect(messages[0]?.response).toMatchObject({
        case: "error",
        value: { code: "invalid_argument", message: expect.stringContaining("more than 512 tools") },
      });
    }, 60_000);
  }

  // JSON requests: 200,000 tools of a name fill most of 4 MiB; decoding them took 0.3-0.5 s.
  const jsonTools = minimalTools.slice(0, 200_000);
  const jsonStart = (tools: unknown[]) => ({ start: { tools } });

  it("SendToSession (application/json): a register_tools of 200,000 tools is cut before decoding and refused in-band", async () => {
    const session = factory.open();
    const { sessionId } = await startSession(session);
    const message = Buffer.from(JSON.stringify({ sessionId, request: { registerTools: { tools: jsonTools } } }));
    const response = await refusesWithoutStall("/roz.v1.AgentService/SendToSession", "application/json", message, false);
    expect(Number(JSON.parse(response.data.toString()).lastSeq)).toBeGreaterThan(0);
    expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("more than 512 tools") });
    session.end();
    await session.status;
  }, 60_000);

  for (const [path, contentType, message, expected] of [
    ["StreamSession", "application/connect+json", { register_tools: { tools: jsonTools } }, "more than 512 tools"],
    ["StreamSession", "application/grpc-web+json", { registerTools: { tools: jsonTools } }, "more than 512 tools"],
    ["AttachSession", "application/connect+json", jsonStart(jsonTools), "more than 512 tools"],
  ] as const) {
    it(`${path} (${contentType}): a JSON list of 200,000 tools is cut before decoding and refused in-band`, async () => {
      const first = path === "StreamSession" ? [grpcFrame(Buffer.from(JSON.stringify(jsonStart([]))))] : [];
      const body = Buffer.concat([...first, grpcFrame(Buffer.from(JSON.stringify(message)))]);
      const response = await withoutStall(() => h2Request(server.url, grpcHeaders(`/roz.v1.AgentService/${path}`, contentType), body, 30_000), 200);
      const errors = parseGrpcFrames(response.data)
        .map((m) => m.toString())
        .filter((m) => m.startsWith('{"error"'));
      expect(errors[0]).toContain(expected);
    }, 60_000);
  }

  // A client that compresses its messages (gzip here, as connect-node and grpc-js can).
  for (const [name, transport] of [
    ["gRPC", (baseUrl: string) => createGrpcTransport({ baseUrl, sendCompression: compressionGzip, writeMaxBytes: 8 * 1024 * 1024 })],
    ["Connect", (baseUrl: string) => createConnectTransport({ baseUrl, httpVersion: "2", sendCompression: compressionGzip, writeMaxBytes: 8 * 1024 * 1024 })],
  ] as const) {
    it(`SendToSession (${name}, gzip): a compressed 4 MiB register_tools is expanded, cut and refused in-band`, async () => {
      const session = factory.open();
      const { sessionId } = await startSession(session);
      const client = createClient(AgentService, transport(server.url));
      await withoutStall(async () => {
        const { lastSeq } = await client.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.register(minimalTools)) });
        expect(Number(lastSeq)).toBeGreaterThan(0);
        expect(await nextOf(session, "error")).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("more than 512 tools") });
      });
      session.end();
      await session.status;
    }, 60_000);
  }
});
