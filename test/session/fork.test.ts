// §11 fork through real clients: start{fork} opens a new session with the source's
// conversation (what the model is shown), tools and model; its transcript marks the copied
// turns; its own turns are numbered on; the source is unchanged and keeps running; refusals.
import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentService, type SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { toolNames } from "./chat-body.ts";
import type { ClientKind } from "../support/session-client.ts";
import { nextOf, nextWhere, readTurn, responseValue, rq, type StartInit, startSession, tool, turnCompleteOf } from "../support/session-protocol.ts";
import { marks, rollback, shown, turn } from "./conversation-support.ts";
import { GRPC, type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

const fork = (sessionId: string, throughTurn?: number) => ({ fork: { sessionId, ...(throughTurn !== undefined ? { throughTurn } : {}) } });

describe.each<ClientKind>(["grpc-js", "connect"])("start{fork} on StreamSession (%s)", (kind) => {
  it("copies the conversation through the last ended turn with the source's tools; turns go on from there; the source is unchanged", async () => {
    const { client: source, started: src } = await fx.start(kind, { tools: [tool("read_file")] });
    await turn(fx, source, "source question one");
    await turn(fx, source, "source question two");

    const forked = fx.open(kind);
    const started = await startSession(forked, fork(src.sessionId));
    expect(started.sessionId).not.toBe(src.sessionId);
    expect(started.model).toBe(src.model);
    await turn(fx, forked, "fork question");
    const seen = fx.requests().at(-1)!;
    for (const text of ["source question one", "answer to source question one", "source question two", "fork question"]) expect(shown(seen)).toContain(text);
    expect(toolNames(seen.body)).toEqual(["read_file"]);
    expect(await marks(fx, started.sessionId)).toEqual([
      { turn: 1, user: "source question one", forked_from: { session_id: src.sessionId, turn: 1 } },
      { turn: 2, user: "source question two", forked_from: { session_id: src.sessionId, turn: 2 } },
      { turn: 3, user: "fork question" },
    ]);

    // The source still runs, without the fork's turn.
    await turn(fx, source, "source question three");
    expect(shown(fx.requests().at(-1)!)).not.toContain("fork question");
    expect((await marks(fx, src.sessionId)).map((t) => t.turn)).toEqual([1, 2, 3]);
  });

  it("through_turn copies only that far; rolled-back turns are copied marked but not shown to the model", async () => {
    const { client: source, started: src } = await fx.start(kind);
    await turn(fx, source, "kept one");
    await turn(fx, source, "rolled back two");
    source.send(rollback(1));
    await source.responses.nextMatching((r) => r.response.case === "rolledBack", 10_000);
    await turn(fx, source, "kept three");
    await turn(fx, source, "after the fork point");

    const forked = fx.open(kind);
    const started = await startSession(forked, fork(src.sessionId, 3));
    await turn(fx, forked, "fork asks");
    const seen = shown(fx.requests().at(-1)!);
    expect(seen).toContain("kept one");
    expect(seen).toContain("kept three");
    expect(seen).not.toContain("rolled back two");
    expect(seen).not.toContain("after the fork point");
    expect(await marks(fx, started.sessionId)).toEqual([
      { turn: 1, user: "kept one", forked_from: { session_id: src.sessionId, turn: 1 } },
      { turn: 2, user: "rolled back two", rolled_back: true, forked_from: { session_id: src.sessionId, turn: 2 } },
      { turn: 3, user: "kept three", forked_from: { session_id: src.sessionId, turn: 3 } },
      { turn: 4, user: "fork asks" },
    ]);
    // The fork's own rollback counts its copied turns too (1, 3 and 4).
    forked.send(rollback(3));
    expect(responseValue(await forked.responses.nextMatching((r) => r.response.case === "rolledBack", 10_000), "rolledBack")).toMatchObject({
      turns: 3,
      remainingTurns: 0,
    });
  });

  it.each<[string, (source: string) => StartInit, number, string]>([
    ["through_turn 0", (s) => fork(s, 0), GRPC.INVALID_ARGUMENT, "invalid_argument"],
    ["a turn that has not ended", (s) => fork(s, 2), GRPC.INVALID_ARGUMENT, "invalid_argument"],
    ["an unknown source", () => fork(randomUUID()), GRPC.NOT_FOUND, "not_found"],
    ["a model with fork", (s) => ({ ...fork(s), model: "openai/fake-model" }), GRPC.INVALID_ARGUMENT, "invalid_argument"],
    ["tools with fork", (s) => ({ ...fork(s), tools: [tool("x")] }), GRPC.INVALID_ARGUMENT, "invalid_argument"],
    [
      "history with fork",
      (s) => ({ ...fork(s), history: [{ role: "user", parts: [{ part: { case: "text", value: { text: "hi" } } }] }] }),
      GRPC.INVALID_ARGUMENT,
      "invalid_argument",
    ],
    ["an environment with fork", (s) => ({ ...fork(s), environmentId: randomUUID() }), GRPC.INVALID_ARGUMENT, "invalid_argument"],
  ])("refuses %s: the start fails, nothing is created", async (_what, start, status, code) => {
    const { client: source, started: src } = await fx.start(kind);
    await turn(fx, source, "only turn");
    const before = (await fx.rest("GET", "/v1/sessions")).json.items.length;
    const client = fx.open(kind);
    client.send(rq.start(start(src.sessionId)));
    const first: SessionResponse = await client.next();
    expect(responseValue(first, "error")).toMatchObject({ code });
    expect((await client.status).code).toBe(status);
    expect((await fx.rest("GET", "/v1/sessions")).json.items.length).toBe(before);
  });
});

it("an envelope stream sees the fork's own first turn as turn_started{turn_index: 3} (connect, format both)", async () => {
  const { client: source, started: src } = await fx.start("connect");
  await turn(fx, source, "numbered one");
  await turn(fx, source, "numbered two");
  const forked = fx.open("connect", { "roz-event-format": "both" });
  forked.send(rq.start(fork(src.sessionId)));
  await nextOf(forked, "sessionStarted");
  fx.fake.plan({ text: "third" });
  forked.send(rq.user("numbered three"));
  const started = await nextWhere(forked, "sessionEvent", (e) => e.typedEvent.case === "turnStarted");
  expect(started.typedEvent.value).toMatchObject({ turnIndex: 3 });
  expect(turnCompleteOf(await readTurn(forked)).stopReason).toBe("end_turn");
});

it("AttachSession with start{fork}: the fork runs over the pair (connect)", async () => {
  const { client: source, started: src } = await fx.start("connect");
  await turn(fx, source, "pair source question");
  const sessionManager = new Http2SessionManager(fx.server.url);
  const client = createClient(AgentService, createConnectTransport({ baseUrl: fx.server.url, httpVersion: "2", sessionManager }));
  const downlink = new AbortController();
  try {
    const responses = client.attachSession({ target: { case: "start", value: fork(src.sessionId) } }, { signal: downlink.signal })[Symbol.asyncIterator]();
    const first = (await responses.next()).value as SessionResponse;
    const forkId = responseValue(first, "sessionStarted").sessionId;
    expect(await marks(fx, forkId)).toEqual([{ turn: 1, user: "pair source question", forked_from: { session_id: src.sessionId, turn: 1 } }]);
  } finally {
    downlink.abort();
    sessionManager.abort();
  }
});
