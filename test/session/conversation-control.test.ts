// §11 conversation control, end to end over grpc-js and connect: messages sent while a turn
// runs are queued, steered into the running turn, or interrupt it; every attached stream is
// told what became of each with InputUpdate; in-band errors name the request they answer.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InputDelivery, InputState, type SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import type { SessionClient } from "../support/session-client.ts";
import { barrier, nextOf, nextWhere, readTurn, rq, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { messagesOf } from "./chat-body.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture({ env: { ROZ_MAX_QUEUED_INPUTS: "3" } });
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

/** A reply that streams for about a second (40 deltas, 25 ms apart): the test's messages arrive while it runs. */
const slowText = { text: "slow ".repeat(40), chunkSize: 5, frameDelayMs: 25 };

const queue = (content: string, messageId: string) => rq.user(content, { messageId, delivery: InputDelivery.QUEUE });
const steer = (content: string, messageId: string) => rq.user(content, { messageId, delivery: InputDelivery.STEER });
const interrupt = (content: string, messageId: string) => rq.user(content, { messageId, delivery: InputDelivery.INTERRUPT });

const inputUpdates = (responses: readonly SessionResponse[]) =>
  valuesOf(responses, "inputUpdate").map((u) => ({
    id: u.messageId,
    state: InputState[u.state],
    ...(u.queuePosition ? { place: u.queuePosition } : {}),
    ...(u.content ? { content: u.content } : {}),
    ...(u.turnMessageId ? { turn: u.turnMessageId } : {}),
  }));

/** The user texts of a Chat Completions body, in order. */
const userTexts = (body: unknown): string[] =>
  messagesOf(body)
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

/** Reads turns until `n` turn_completes were read; returns everything read. */
async function readTurns(client: SessionClient, n: number): Promise<SessionResponse[]> {
  const out: SessionResponse[] = [];
  for (let i = 0; i < n; i++) out.push(...(await readTurn(client)));
  return out;
}

describe.each(["grpc-js", "connect"] as const)("conversation control (%s)", (kind) => {
  it("QUEUE: messages wait in order, each told its place, and start their own turns one after another", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan(slowText, { text: "second answer" }, { text: "third answer" });
    client.send(rq.user("first", { messageId: "m1" }));
    // Every message that opens a turn is told to every stream, with its text.
    expect(inputUpdates([await client.next()])).toEqual([{ id: "m1", state: "STARTED", content: "first" }]);
    await nextOf(client, "textDelta");
    client.send(queue("second", "m2"));
    client.send(queue("third", "m3"));
    const all = await readTurns(client, 3);
    expect(inputUpdates(all)).toEqual([
      { id: "m2", state: "QUEUED", place: 1 },
      { id: "m3", state: "QUEUED", place: 2 },
      { id: "m2", state: "STARTED", content: "second" },
      { id: "m3", state: "QUEUED", place: 1 },
      { id: "m3", state: "STARTED", content: "third" },
    ]);
    expect(valuesOf(all, "turnComplete").map((t) => [t.messageId, t.stopReason])).toEqual([
      ["m1", "end_turn"],
      ["m2", "end_turn"],
      ["m3", "end_turn"],
    ]);
    // Each queued message is a turn of its own, after the answers before it.
    expect(userTexts((await fx.request(2)).body)).toEqual(["first", "second", "third"]);
    expect(valuesOf(all, "error")).toEqual([]);
  });

  it("STEER with a tool call in flight: the model sees it after the tool result, in the same turn, and answers it", async () => {
    const { client, started } = await fx.start(kind, { tools: [tool("read_file")] });
    fx.fake.plan(
      { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.txt" } }], usage: { input: 30, output: 5 } },
      {
        text: "Read it, and also done the other thing.",
        usage: { input: 50, output: 9 },
      },
    );
    client.send(rq.user("read a.txt", { messageId: "t1" }));
    const request = await nextOf(client, "toolRequest");
    client.send(steer("also check b.txt", "s1"));
    // The steer waits for the model's next call: nothing more is sent to the model yet.
    await barrier(client);
    expect(fx.requests()).toHaveLength(1);
    client.send(rq.toolResult(request.toolCallId, "contents of a"));
    const turn = await readTurn(client);
    expect(inputUpdates(turn)).toEqual([{ id: "s1", state: "STEERED", content: "also check b.txt", turn: "t1" }]);
    const done = turnCompleteOf(turn);
    expect(done).toMatchObject({ messageId: "t1", stopReason: "end_turn", usage: { inputTokens: 80, outputTokens: 14 } });
    expect(valuesOf(turn, "turnComplete")).toHaveLength(1);
    expect(new Set(valuesOf(turn, "textDelta").map((d) => d.messageId))).toEqual(new Set(["t1"]));
    const second = messagesOf((await fx.request(1)).body);
    const toolAt = second.findIndex((m) => m.role === "tool" && String(m.content).includes("contents of a"));
    const steerAt = second.findIndex((m) => m.role === "user" && String(m.content).includes("also check b.txt"));
    expect(toolAt).toBeGreaterThan(0);
    expect(steerAt).toBeGreaterThan(toolAt);
    // The transcript keeps the steered message inside the turn it joined.
    const session = await fx.rest("GET", `/v1/sessions/${started.sessionId}/messages`);
    expect(session.json.turns.at(-1).steered).toEqual([{ role: "user", message_id: "s1", content: "also check b.txt", steered: true, after_tool_calls: 1 }]);
    // As a conversation (what a fork or a client's `history` gets), the steer follows the tool result.
    const conversation = JSON.stringify(session.json.messages);
    expect(conversation.indexOf("also check b.txt")).toBeGreaterThan(conversation.indexOf("contents of a"));
  });

  it("STEER after the model's last call: the turn gets one more call, and still one turn_complete", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan(slowText, { text: "Answering the steer." });
    client.send(rq.user("write a lot", { messageId: "t2" }));
    await nextOf(client, "textDelta");
    client.send(steer("and keep it short", "s2"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "t2", stopReason: "end_turn" });
    expect(textOf(turn)).toContain("Answering the steer.");
    expect(inputUpdates(turn)).toEqual([{ id: "s2", state: "STEERED", content: "and keep it short", turn: "t2" }]);
    const texts = userTexts((await fx.request(1)).body);
    expect(texts).toEqual(["write a lot", "and keep it short"]);
  });

  it("STEER or QUEUE with no turn running starts a turn like a plain message", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan({ text: "one" }, { text: "two" });
    client.send(steer("steered while idle", "s3"));
    const first = await readTurn(client);
    expect(inputUpdates(first)).toEqual([{ id: "s3", state: "STARTED", content: "steered while idle" }]);
    client.send(queue("queued while idle", "q3"));
    const second = await readTurn(client);
    expect(inputUpdates(second)).toEqual([{ id: "q3", state: "STARTED", content: "queued while idle" }]);
    expect(turnCompleteOf(second).messageId).toBe("q3");
  });

  it("INTERRUPT cancels the running turn, then runs ahead of the queue", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan(slowText, { text: "interrupt answer" }, { text: "queued answer" });
    client.send(rq.user("long task", { messageId: "i1" }));
    await nextOf(client, "textDelta");
    client.send(queue("afterwards", "q1"));
    await nextWhere(client, "inputUpdate", (u) => u.messageId === "q1");
    client.send(interrupt("stop and do this", "i2"));
    const all = await readTurns(client, 3);
    expect(valuesOf(all, "turnComplete").map((t) => [t.messageId, t.stopReason])).toEqual([
      ["i1", "cancelled"],
      ["i2", "end_turn"],
      ["q1", "end_turn"],
    ]);
    expect(inputUpdates(all).filter((u) => u.state === "STARTED")).toEqual([
      { id: "i2", state: "STARTED", content: "stop and do this" },
      { id: "q1", state: "STARTED", content: "afterwards" },
    ]);
  });

  it("cancel_turn{clear_queue} drops every waiting message; a plain cancel_turn lets the queue go on", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan(slowText, slowText, { text: "kept" });
    client.send(rq.user("one", { messageId: "c1" }));
    await nextOf(client, "textDelta");
    client.send(queue("two", "c2"));
    client.send(queue("three", "c3"));
    await nextWhere(client, "inputUpdate", (u) => u.messageId === "c3");
    client.send(rq.cancelTurn());
    // The plain cancel ends c1; c2 starts from the queue.
    const cancelled = await readTurn(client);
    expect(turnCompleteOf(cancelled)).toMatchObject({ messageId: "c1", stopReason: "cancelled" });
    await nextWhere(client, "inputUpdate", (u) => u.messageId === "c2" && u.state === InputState.STARTED);
    await nextOf(client, "textDelta");
    client.send({ request: { case: "cancelTurn", value: { reason: "stop all", clearQueue: true } } });
    const rest = await readTurn(client);
    expect(turnCompleteOf(rest)).toMatchObject({ messageId: "c2", stopReason: "cancelled" });
    expect(inputUpdates(rest).filter((u) => u.state === "DROPPED")).toEqual([{ id: "c3", state: "DROPPED" }]);
    expect(valuesOf(await barrier(client), "turnComplete")).toEqual([]);
  });

  it("a message beyond ROZ_MAX_QUEUED_INPUTS, and one without delivery, get an error naming them; the others stay", async () => {
    const { client, started } = await fx.start(kind);
    fx.fake.plan(slowText, { text: "a" }, { text: "b" }, { text: "c" });
    client.send(rq.user("busy", { messageId: "b0" }));
    await nextOf(client, "textDelta");
    for (const id of ["b1", "b2", "b3", "b4"]) client.send(queue(`queued ${id}`, id));
    client.send(rq.user("plain", { messageId: "b5" }));
    const errors = valuesOf(await barrier(client), "error").map((e) => [e.code, e.requestId, e.retryable]);
    expect(errors).toEqual([
      ["resource_exhausted", "b4", true],
      ["turn_in_progress", "b5", false],
    ]);
    const rest = await fx.rest("GET", `/v1/sessions/${started.sessionId}`);
    expect(rest.json.queued_inputs).toEqual([
      { message_id: "b1", content: "queued b1", delivery: "queue", queue_position: 1 },
      { message_id: "b2", content: "queued b2", delivery: "queue", queue_position: 2 },
      { message_id: "b3", content: "queued b3", delivery: "queue", queue_position: 3 },
    ]);
    const all = await readTurns(client, 4);
    expect(valuesOf(all, "turnComplete").map((t) => t.messageId)).toEqual(["b0", "b1", "b2", "b3"]);
    expect((await fx.rest("GET", `/v1/sessions/${started.sessionId}`)).json.queued_inputs).toEqual([]);
  });

  it("cancel_session drops the waiting messages before the session's end", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan(slowText);
    client.send(rq.user("busy", { messageId: "d0" }));
    await nextOf(client, "textDelta");
    client.send(queue("never", "d1"));
    await nextWhere(client, "inputUpdate", (u) => u.messageId === "d1");
    client.send(rq.cancelSession());
    await client.status;
    const rest: SessionResponse[] = [];
    for (;;) {
      const next = await client.next(200).catch(() => undefined);
      if (next === undefined) break;
      rest.push(next);
    }
    const order = rest.map((r) => r.response.case).filter((c) => c === "inputUpdate" || c === "turnComplete");
    expect(inputUpdates(rest)).toEqual([{ id: "d1", state: "DROPPED" }]);
    expect(order).toEqual(["inputUpdate", "turnComplete"]);
  });

  it("a half-close of the last stream ends the session once the running turn and the queued messages have run", async () => {
    const { client, started } = await fx.start(kind);
    fx.fake.plan(slowText, { text: "queued ran" });
    client.send(rq.user("busy", { messageId: "h0" }));
    await nextOf(client, "textDelta");
    client.send(queue("still to run", "h1"));
    await nextWhere(client, "inputUpdate", (u) => u.messageId === "h1");
    client.end();
    expect((await client.status).code).toBe(0);
    const seen = client.responses.seen;
    expect(valuesOf(seen, "turnComplete").map((t) => [t.messageId, t.stopReason])).toEqual([
      ["h0", "end_turn"],
      ["h1", "end_turn"],
    ]);
    expect((await fx.rest("GET", `/v1/sessions/${started.sessionId}`)).json.status).toBe("completed");
  });

  it("a tool result for an unknown call gets unknown_tool_call naming the call", async () => {
    const { client } = await fx.start(kind);
    fx.fake.plan(slowText);
    client.send(rq.user("busy"));
    await nextOf(client, "textDelta");
    client.send(rq.toolResult("call_nobody", "?"));
    const error = await nextOf(client, "error");
    expect(error).toMatchObject({ code: "unknown_tool_call", requestId: "call_nobody" });
  });
});

