// What only provider anthropic does, end to end through a session against the fake
// Messages API (which, like the real one, rejects thinking sent back without its
// signature): extended thinking across a tool round trip, thinking from
// StartSession.history, refusal, pause_turn, 529 retries, cache token accounting.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { InputDelivery } from "../../src/gen/roz/v1/agent_pb.js";
import { fakeSignature } from "../support/fake-anthropic/index.ts";
import { nextOf, readTurn, rq, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture({ provider: "anthropic", env: { ROZ_ANTHROPIC_THINKING_BUDGET: "2048" } });
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

const raw = (index: number) => fx.fake.requests.at(-1 - index)!;

it("thinking streams to the client and its signed block goes back with the tool result; the API accepts it (connect)", async () => {
  const { client } = await fx.start("connect", { tools: [tool("read_file")] });
  const thinking = "The user wants the file; read it first.";
  fx.fake.plan({ reasoning: thinking, toolCalls: [{ id: "toolu_rf", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "It says hi." });
  client.send(rq.user("what is in a.txt?"));
  // Thinking deltas come before the tool request.
  expect((await nextOf(client, "thinkingDelta")).content).not.toBe("");
  const request = await nextOf(client, "toolRequest");
  client.send(rq.toolResult(request.toolCallId, "hi"));
  const turn = await readTurn(client);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  expect(textOf(turn)).toBe("It says hi.");
  const second = raw(0);
  expect(second.path).toBe("/v1/messages");
  expect(second.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
  expect(second.body.messages[1].content[0]).toEqual({ type: "thinking", thinking, signature: fakeSignature(thinking) });
  expect(second.body.messages[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_rf", content: "hi" });
});

it("a signed thinking part of StartSession.history is sent back unmodified (grpc-js)", async () => {
  const thinking = "Earlier reasoning.";
  const { client } = await fx.start("grpc-js", {
    tools: [tool("read_file")],
    history: [
      { role: "user", parts: [{ part: { case: "text", value: { text: "read x" } } }] },
      {
        role: "assistant",
        parts: [
          { part: { case: "thinking", value: { thinking, signature: fakeSignature(thinking) } } },
          { part: { case: "toolUse", value: { id: "toolu_hist", name: "read_file", input: { path: "x" } } } },
        ],
      },
      { role: "user", parts: [{ part: { case: "toolResult", value: { toolUseId: "toolu_hist", name: "read_file", content: "contents" } } }] },
    ],
  });
  fx.fake.plan({ text: "Continuing." });
  client.send(rq.user("go on"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  expect(raw(0).body.messages[1].content[0]).toEqual({ type: "thinking", thinking, signature: fakeSignature(thinking) });
});

it("refusal ends the turn as end_turn with an activity note (connect)", async () => {
  const { client } = await fx.start("connect");
  fx.fake.plan({ text: "I can't help with that.", anthropicStop: "refusal" });
  client.send(rq.user("something bad"));
  const turn = await readTurn(client);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  expect(valuesOf(turn, "activityUpdate").map((a) => a.detail)).toContainEqual(expect.stringContaining("refusal"));
});

it("pause_turn continues the turn: one answer, two provider calls, usage added up (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js");
  fx.fake.plan({ text: "Working", anthropicStop: "pause_turn", usage: { input: 100, output: 4 } }, { text: " - finished.", usage: { input: 110, output: 6 } });
  client.send(rq.user("long job"));
  const turn = await readTurn(client);
  expect(textOf(turn)).toBe("Working - finished.");
  expect(turnCompleteOf(turn)).toMatchObject({ stopReason: "end_turn", usage: { inputTokens: 210, outputTokens: 10 } });
  expect(raw(0).body.messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Working" }] });
});

it("529 overloaded before any output is retried; cache tokens reach turn_complete (connect)", async () => {
  const { client } = await fx.start("connect");
  fx.fake.plan({ status: 529, retryAfter: 0, message: "Overloaded" }, { text: "Here.", usage: { input: 500, output: 3, cached: 400, cacheCreation: 50 } });
  client.send(rq.user("hello"));
  const turn = await readTurn(client);
  expect(valuesOf(turn, "error")).toEqual([]);
  expect(turnCompleteOf(turn)).toMatchObject({
    stopReason: "end_turn",
    usage: { inputTokens: 500, outputTokens: 3, cacheReadTokens: 400, cacheCreationTokens: 50 },
  });
  expect(fx.requests()).toHaveLength(2);
});

it("a turn cancelled mid-stream counts the prompt and cache reads message_start reported, not an estimate (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js");
  fx.fake.plan({ text: "slow ".repeat(200), chunkSize: 5, frameDelayMs: 30, usage: { input: 6789, output: 400, cached: 1234 } });
  client.send(rq.user("write at length"));
  await nextOf(client, "textDelta");
  client.send(rq.cancelTurn());
  const done = turnCompleteOf(await readTurn(client));
  expect(done.stopReason).toBe("cancelled");
  // message_start said 5,555 uncached + 1,234 cache-read prompt tokens; the output streamed so far is estimated.
  expect(done.usage).toMatchObject({ inputTokens: 6789, cacheReadTokens: 1234, cacheCreationTokens: 0 });
  expect(done.usage!.outputTokens).toBeGreaterThan(0);
  expect(done.usage!.outputTokens).toBeLessThan(400);
});

it("a steer with a tool call in flight reaches the Messages API after the tool result, in the same turn (connect)", async () => {
  const { client } = await fx.start("connect", { tools: [tool("read_file")] });
  // With extended thinking on (this file's server), the signed thinking goes back too.
  fx.fake.plan({ reasoning: "Read it first.", toolCalls: [{ id: "call_r", name: "read_file", arguments: {} }] }, { text: "Both done." });
  client.send(rq.user("read it", { messageId: "t1" }));
  const request = await nextOf(client, "toolRequest");
  client.send(rq.user("and the other one", { messageId: "s1", delivery: InputDelivery.STEER }));
  client.send(rq.toolResult(request.toolCallId, "file body"));
  const turn = await readTurn(client);
  expect(valuesOf(turn, "error")).toEqual([]);
  expect(valuesOf(turn, "turnComplete").map((t) => [t.messageId, t.stopReason])).toEqual([["t1", "end_turn"]]);
  expect(valuesOf(turn, "inputUpdate").map((u) => [u.messageId, u.turnMessageId])).toEqual([["s1", "t1"]]);
  // One user message: the tool result block, then the steered text (roles keep alternating).
  const last = raw(0).body.messages.at(-1);
  expect(last.role).toBe("user");
  expect(last.content.map((b: { type: string }) => b.type)).toEqual(["tool_result", "text"]);
  expect(last.content[1].text).toBe("and the other one");
});
