// Sessions that outlive their stream (session-behaviour.md §6): resume from a seq, several
// clients on one session, AttachSession + SendToSession, expired and future seqs.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService, type SessionResponse, SessionRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { request } from "../rest/support.ts";
import { bufCurl, bufCurlMessages } from "../support/buf-curl.ts";
import { liveSession, startServer, type TestServer } from "../support/server.ts";
import { type ClientKind, type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { caseOf, nextOf, readTurn, rq, show, startSession, tool, responseValue } from "../support/session-protocol.ts";

const script = (responses: unknown[][]): string => `script: ${JSON.stringify({ responses })}`;
/** A turn that calls `read_file` once, then answers. */
const toolTurn = script([[{ tool_call: { id: "call_1", name: "read_file", arguments: { path: "a.txt" } } }], [{ text: "It says hi." }]]);
/** A turn that streams `n` text deltas with a pause after each. */
const streamingTurn = (n: number, pauseMs = 15) => script([Array.from({ length: n }, (_, i) => [{ text: `w${i} ` }, { delay_ms: pauseMs }]).flat()]);

const resume = (sessionId: string, afterSeq?: number) =>
  ({ request: { case: "resume", value: { sessionId, ...(afterSeq !== undefined ? { afterSeq: BigInt(afterSeq) } : {}) } } }) as const;

/** What a client keeps of a stream: kept responses only (keepalives and pongs answer one stream). */
const kept = (responses: readonly SessionResponse[]) => responses.filter((r) => r.seq > 0n && caseOf(r) !== "keepalive" && caseOf(r) !== "pong");
const shown = (responses: readonly SessionResponse[]) => kept(responses).map(show);
const lastSeq = (client: SessionClient) => Number(client.responses.seen.at(-1)?.seq ?? 0n);

let server: TestServer;
const factories: SessionClientFactory[] = [];
beforeAll(async () => {
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
});
afterAll(async () => {
  for (const f of factories) f.close();
  await server?.close();
});
const factory = (kind: ClientKind): SessionClientFactory => {
  const f = sessionClientFactory(kind, server.url);
  factories.push(f);
  return f;
};

describe.each<ClientKind>(["grpc-js", "connect"])("resume on StreamSession (%s)", (kind) => {
  it("after a break mid-turn, resume from the last seq seen re-sends the open tool request (original id and seq), then continues live", async () => {
    const f = factory(kind);
    const first = f.open();
    const { sessionId } = await startSession(first, { tools: [tool("read_file")] });
    first.send(rq.user(toolTurn));
    const request = await nextOf(first, "toolRequest");
    const seen = lastSeq(first);
    first.cancel();
    await first.status;
    await expect.poll(() => liveSession(server.app, sessionId)?.status).toBe("detached");

    const second = f.open();
    second.send(resume(sessionId, seen));
    const again = await second.next();
    expect(responseValue(again, "toolRequest").toolCallId).toBe(request.toolCallId);
    expect(Number(again.seq)).toBeLessThanOrEqual(seen);
    expect(liveSession(server.app, sessionId)?.status).toBe("active");
    second.send(rq.toolResult(request.toolCallId, "hi"));
    const rest = await readTurn(second);
    expect(rest.every((r) => Number(r.seq) > seen)).toBe(true);
    expect(responseValue(rest.at(-1)!, "turnComplete").stopReason).toBe("end_turn");
    second.end();
    expect((await second.status).code).toBe(0);
    expect(liveSession(server.app, sessionId)).toBeUndefined();
  });

  it("resume with after_seq 0 while a turn streams: the whole sequence, then live, with no gap and no duplicate at the seam", async () => {
    const f = factory(kind);
    const first = f.open();
    const { sessionId } = await startSession(first);
    first.send(rq.user(streamingTurn(40)));
    await nextOf(first, "textDelta");
    const second = f.open();
    second.send(resume(sessionId, 0));
    const firstTurn = await readTurn(first);
    const secondTurn = await readTurn(second);
    expect(firstTurn.length).toBeGreaterThan(2);
    expect(shown(secondTurn)).toEqual(shown(first.responses.seen));
    first.end();
    second.end();
    expect((await first.status).code).toBe(0);
    expect((await second.status).code).toBe(0);
  });

  it("after_seq beyond the last seq is INVALID_ARGUMENT (in-band first), and an unknown session NOT_FOUND", async () => {
    const f = factory(kind);
    const first = f.open();
    const { sessionId } = await startSession(first);
    const future = f.open();
    future.send(resume(sessionId, 99));
    expect(responseValue(await future.next(), "error").code).toBe("invalid_argument");
    expect((await future.status).code).toBe(Code.InvalidArgument);
    const unknown = f.open();
    unknown.send(resume("00000000-0000-4000-8000-000000000000", 0));
    expect(responseValue(await unknown.next(), "error").code).toBe("not_found");
    expect((await unknown.status).code).toBe(Code.NotFound);
    // The refused resumes left the session alone.
    first.send(rq.ping());
    expect(caseOf(await first.next())).toBe("pong");
    first.end();
    await first.status;
  });

  it("an ended session replays its remaining events, then the stream ends OK", async () => {
    const f = factory(kind);
    const first = f.open();
    const { sessionId } = await startSession(first);
    first.send(rq.user("hello"));
    await readTurn(first);
    first.end();
    expect((await first.status).code).toBe(0);
    const again = f.open();
    again.send(resume(sessionId, 1));
    expect((await again.status).code).toBe(0);
    expect(shown(again.responses.seen)).toEqual(shown(first.responses.seen).slice(1));
  });
});

describe("several clients on one session", () => {
  it("one sends, both see everything in the same order; both answer a tool call and exactly one wins", async () => {
    const f = factory("grpc-js");
    const a = f.open();
    const { sessionId } = await startSession(a, { tools: [tool("read_file")] });
    const b = factory("connect").open();
    b.send(resume(sessionId, 1));
    await expect.poll(() => liveSession(server.app, sessionId)?.attachedStreams).toBe(2);
    const rest = await request(server.url, "GET", `/v1/sessions/${sessionId}`);
    expect(rest.json).toMatchObject({ attached_streams: 2, last_seq: 1, status: "active" });

    // Two calls: while the turn waits for the second, the first is already answered.
    a.send(
      rq.user(
        script([
          [{ tool_call: { id: "call_1", name: "read_file", arguments: { path: "a.txt" } } }],
          [{ tool_call: { id: "call_2", name: "read_file", arguments: { path: "b.txt" } } }],
          [{ text: "done" }],
        ]),
      ),
    );
    const [ra, rb] = await Promise.all([nextOf(a, "toolRequest"), nextOf(b, "toolRequest")]);
    expect(rb.toolCallId).toBe(ra.toolCallId);
    a.send(rq.toolResult(ra.toolCallId, "from a"));
    b.send(rq.toolResult(ra.toolCallId, "from b"));
    // The loser hears `unknown_tool_call` (on every attached stream, like any in-band error).
    expect((await nextOf(a, "error")).code).toBe("unknown_tool_call");
    const second = await nextOf(b, "toolRequest");
    expect(second.toolCallId).toBe("call_2");
    b.send(rq.toolResult("call_2", "two"));
    await Promise.all([readTurn(a), readTurn(b)]);
    expect(shown(b.responses.seen)).toEqual(shown(a.responses.seen).slice(1));
    const errors = kept(a.responses.seen).filter((r) => caseOf(r) === "error");
    expect(errors.map((r) => responseValue(r, "error").code)).toEqual(["unknown_tool_call"]);
    const turns = await request(server.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`);
    const calls = (turns.json.turns as { tool_calls: { id: string; result: string }[] }[]).flatMap((t) => t.tool_calls);
    expect(calls.map((c) => c.id)).toEqual(["call_1", "call_2"]);
    expect(["from a", "from b"]).toContain(calls[0]!.result);

    // One stream's half-close detaches only it; cancel_session from the other ends the session for all.
    b.end();
    expect((await b.status).code).toBe(0);
    expect(liveSession(server.app, sessionId)?.attachedStreams).toBe(1);
    const c = factory("connect").open();
    c.send(resume(sessionId, lastSeq(a)));
    await expect.poll(() => liveSession(server.app, sessionId)?.attachedStreams).toBe(2);
    c.send(rq.cancelSession("done"));
    expect((await a.status).code).toBe(0);
    expect((await c.status).code).toBe(0);
    expect((await request(server.url, "GET", `/v1/sessions/${sessionId}`)).json.status).toBe("cancelled");
  });

  it("a session ends when its last attached stream half-closes", async () => {
    const a = factory("grpc-js").open();
    const { sessionId } = await startSession(a);
    const b = factory("grpc-js").open();
    b.send(resume(sessionId, 1));
    await expect.poll(() => liveSession(server.app, sessionId)?.attachedStreams).toBe(2);
    a.end();
    expect((await a.status).code).toBe(0);
    expect(liveSession(server.app, sessionId)?.status).toBe("active");
    b.end();
    expect((await b.status).code).toBe(0);
    expect((await request(server.url, "GET", `/v1/sessions/${sessionId}`)).json.status).toBe("completed");
  });
});

describe("replay from the store", () => {
  it("a replay of 10,000 responses arrives complete and in order", async () => {
    const a = factory("grpc-js").open();
    const { sessionId } = await startSession(a);
    const N = 10_000;
    // Each of these gets a kept in-band `no_active_turn` error.
    for (let i = 0; i < N; i++) a.send(rq.toolResult(`x${i}`, ""));
    await a.responses.nextMatching((r) => Number(r.seq) === N + 1, 60_000);
    const b = factory("connect").open();
    b.send(resume(sessionId, 0));
    const got = await b.responses.nextMatching((r) => Number(r.seq) === N + 1, 60_000);
    expect(got.seq).toBe(BigInt(N + 1));
    const seqs = b.responses.seen.map((r) => Number(r.seq));
    expect(seqs).toEqual(Array.from({ length: N + 1 }, (_, i) => i + 1));
    expect(shown(b.responses.seen)).toEqual(shown(a.responses.seen));
    a.cancel();
    b.cancel();
  }, 120_000);
});

describe("retention", () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await startServer({ ROZ_EVENT_RETENTION: "5", ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  });
  afterAll(() => small?.close());

  it("after_seq older than what is kept gets SessionError{events_expired} then OUT_OF_RANGE; a later one still works", async () => {
    const f = sessionClientFactory("connect", small.url);
    factories.push(f);
    const a = f.open();
    const { sessionId } = await startSession(a);
    for (let i = 0; i < 10; i++) a.send(rq.toolResult(`x${i}`, ""));
    await a.responses.nextMatching((r) => Number(r.seq) === 11);
    await expect.poll(async () => (await small.app.store.lastEventSeq(small.app.registry.all()[0]!.principal.tenantId, sessionId)) ?? 0).toBe(11);
    expect(await small.app.store.pruneEvents()).toBeGreaterThan(0);
    const old = f.open();
    old.send(resume(sessionId, 0));
    expect(responseValue(await old.next(), "error").code).toBe("events_expired");
    expect((await old.status).code).toBe(Code.OutOfRange);
    const recent = f.open();
    recent.send(resume(sessionId, 8));
    await recent.responses.nextMatching((r) => Number(r.seq) === 11);
    expect(recent.responses.seen.map((r) => Number(r.seq))).toEqual([9, 10, 11]);
    a.cancel();
    recent.cancel();
  });
});

describe.each(["connect", "grpc-web"] as const)("AttachSession + SendToSession (%s)", (protocol) => {
  const transportFor = (binary: boolean) => {
    const sessionManager = new Http2SessionManager(server.url);
    const options = { baseUrl: server.url, httpVersion: "2" as const, sessionManager, useBinaryFormat: binary };
    return { transport: protocol === "connect" ? createConnectTransport(options) : createGrpcWebTransport(options), sessionManager };
  };

  it.each([true, false])("runs a session with a client tool over the pair, re-attaches from the last seq seen (binary %s)", async (binary) => {
    const { transport, sessionManager } = transportFor(binary);
    const client = createClient(AgentService, transport);
    try {
      const downlink = new AbortController();
      const seen: SessionResponse[] = [];
      const reader = (async () => {
        for await (const r of client.attachSession(
          { target: { case: "start", value: { tools: [{ name: "read_file", description: "read" }] } } },
          { signal: downlink.signal },
        )) {
          seen.push(r);
        }
      })().catch(() => undefined);
      await expect.poll(() => seen.length).toBeGreaterThan(0);
      const sessionId = responseValue(seen[0]!, "sessionStarted").sessionId;
      const sent = await client.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.user(toolTurn)) });
      expect(sent.lastSeq).toBe(1n);
      await expect.poll(() => seen.some((r) => caseOf(r) === "toolRequest")).toBe(true);
      const upTo = Number(seen.at(-1)!.seq);
      downlink.abort();
      await reader;
      await expect.poll(() => liveSession(server.app, sessionId)?.status).toBe("detached");

      // A reload: a new downlink from the last seq seen gets the open tool request again.
      const again: SessionResponse[] = [];
      const downlink2 = new AbortController();
      const reader2 = (async () => {
        for await (const r of client.attachSession({ target: { case: "sessionId", value: sessionId }, afterSeq: BigInt(upTo) }, { signal: downlink2.signal })) {
          again.push(r);
        }
      })();
      await expect.poll(() => again.length).toBeGreaterThan(0);
      const call = responseValue(again[0]!, "toolRequest");
      await client.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.toolResult(call.toolCallId, "hi")) });
      await expect.poll(() => again.some((r) => caseOf(r) === "turnComplete")).toBe(true);
      expect(
        again
          .filter((r) => caseOf(r) === "textDelta")
          .map((r) => responseValue(r, "textDelta").content)
          .join(""),
      ).toBe("It says hi.");

      // The unary call's own failures.
      const fails = async (req: Parameters<typeof client.sendToSession>[0]) => {
        try {
          await client.sendToSession(req);
          return Code.Unknown as Code;
        } catch (err) {
          return ConnectError.from(err).code;
        }
      };
      expect(await fails({ sessionId, request: create(SessionRequestSchema, rq.start()) })).toBe(Code.InvalidArgument);
      expect(await fails({ sessionId, request: create(SessionRequestSchema, resume(sessionId, 0)) })).toBe(Code.InvalidArgument);
      expect(await fails({ sessionId: "00000000-0000-4000-8000-000000000000", request: create(SessionRequestSchema, rq.ping()) })).toBe(Code.NotFound);
      await client.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.cancelSession()) });
      await reader2;
      expect(await fails({ sessionId, request: create(SessionRequestSchema, rq.ping()) })).toBe(Code.FailedPrecondition);
    } finally {
      sessionManager.abort();
    }
  });
});

describe("buf curl", () => {
  it("reconnects as docs/resume.md shows: resume after the last seq seen, then the next message", async () => {
    const a = factory("grpc-js").open();
    const { sessionId } = await startSession(a);
    a.send(rq.user("hello roz"));
    await readTurn(a);
    const seen = lastSeq(a);
    a.cancel();
    await a.status;
    const body = `{"resume":{"session_id":"${sessionId}","after_seq":${seen}}} {"user_message":{"content":"still there?"}}`;
    const responses = bufCurlMessages<{ seq: string; turnComplete?: object; textDelta?: { content: string } }>(
      await bufCurl(["-d", body, `${server.url}/roz.v1.AgentService/StreamSession`]),
    );
    expect(Number(responses[0]!.seq)).toBe(seen + 1);
    expect(responses.map((r) => r.textDelta?.content ?? "").join("")).toContain("still there?");
    expect(responses.at(-1)!.turnComplete).toBeDefined();
    expect((await request(server.url, "GET", `/v1/sessions/${sessionId}`)).json).toMatchObject({ status: "completed", turn_count: 2 });
  });
});
