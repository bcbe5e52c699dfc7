// §1–§2 stream lifecycle end to end: fatal start validation, before-start answers, how a
// session ends, message ids, one turn_complete per accepted message (always last),
// gap-free sequence numbers, activity updates.
import { randomUUID } from "node:crypto";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ClientKind, SessionClient } from "../support/session-client.ts";
import { barrier, caseOf, nextOf, readTurn, rq, sequenceProblem, show, tool, turnCompleteOf, responseValue, valuesOf } from "../support/session-protocol.ts";
import { GRPC, type SessionFixture, startSessionFixture, UUID } from "./fixture.ts";

describe("sessions on the fake provider", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture();
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  describe.each<ClientKind>(["grpc-js", "connect"])("fatal start validation (%s)", (kind) => {
    const cases = [
      { name: "an unknown model", start: { model: "nope/missing" }, code: "model_unavailable", status: GRPC.FAILED_PRECONDITION },
      { name: "a malformed environment_id", start: { environmentId: "not-a-uuid" }, code: "invalid_argument", status: GRPC.INVALID_ARGUMENT },
      { name: "an unknown environment UUID", start: { environmentId: randomUUID() }, code: "not_found", status: GRPC.NOT_FOUND },
      {
        name: "a tool whose parameters_schema is not an object schema",
        start: { tools: [tool("probe", { parameters: { type: "string" } })] },
        code: "invalid_argument",
        status: GRPC.INVALID_ARGUMENT,
      },
    ];
    it.each(cases)("$name → SessionError{$code} then the matching gRPC status; nothing is created", async ({ start, code, status }) => {
      const client = fx.open(kind);
      client.send(rq.start(start));
      const first = await client.next();
      expect(responseValue(first, "error")).toMatchObject({ code, retryable: false });
      expect(first.seq).toBe(0n);
      const end = await client.status;
      expect(end.code, end.message).toBe(status);
      expect(await client.responses.rest()).toEqual([]);
      expect(fx.server.app.registry.size).toBe(0);
      expect(fx.requests()).toEqual([]);
    });
  });

  it.each<ClientKind>(["grpc-js", "connect"])("a client message_id is echoed on every delta and on turn_complete (%s)", async (kind) => {
    const { client } = await fx.start(kind);
    // Frames spaced out, so that the server cannot merge the deltas into one message.
    fx.fake.plan({ reasoning: "Let me think about it.", text: "Here is the answer.", frameDelayMs: 20 });
    client.send(rq.user("question", { messageId: "client-id-1" }));
    const turn = await readTurn(client);
    const deltas = [...valuesOf(turn, "thinkingDelta"), ...valuesOf(turn, "textDelta")];
    expect(valuesOf(turn, "thinkingDelta").length).toBeGreaterThan(1);
    expect(valuesOf(turn, "textDelta").length).toBeGreaterThan(1);
    expect(new Set(deltas.map((d) => d.messageId))).toEqual(new Set(["client-id-1"]));
    expect(turnCompleteOf(turn).messageId).toBe("client-id-1");
  });

  it.each<ClientKind>(["grpc-js", "connect"])("without a message_id the server generates one per turn and echoes it (%s)", async (kind) => {
    const { client } = await fx.start(kind);
    const ids: string[] = [];
    for (const text of ["first answer", "second answer"]) {
      fx.fake.plan({ reasoning: "hmm", text });
      client.send(rq.user("question"));
      const turn = await readTurn(client);
      const id = turnCompleteOf(turn).messageId;
      expect(id).toMatch(UUID);
      const deltas = [...valuesOf(turn, "thinkingDelta"), ...valuesOf(turn, "textDelta")];
      expect(deltas.length).toBeGreaterThan(0);
      for (const d of deltas) expect(d.messageId).toBe(id);
      ids.push(id);
    }
    expect(ids[0]).not.toBe(ids[1]);
  });

  it("before start: ping → pong (seq 0); user_message, tool_result, register_tools → no_session; a second start → already_started (connect)", async () => {
    const client = fx.open("connect");
    client.send(rq.ping());
    expect(await client.next()).toMatchObject({ seq: 0n, response: { case: "pong" } });
    client.send(rq.user("too early"));
    client.send(rq.toolResult("call_1", "x"));
    client.send(rq.register([tool("t")]));
    for (let i = 0; i < 3; i++) {
      const r = await client.next();
      expect(r.seq).toBe(0n);
      expect(responseValue(r, "error")).toMatchObject({ code: "no_session", retryable: false });
    }
    // Ignored before start: nothing comes back for these.
    client.send(rq.cancelTurn());
    client.send(rq.decision("call_1", true));
    client.send(rq.start());
    const started = await client.next();
    expect(started.seq).toBe(1n);
    expect(responseValue(started, "sessionStarted").sessionId).toMatch(UUID);
    client.send(rq.start());
    expect(responseValue(await client.next(), "error")).toMatchObject({ code: "already_started", retryable: false });
  });

  it("cancel_session before start ends the call with OK (grpc-js)", async () => {
    const client = fx.open("grpc-js");
    client.send(rq.cancelSession());
    expect((await client.status).code).toBe(GRPC.OK);
  });

  describe.each<ClientKind>(["grpc-js", "connect"])("ending a session (%s)", (kind) => {
    const statusOf = async (id: string): Promise<string> => (await fx.rest("GET", `/v1/sessions/${id}`)).json.status;

    it("a half-close ends the stream with OK and the session as completed", async () => {
      const { client, started } = await fx.start(kind);
      expect(await statusOf(started.sessionId)).toBe("active");
      client.end();
      expect((await client.status).code).toBe(GRPC.OK);
      await expect.poll(() => statusOf(started.sessionId), { timeout: 10_000 }).toBe("completed");
      expect(fx.server.app.registry.size).toBe(0);
    });

    it("cancel_session ends the stream with OK and the session as cancelled", async () => {
      const { client, started } = await fx.start(kind);
      client.send(rq.cancelSession("bye"));
      expect((await client.status).code).toBe(GRPC.OK);
      await expect.poll(() => statusOf(started.sessionId), { timeout: 10_000 }).toBe("cancelled");
      expect(fx.server.app.registry.size).toBe(0);
    });

    it("a half-close during a turn lets the turn finish, then completes the session", async () => {
      const { client, started } = await fx.start(kind);
      fx.fake.plan({ text: "finishing my sentence", frameDelayMs: 20 });
      client.send(rq.user("talk", { messageId: "last-words" }));
      client.end();
      const turn = await readTurn(client);
      expect(turnCompleteOf(turn)).toMatchObject({ messageId: "last-words", stopReason: "end_turn" });
      expect((await client.status).code).toBe(GRPC.OK);
      await expect.poll(() => statusOf(started.sessionId), { timeout: 10_000 }).toBe("completed");
      expect((await fx.request(0)).aborted).toBe(false);
    });

    it("a half-close while a tool request is open cancels the turn (no answer can come) and completes the session", async () => {
      const { client, started } = await fx.start(kind, { tools: [tool("hold")] });
      fx.fake.plan({ toolCalls: [{ id: "call_orphan", name: "hold", arguments: {} }] });
      client.send(rq.user("hold", { messageId: "orphaned" }));
      await nextOf(client, "toolRequest");
      client.end();
      // Not after the 120 s tool timeout: at once.
      expect(turnCompleteOf(await readTurn(client, 10_000))).toMatchObject({ messageId: "orphaned", stopReason: "cancelled" });
      expect((await client.status).code).toBe(GRPC.OK);
      await expect.poll(() => statusOf(started.sessionId), { timeout: 10_000 }).toBe("completed");
      expect(fx.requests()).toHaveLength(1);
    });
  });

  it.each<ClientKind>(["grpc-js", "connect"])(
    "cancel_session during a turn still delivers its turn_complete{cancelled} before the stream ends (%s)",
    async (kind) => {
      const { client } = await fx.start(kind, { tools: [tool("hold")] });
      fx.fake.plan({ toolCalls: [{ id: "call_held", name: "hold", arguments: {} }] });
      client.send(rq.user("hold", { messageId: "ended-by-cancel" }));
      await nextOf(client, "toolRequest");
      client.send(rq.cancelSession("leaving"));
      expect(turnCompleteOf(await readTurn(client))).toMatchObject({ messageId: "ended-by-cancel", stopReason: "cancelled" });
      expect((await client.status).code).toBe(GRPC.OK);
      expect(sequenceProblem(client.responses.seen)).toBeUndefined();
    },
  );

  it("two sessions on one connection keep their own events, ids and numbering (grpc-js)", async () => {
    const a = await fx.start("grpc-js", { tools: [tool("hold")] });
    const b = await fx.start("grpc-js");
    fx.fake.plan({ toolCalls: [{ id: "call_a", name: "hold", arguments: {} }] });
    a.client.send(rq.user("first", { messageId: "in-a" }));
    await nextOf(a.client, "toolRequest");
    fx.fake.plan({ text: "hello from b" });
    b.client.send(rq.user("second", { messageId: "in-b" }));
    const turnB = await readTurn(b.client);
    expect(turnCompleteOf(turnB).messageId).toBe("in-b");
    fx.fake.plan({ text: "a done" });
    a.client.send(rq.toolResult("call_a", "held"));
    const turnA = await readTurn(a.client);
    expect(turnCompleteOf(turnA).messageId).toBe("in-a");
    for (const { client, started } of [a, b]) {
      const ids = new Set([...valuesOf(client.responses.seen, "textDelta"), ...valuesOf(client.responses.seen, "turnComplete")].map((v) => v.messageId));
      expect(ids).toEqual(new Set([client === a.client ? "in-a" : "in-b"]));
      expect(sequenceProblem(client.responses.seen)).toBeUndefined();
      expect(started.sessionId).toMatch(UUID);
    }
    expect(a.started.sessionId).not.toBe(b.started.sessionId);
  });

  it("an empty environment_id selects the tenant's default environment (connect)", async () => {
    const { started } = await fx.start("connect", { environmentId: "" });
    const session = (await fx.rest("GET", `/v1/sessions/${started.sessionId}`)).json;
    const environments = (await fx.rest("GET", "/v1/environments")).json.items as { id: string; is_default: boolean }[];
    const defaults = environments.filter((e) => e.is_default);
    expect(defaults).toHaveLength(1);
    expect(session.environment_id).toBe(defaults[0]!.id);
    // The same default on the next session.
    const again = await fx.start("connect");
    expect((await fx.rest("GET", `/v1/sessions/${again.started.sessionId}`)).json.environment_id).toBe(defaults[0]!.id);
  });

  it("SessionStarted names the resolved model (grpc-js)", async () => {
    expect((await fx.start("grpc-js")).started.model).toBe(`${fx.provider}/fake-model`);
    expect((await fx.start("grpc-js", { model: `${fx.provider}/other-model` })).started.model).toBe(`${fx.provider}/other-model`);
  });

  it("any positive max_context_tokens is accepted; a tiny one still completes turns (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { maxContextTokens: 50 });
    fx.fake.plan({ text: "a reply" }, { text: "a summary" });
    client.send(rq.user("question"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  });

  it("an unknown ai_mode runs the turn as react, with no error (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js");
    fx.fake.plan({ text: "still a turn" });
    client.send(rq.user("hi", { aiMode: "chaos" }));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "error")).toEqual([]);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    expect(fx.requests()).toHaveLength(1);
  });

  it("ActivityUpdate follows the turn: thinking, calling_tool{name}, thinking, idle — no change dropped (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("scan", { pure: true }), tool("sweep", { pure: true })] });
    fx.fake.plan(
      {
        toolCalls: [
          { id: "call_scan", name: "scan", arguments: {} },
          { id: "call_sweep", name: "sweep", arguments: {} },
        ],
      },
      { text: "clean" },
    );
    client.send(rq.user("check"));
    await nextOf(client, "toolRequest");
    await nextOf(client, "toolRequest");
    client.send(rq.toolResult("call_scan", "ok"));
    client.send(rq.toolResult("call_sweep", "ok"));
    await readTurn(client);
    const activity = valuesOf(client.responses.seen, "activityUpdate").map((a) => (a.detail ? `${a.state}:${a.detail}` : a.state));
    expect(activity).toEqual(["thinking", "calling_tool:scan", "calling_tool:sweep", "thinking", "idle"]);
  });

  describe.each<ClientKind>(["grpc-js", "connect"])("over a session of varied turns (%s)", (kind) => {
    it("every accepted message gets exactly one turn_complete, last of its turn, and seq goes up by one", async () => {
      const { client } = await fx.start(kind, { tools: [tool("probe", { pure: true })] });
      const turns: { id: string; events: SessionResponse[]; after: SessionResponse[] }[] = [];
      const run = async (id: string, act?: (c: SessionClient) => Promise<void>) => {
        client.send(rq.user(`turn ${id}`, { messageId: id }));
        await act?.(client);
        const events = await readTurn(client);
        // Whatever comes after turn_complete up to a pong (a barrier) is not part of the turn.
        turns.push({ id, events, after: await barrier(client) });
      };

      fx.fake.plan({ text: "plain answer" });
      await run("t-plain");
      fx.fake.plan(
        {
          toolCalls: [
            { id: "call_v1", name: "probe", arguments: {} },
            { id: "call_v2", name: "probe", arguments: {} },
          ],
        },
        { text: "probed" },
      );
      await run("t-tools", async (c) => {
        const a = await nextOf(c, "toolRequest");
        const b = await nextOf(c, "toolRequest");
        c.send(rq.toolResult(b.toolCallId, "b"));
        c.send(rq.toolResult(a.toolCallId, "a"));
      });
      fx.fake.plan({ status: 400, message: "rejected" });
      await run("t-error");
      fx.fake.plan({ text: "cut short", finish: "length" });
      await run("t-length");
      fx.fake.plan({ text: "never ending ".repeat(100), frameDelayMs: 40 });
      await run("t-cancel", async (c) => {
        await nextOf(c, "textDelta");
        c.send(rq.cancelTurn());
      });
      fx.fake.plan({ text: "still fine" });
      await run("t-last");

      expect(turns.map((t) => turnCompleteOf(t.events).stopReason)).toEqual(["end_turn", "end_turn", "error", "max_tokens", "cancelled", "end_turn"]);
      const all = client.responses.seen;
      for (const t of turns) {
        // Exactly one turn_complete per message id in the whole stream.
        expect(valuesOf(all, "turnComplete").filter((tc) => tc.messageId === t.id)).toHaveLength(1);
        expect(turnCompleteOf(t.events).messageId).toBe(t.id);
        // Nothing of the turn after its turn_complete (a context_compacted would be allowed).
        expect(t.after.filter((r) => caseOf(r) !== "contextCompacted").map(show)).toEqual([]);
        // Every delta of the turn carries its id.
        for (const d of [...valuesOf(t.events, "textDelta"), ...valuesOf(t.events, "thinkingDelta")]) expect(d.messageId).toBe(t.id);
      }
      expect(sequenceProblem(all)).toBeUndefined();
    });
  });
});
