// §2 cancel_turn and turn_in_progress, end to end: the provider request is really aborted
// (the fake sees the connection go), open waits end, usage so far is reported, and the
// next turn is valid for the provider.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { barrier, nextOf, nextWhere, readTurn, rq, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { messagesOf } from "./chat-body.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

/** A reply that streams for many seconds: 200 deltas, 50 ms apart. */
const slowText = { text: "slow ".repeat(200), chunkSize: 5, frameDelayMs: 50 };

it("cancel_turn mid-stream aborts the provider request and ends with turn_complete{cancelled}; usage so far counts (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js", { tools: [tool("fetch_page")] });
  fx.fake.plan({ toolCalls: [{ id: "call_fetch", name: "fetch_page", arguments: {} }], usage: { input: 40, output: 10, cached: 8 } }, slowText, {
    text: "Fresh start.",
  });
  client.send(rq.user("fetch and summarise", { messageId: "cancel-1" }));
  const request = await nextOf(client, "toolRequest");
  client.send(rq.toolResult(request.toolCallId, "<html>page</html>"));
  // The second model call is streaming: cancel after its first deltas.
  await nextOf(client, "textDelta");
  await nextOf(client, "textDelta");
  client.send(rq.cancelTurn("user pressed stop"));
  const turn = await readTurn(client, 10_000);
  const done = turnCompleteOf(turn);
  expect(done).toMatchObject({ messageId: "cancel-1", stopReason: "cancelled" });
  // The first call's usage was received before the cancel: it is reported, not dropped.
  // The cut second call reported none (Chat Completions sends usage last): its prompt and
  // the deltas streamed so far are counted with the tokenizer on top.
  const usage = done.usage!;
  expect(usage.cacheReadTokens).toBe(8);
  expect(usage.inputTokens).toBeGreaterThan(40 + 20);
  expect(usage.outputTokens).toBeGreaterThan(10);

  const streaming = await fx.request(1);
  await streaming.closed;
  expect(streaming.aborted).toBe(true);
  // No more deltas after turn_complete: nothing more was bought.
  expect(valuesOf(await barrier(client), "textDelta")).toEqual([]);

  // The partial answer stays in history and the next turn is valid for the provider.
  client.send(rq.user("start over"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  const next = messagesOf((await fx.request(2)).body);
  const partial = next.find((m) => m.role === "assistant" && typeof m.content === "string" && m.content.startsWith("slow slow"));
  expect(partial, JSON.stringify(next)).toBeDefined();
  expect(next.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["fetch and summarise", "start over"]);
});

it("cancel_turn on the scripted model reports the usage it had streamed before the cancel (connect)", async () => {
  const { client, started } = await fx.start("connect", { model: "scripted/default" });
  expect(started.model).toBe("scripted/default");
  const script = {
    responses: [[{ usage: { input_tokens: 17, output_tokens: 3 } }, { text: "partial answer" }, { delay_ms: 30_000 }, { text: "never sent" }]],
  };
  client.send(rq.user(`script: ${JSON.stringify(script)}`));
  await nextOf(client, "textDelta");
  client.send(rq.cancelTurn());
  const turn = await readTurn(client, 10_000);
  expect(turnCompleteOf(turn)).toMatchObject({ stopReason: "cancelled", usage: { inputTokens: 17, outputTokens: 3 } });
  expect(textOf(turn)).not.toContain("never");
});

it("cancel_turn while a tool is pending ends the wait; the interrupted call gets a synthetic error result (connect)", async () => {
  const { client } = await fx.start("connect", { tools: [tool("long_job")] });
  fx.fake.plan({ toolCalls: [{ id: "call_job", name: "long_job", arguments: {} }] }, { text: "Ready again." });
  client.send(rq.user("run the long job", { messageId: "cancel-2" }));
  await nextOf(client, "toolRequest");
  client.send(rq.cancelTurn());
  const turn = await readTurn(client, 10_000);
  expect(turnCompleteOf(turn)).toMatchObject({ messageId: "cancel-2", stopReason: "cancelled" });
  // The wait is over: a late result finds no turn.
  client.send(rq.toolResult("call_job", "finished anyway"));
  expect(await nextOf(client, "error")).toMatchObject({ code: "no_active_turn" });

  client.send(rq.user("what now?"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  // The fake validates tool pairing: the interrupted call must have its (error) result.
  const next = messagesOf((await fx.request(1)).body);
  expect(next.filter((m) => m.role === "tool")).toEqual([{ role: "tool", tool_call_id: "call_job", content: "Error: cancelled" }]);
});

it("a user_message while a turn runs gets SessionError{turn_in_progress}, and the running turn is unaffected (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js", { tools: [tool("wait_tool")] });
  fx.fake.plan({ toolCalls: [{ id: "call_wait", name: "wait_tool", arguments: {} }] }, { text: "First turn done." });
  client.send(rq.user("first", { messageId: "first" }));
  await nextOf(client, "toolRequest");
  client.send(rq.user("second", { messageId: "second" }));
  expect(await nextOf(client, "error")).toMatchObject({ code: "turn_in_progress", retryable: false });
  client.send(rq.toolResult("call_wait", "waited"));
  const turn = await readTurn(client);
  expect(turnCompleteOf(turn)).toMatchObject({ messageId: "first", stopReason: "end_turn" });
  // The refused message started no turn: no second turn_complete, and the model never saw it.
  expect(valuesOf(await barrier(client), "turnComplete")).toEqual([]);
  expect(fx.requests()).toHaveLength(2);
  expect(JSON.stringify(fx.requests().map((r) => r.body))).not.toContain('"second"');
  // The session is still usable.
  fx.fake.plan({ text: "Second turn." });
  client.send(rq.user("second, again", { messageId: "second" }));
  expect(turnCompleteOf(await readTurn(client))).toMatchObject({ messageId: "second", stopReason: "end_turn" });
});

it("cancel_turn while the provider has not answered yet (headers pending) aborts the request (connect)", async () => {
  const { client } = await fx.start("connect");
  fx.fake.plan({ text: "too late", headersDelayMs: 30_000 });
  client.send(rq.user("hello"));
  await nextWhere(client, "activityUpdate", (a) => a.state === "thinking");
  const pending = await fx.request(0);
  client.send(rq.cancelTurn());
  expect(turnCompleteOf(await readTurn(client, 10_000)).stopReason).toBe("cancelled");
  await pending.closed;
  expect(pending.aborted).toBe(true);
});

it("cancel_turn right behind the user_message ends the turn as cancelled, exactly once (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js");
  fx.fake.plan({ text: "should not be needed", headersDelayMs: 2_000 });
  client.send(rq.user("hello", { messageId: "raced" }));
  client.send(rq.cancelTurn());
  const turn = await readTurn(client, 10_000);
  expect(turnCompleteOf(turn)).toMatchObject({ messageId: "raced", stopReason: "cancelled" });
  expect(valuesOf([...turn, ...(await barrier(client))], "turnComplete")).toHaveLength(1);
  // Either the provider was never asked, or the request was aborted.
  for (const request of fx.requests()) {
    await request.closed;
    expect(request.aborted).toBe(true);
  }
  // The next turn works (on the planned reply if the cancelled turn never asked for it).
  if (fx.fake.pending() === 0) fx.fake.plan({ text: "again" });
  client.send(rq.user("again"));
  expect(turnCompleteOf(await readTurn(client))).toMatchObject({ stopReason: "end_turn" });
});
