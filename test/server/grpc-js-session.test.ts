// StreamSession over h2c with @grpc/grpc-js: the §1 lifecycle as a real gRPC client sees it.
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type RozGrpcJsClient, type SessionCall, type WireResponse } from "../support/grpc-js-client.ts";
import { liveSession, startServer, type TestServer } from "../support/server.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let server: TestServer;
let client: RozGrpcJsClient;
const calls: SessionCall[] = [];
const open = (): SessionCall => {
  const call = client.openSession();
  calls.push(call);
  return call;
};

beforeAll(async () => {
  // No keepalives during these tests: every response is one the test asked for.
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  client = createGrpcJsClient(server.url);
});
afterEach(() => {
  for (const call of calls.splice(0)) call.cancel();
});
afterAll(async () => {
  client?.close();
  await server?.close();
});

const errorOf = (r: WireResponse) => {
  expect(r.response).toBe("error");
  return r["error"] as { code: string; message: string; retryable: boolean };
};

async function startSession(call: SessionCall): Promise<{ sessionId: string; model: string }> {
  call.send(req.start());
  const started = await call.next();
  expect(started.response).toBe("session_started");
  const body = started["session_started"] as { session_id: string; model: string };
  return { sessionId: body.session_id, model: body.model };
}

describe("StreamSession over h2c (grpc-js)", () => {
  it("answers ping with pong before start, with sequence 0", async () => {
    const call = open();
    call.send(req.ping());
    const pong = await call.next();
    expect(pong).toMatchObject({ response: "pong", seq: "0" });
  });

  it("rejects user_message, tool_result and register_tools before start with no_session, and goes on", async () => {
    const call = open();
    call.send(req.userMessage("hello"));
    call.send(req.toolResult("call-1"));
    call.send(req.registerTools([{ name: "ls", description: "list" }]));
    for (let i = 0; i < 3; i++) {
      const response = await call.next();
      expect(response.seq).toBe("0");
      expect(errorOf(response)).toMatchObject({ code: "no_session", retryable: false });
    }
    // Not fatal: the same stream still starts a session.
    call.send(req.ping());
    expect((await call.next()).response).toBe("pong");
    const { sessionId } = await startSession(call);
    expect(sessionId).toMatch(UUID);
  });

  it("starts a session on the default model, numbers events from 1, and refuses a second start", async () => {
    const call = open();
    call.send(req.start());
    const started = await call.next();
    expect(started.response).toBe("session_started");
    expect(started.seq).toBe("1");
    const body = started["session_started"] as { session_id: string; model: string; permissions: unknown[] };
    expect(body.session_id).toMatch(UUID);
    expect(body.model).toBe("scripted/default");
    expect(Array.isArray(body.permissions)).toBe(true);
    expect(liveSession(server.app, body.session_id)).toBeDefined();

    call.send(req.start());
    const again = await call.next();
    expect(errorOf(again)).toMatchObject({ code: "already_started", retryable: false });
    call.send(req.ping());
    const pong = await call.next();
    expect(pong.response).toBe("pong");
    // After start every response is numbered by the session, gap-free.
    expect([started, again, pong].map((r) => Number(r.seq))).toEqual([1, 2, 3]);
  });

  it("two sessions get different ids", async () => {
    const a = await startSession(open());
    const b = await startSession(open());
    expect(a.sessionId).not.toBe(b.sessionId);
  });

  it("cancel_session ends the stream with OK and removes the session", async () => {
    const call = open();
    const { sessionId } = await startSession(call);
    call.send(req.cancelSession("done here"));
    const status = await call.status;
    expect(status.code).toBe(grpc.status.OK);
    expect(await call.responses.rest()).toEqual([]);
    await expect.poll(() => liveSession(server.app, sessionId)).toBeUndefined();
  });

  it("cancel_session before start ends the stream with OK", async () => {
    const call = open();
    call.send(req.cancelSession());
    expect((await call.status).code).toBe(grpc.status.OK);
  });

  it("a half-close ends a started session and the stream with OK", async () => {
    const call = open();
    const { sessionId } = await startSession(call);
    call.end();
    const status = await call.status;
    expect(status.code).toBe(grpc.status.OK);
    await expect.poll(() => liveSession(server.app, sessionId)).toBeUndefined();
  });

  it("a half-close before start ends the stream with OK", async () => {
    const call = open();
    call.send(req.ping());
    expect((await call.next()).response).toBe("pong");
    call.end();
    expect((await call.status).code).toBe(grpc.status.OK);
  });

  it("ignores messages it does not act on before start", async () => {
    const call = open();
    call.send({ cancel_turn: { reason: "x" } });
    call.send({ feedback: { session_id: "s", message_id: "m", rating: "up" } });
    call.send({ permission_decision: { tool_call_id: "t", approved: true } });
    call.send(req.ping());
    expect((await call.next()).response).toBe("pong");
  });
});
