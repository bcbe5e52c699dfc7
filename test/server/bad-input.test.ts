// Bad input and vanishing clients: each gets the protocol's proper answer, and the server
// (this process) keeps serving afterwards.
import { randomBytes } from "node:crypto";
import * as http2 from "node:http2";
import { setTimeout as delay } from "node:timers/promises";
import { fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRequestSchema, SessionResponseSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { createGrpcJsClient, req, type RozGrpcJsClient, type SessionCall, type WireResponse } from "../support/grpc-js-client.ts";
import { liveSession, startServer, type TestServer } from "../support/server.ts";
import { sessionRequestBytes } from "../support/session-client.ts";
import { curl } from "./curl.ts";
import { grpcFrame, grpcHeaders, grpcStatusOf, h2Request, parseGrpcFrames } from "./raw-h2.ts";

const STREAM_SESSION = "/roz.v1.AgentService/StreamSession";
const LIMIT = 64 * 1024;

let server: TestServer;
let client: RozGrpcJsClient;
beforeAll(async () => {
  server = await startServer({ ROZ_MAX_MESSAGE_BYTES: "64KiB", ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  client = createGrpcJsClient(server.url);
});
afterAll(async () => {
  client?.close();
  await server?.close();
});

const startBytes = () => sessionRequestBytes({ request: { case: "start", value: {} } });

/** Bytes that are certainly not a SessionRequest (checked with the real decoder). */
function garbage(): Buffer {
  for (;;) {
    const bytes = randomBytes(48);
    try {
      fromBinary(SessionRequestSchema, bytes);
    } catch {
      return bytes;
    }
  }
}

const errorCodes = (responses: WireResponse[]): string[] => responses.filter((r) => r.response === "error").map((r) => (r["error"] as { code: string }).code);

async function startSession(call: SessionCall): Promise<string> {
  call.send(req.start());
  const started = await call.next();
  expect(started.response).toBe("session_started");
  return (started["session_started"] as { session_id: string }).session_id;
}

describe("message size limit (ROZ_MAX_MESSAGE_BYTES=64KiB)", () => {
  it("accepts a start just under the limit", async () => {
    const call = client.openSession();
    try {
      call.send(req.start({ project_context: ["x".repeat(LIMIT - 1024)] }));
      expect((await call.next()).response).toBe("session_started");
    } finally {
      call.cancel();
    }
  });

  it("ends a stream whose start is too large with RESOURCE_EXHAUSTED", async () => {
    const call = client.openSession();
    call.send(req.start({ project_context: ["x".repeat(LIMIT + 1024)] }));
    const status = await call.status;
    expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(errorCodes(call.responses.seen)).toEqual(["resource_exhausted"]);
  });

  it("ends a started session on a too-large message with RESOURCE_EXHAUSTED", async () => {
    const call = client.openSession();
    const sessionId = await startSession(call);
    call.send(req.userMessage("y".repeat(LIMIT * 2)));
    const status = await call.status;
    expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    await expect.poll(() => liveSession(server.app, sessionId)).toBeUndefined();
  });
});

describe("malformed gRPC bodies (raw HTTP/2)", () => {
  it("a truncated frame is INVALID_ARGUMENT", async () => {
    const response = await h2Request(server.url, grpcHeaders(STREAM_SESSION), grpcFrame(Buffer.from("abc"), { declaredLength: 100 }));
    expect(response.headers[":status"]).toBe(200);
    expect(grpcStatusOf(response)).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("a truncated frame header is INVALID_ARGUMENT", async () => {
    const response = await h2Request(server.url, grpcHeaders(STREAM_SESSION), Buffer.from([0, 0, 0]));
    expect(grpcStatusOf(response)).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("random bytes as the message are INVALID_ARGUMENT, with an in-band error first", async () => {
    const response = await h2Request(server.url, grpcHeaders(STREAM_SESSION), grpcFrame(garbage()));
    expect(grpcStatusOf(response)).toBe(grpc.status.INVALID_ARGUMENT);
    const messages = parseGrpcFrames(response.data).map((m) => fromBinary(SessionResponseSchema, m));
    expect(messages.map((m) => m.response.case)).toEqual(["error"]);
    expect(messages[0]?.response.value).toMatchObject({ code: "invalid_argument" });
  });

  it("random bytes after start are INVALID_ARGUMENT and end the session", async () => {
    const before = server.app.registry.size;
    const response = await h2Request(server.url, grpcHeaders(STREAM_SESSION), Buffer.concat([grpcFrame(startBytes()), grpcFrame(garbage())]));
    expect(grpcStatusOf(response)).toBe(grpc.status.INVALID_ARGUMENT);
    const frames = parseGrpcFrames(response.data);
    const messages = frames.map((m) => fromBinary(SessionResponseSchema, m));
    expect(messages[0]?.response.case).toBe("sessionStarted");
    // `seq` is field 100 (varint): tag bytes A0 06, then the value 1.
    expect(frames[0]!.includes(Buffer.from([0xa0, 0x06, 0x01]))).toBe(true);
    await expect.poll(() => server.app.registry.size).toBe(before);
  });
});

describe("wrong content type", () => {
  it.each(["text/plain", "application/xml"])("%s to the gRPC path over HTTP/2 is 415", async (contentType) => {
    const response = await h2Request(server.url, grpcHeaders(STREAM_SESSION, contentType), Buffer.from("hello"));
    expect(response.headers[":status"]).toBe(415);
  });

  it.each(["text/plain", "application/xml"])("%s to the gRPC path over HTTP/1.1 is 415", async (contentType) => {
    const r = await curl(`${server.url}/roz.v1.AgentService/WatchTeam`, "1.1", { method: "POST", headers: { "content-type": contentType }, data: "hello" });
    expect(r.status).toBe(415);
  });
});

describe("unknown methods", () => {
  it("grpc-js gets UNIMPLEMENTED for an unknown method", async () => {
    const call = client.openRawBidi("/roz.v1.AgentService/Nope");
    call.send(Buffer.from([]));
    call.end();
    const status = await call.status;
    expect(status.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(status.details).toContain("/roz.v1.AgentService/Nope");
  });

  it.each(["/roz.v1.AgentService/Nope", "/roz.v1.NoSuchService/Call"])("a raw gRPC call to %s gets a trailers-only grpc-status 12", async (path) => {
    const response = await h2Request(server.url, grpcHeaders(path), grpcFrame(Buffer.alloc(0)));
    expect(response.headers[":status"]).toBe(200);
    expect(response.headers["grpc-status"]).toBe("12");
    expect(response.data.length).toBe(0);
  });

  it("gRPC-Web over HTTP/1.1 to an unknown method gets grpc-status 12", async () => {
    const r = await curl(`${server.url}/roz.v1.AgentService/Nope`, "1.1", {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
      data: "",
    });
    expect(r.status).toBe(200);
    expect(r.headers["grpc-status"]).toBe("12");
  });

  it("Connect over HTTP/1.1 to an unknown method gets 404 with a Connect error body", async () => {
    const r = await curl(`${server.url}/roz.v1.AgentService/Nope`, "1.1", {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      data: "{}",
    });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body)).toMatchObject({ code: "unimplemented" });
  });
});

/** Opens a raw HTTP/2 StreamSession, sends start and waits for session_started. */
async function openRawStarted(session: http2.ClientHttp2Session): Promise<{ stream: http2.ClientHttp2Stream; sessionId: string }> {
  const stream = session.request(grpcHeaders(STREAM_SESSION));
  stream.on("error", () => {});
  stream.write(grpcFrame(startBytes()));
  const first = await new Promise<Buffer>((resolve) => stream.once("data", resolve));
  const started = fromBinary(SessionResponseSchema, parseGrpcFrames(first)[0]!);
  if (started.response.case !== "sessionStarted") throw new Error(`expected sessionStarted, got ${started.response.case}`);
  return { stream, sessionId: started.response.value.sessionId };
}

describe("clients that vanish mid-stream", () => {
  it("a grpc-js client closed and cancelled during a started stream detaches its session", async () => {
    const own = createGrpcJsClient(server.url);
    const call = own.openSession();
    const sessionId = await startSession(call);
    own.close();
    call.cancel();
    expect((await call.status).code).toBe(grpc.status.CANCELLED);
    await expect.poll(() => liveSession(server.app, sessionId)?.status).toBe("detached");
  });

  it("an HTTP/2 connection destroyed during a started stream detaches its session", async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const { sessionId } = await openRawStarted(session);
    session.destroy();
    await expect.poll(() => liveSession(server.app, sessionId)?.status).toBe("detached");
  });

  it("an HTTP/2 connection destroyed in the middle of a frame does no harm", async () => {
    const sessionsBefore = new Set(server.app.registry.all().map((s) => s.id));
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const stream = session.request(grpcHeaders(STREAM_SESSION));
    stream.on("error", () => {});
    // 300 of the frame's 1005 bytes, flushed to the socket before the connection goes.
    await new Promise<void>((resolve, reject) => stream.write(grpcFrame(Buffer.alloc(1000, 1)).subarray(0, 300), (err) => (err ? reject(err) : resolve())));
    const closed = new Promise((resolve) => session.once("close", resolve));
    session.destroy();
    await closed;
    // No session came of the half frame, and the next client is served as usual.
    const call = client.openSession();
    try {
      const sessionId = await startSession(call);
      const created = server.app.registry
        .all()
        .filter((s) => !sessionsBefore.has(s.id))
        .map((s) => s.id);
      expect(created).toEqual([sessionId]);
    } finally {
      call.cancel();
    }
  });

  it("a stream reset (RST_STREAM) during a started stream detaches its session", async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    try {
      const { stream, sessionId } = await openRawStarted(session);
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await expect.poll(() => liveSession(server.app, sessionId)?.status).toBe("detached");
    } finally {
      session.destroy();
    }
  });

  it("a reset passed on by a proxy as END_STREAM, then RST_STREAM a little later, detaches its session", async () => {
    // HAProxy forwards a client's RST_STREAM so, and answers the node's PING itself in between.
    const session = http2.connect(server.url);
    session.on("error", () => {});
    try {
      const { stream, sessionId } = await openRawStarted(session);
      stream.end();
      await delay(20);
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await expect.poll(() => liveSession(server.app, sessionId)?.status).toBe("detached");
    } finally {
      session.destroy();
    }
  });
});

describe("after all of that", () => {
  it("the server still runs a fresh StreamSession and answers /healthz on both protocols", async () => {
    const fresh = createGrpcJsClient(server.url);
    try {
      const call = fresh.openSession();
      call.send(req.ping());
      expect((await call.next()).response).toBe("pong");
      await startSession(call);
      call.end();
      expect((await call.status).code).toBe(grpc.status.OK);
    } finally {
      fresh.close();
    }
    for (const http of ["1.1", "h2c"] as const) expect((await curl(`${server.url}/healthz`, http)).status).toBe(200);
  });
});