describe("STEER over the OpenAI Responses API", () => {
  let responses: SessionFixture;
  beforeAll(async () => {
    responses = await startSessionFixture({ provider: "openai", env: { ROZ_OPENAI_API: "responses" } });
  });
  afterEach(() => responses.reset());
  afterAll(() => responses?.close());

  it("with a tool call in flight: the next request carries the tool output, then the steered message", async () => {
    const { client } = await responses.start("grpc-js", { tools: [tool("read_file")] });
    responses.fake.plan({ toolCalls: [{ id: "call_r", name: "read_file", arguments: {} }] }, { text: "Both done." });
    client.send(rq.user("read it", { messageId: "r1" }));
    const request = await nextOf(client, "toolRequest");
    client.send(steer("and the other one", "rs1"));
    await barrier(client);
    client.send(rq.toolResult(request.toolCallId, "file body"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "r1", stopReason: "end_turn" });
    expect(inputUpdates(turn)).toEqual([{ id: "rs1", state: "STEERED", content: "and the other one", turn: "r1" }]);
    const second = await responses.request(1);
    expect(second.path).toBe("/v1/responses");
    const input = JSON.stringify(second.body.input);
    expect(input.indexOf("and the other one")).toBeGreaterThan(input.indexOf("file body"));
    expect(input.indexOf("file body")).toBeGreaterThan(0);
  });
});
