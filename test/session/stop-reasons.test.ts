// §2 stop reasons and model errors, end to end against the fake provider: max_tokens,
// max_cycles, tool_error_limit, error; retries before any output; no retry after output.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { caseOf, nextOf, readTurn, rq, show, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { clientToolsOf, toolMessages } from "./chat-body.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

describe("default limits", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture();
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("finish_reason length → turn_complete{max_tokens}; tool calls of the cut response are not run (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("write_file")] });
    fx.fake.plan({ text: "The answer is long and", toolCalls: [{ id: "call_cut", name: "write_file", arguments: {} }], finish: "length" });
    client.send(rq.user("write a novel", { messageId: "long" }));
    const turn = await readTurn(client);
    expect(textOf(turn)).toBe("The answer is long and");
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(valuesOf(turn, "error")).toEqual([]);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "long", stopReason: "max_tokens" });
    expect(fx.requests()).toHaveLength(1);
  });

  it("consecutive all-failed tool cycles → turn_complete{tool_error_limit}; a success resets the count (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("flaky")] });
    const call = (n: number) => ({ toolCalls: [{ id: `call_f${n}`, name: "flaky", arguments: { attempt: n } }] });
    // fail, succeed, fail, fail, fail: the limit (3) is reached at the fifth cycle, not the third.
    fx.fake.plan(call(1), call(2), call(3), call(4), call(5));
    client.send(rq.user("keep trying"));
    const outcomes = [false, true, false, false, false];
    for (const [i, success] of outcomes.entries()) {
      const request = await nextOf(client, "toolRequest");
      expect(request.toolCallId).toBe(`call_f${i + 1}`);
      client.send(rq.toolResult(request.toolCallId, success ? "worked" : "boom", success));
    }
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn).stopReason).toBe("tool_error_limit");
    expect(fx.requests()).toHaveLength(5);
    expect(toolMessages(fx.requests()[4]!.body).map((m) => m.content)).toEqual(["Error: boom", "worked", "Error: boom", "Error: boom"]);
  });

  it("a non-retryable provider error → SessionError{model_error, retryable:false} then turn_complete{error}, no retry (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js");
    fx.fake.plan({ status: 400, message: "bad request, says the provider" });
    client.send(rq.user("hello", { messageId: "err-1" }));
    const turn = await readTurn(client);
    // The error precedes turn_complete (only the idle activity may come between).
    expect(turn.slice(-3, -1).map(caseOf), turn.map(show).join("\n")).toContain("error");
    expect(valuesOf(turn, "error")).toEqual([expect.objectContaining({ code: "model_error", retryable: false })]);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "err-1", stopReason: "error" });
    expect(fx.requests()).toHaveLength(1);
    // The session survives the error.
    fx.fake.plan({ text: "better now" });
    client.send(rq.user("again"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  });

  it("429 with retry-after: 1, then success → one turn_complete{end_turn}, two provider requests, no error (connect)", async () => {
    const { client } = await fx.start("connect");
    fx.fake.plan({ status: 429, retryAfter: 1, message: "slow down" }, { text: "Made it." });
    client.send(rq.user("hello"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "error")).toEqual([]);
    expect(valuesOf(turn, "turnComplete")).toHaveLength(1);
    expect(textOf(turn)).toBe("Made it.");
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    expect(fx.requests()).toHaveLength(2);
  });

  it("a provider that keeps failing with 5xx is retried (3 retries), then SessionError{model_error, retryable:true} (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js");
    const failure = { status: 503, retryAfter: 0, message: "overloaded" };
    fx.fake.plan(failure, failure, failure, failure);
    client.send(rq.user("hello"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "error")).toEqual([expect.objectContaining({ code: "model_error", retryable: true })]);
    expect(turnCompleteOf(turn).stopReason).toBe("error");
    expect(fx.requests()).toHaveLength(4);
  });

  it("a retry-after longer than the server waits is not waited for: at once SessionError{model_error, retryable:true} (connect)", async () => {
    const { client } = await fx.start("connect");
    fx.fake.plan({ status: 429, retryAfter: 3600, message: "come back in an hour" });
    client.send(rq.user("hello"));
    const started = Date.now();
    const turn = await readTurn(client);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(valuesOf(turn, "error")).toEqual([expect.objectContaining({ code: "model_error", retryable: true })]);
    expect(turnCompleteOf(turn).stopReason).toBe("error");
    expect(fx.requests()).toHaveLength(1);
  });

  it("a stream cut after some output → SessionError{model_error, retryable} then turn_complete{error}; no retry (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js");
    fx.fake.plan({ text: "I was saying something important when", cutAfter: 5 });
    client.send(rq.user("tell me", { messageId: "cut-1" }));
    const turn = await readTurn(client);
    const kinds = turn.map(caseOf);
    expect(kinds).toContain("textDelta");
    // The error comes after every delta and before turn_complete (only the idle activity may come between).
    expect(kinds.lastIndexOf("textDelta")).toBeLessThan(kinds.indexOf("error"));
    expect(kinds.slice(-3, -1), turn.map(show).join("\n")).toContain("error");
    expect(valuesOf(turn, "error")).toEqual([expect.objectContaining({ code: "model_error", retryable: true })]);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "cut-1", stopReason: "error" });
    // Not retried: a replay would repeat output the client already has.
    expect(fx.requests()).toHaveLength(1);
    // The partial answer is kept and the next turn is valid.
    fx.fake.plan({ text: "Sorry, where was I." });
    client.send(rq.user("go on"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  });

  it("a scripted retryable error is reported as SessionError{model_error, retryable:true} (connect)", async () => {
    const { client } = await fx.start("connect", { model: "scripted/default" });
    const script = { responses: [[{ error: { message: "overloaded", retryable: true, status: 529 } }]] };
    client.send(rq.user(`script: ${JSON.stringify(script)}`));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "error")).toEqual([expect.objectContaining({ code: "model_error", retryable: true })]);
    expect(turnCompleteOf(turn).stopReason).toBe("error");
  });
});

describe("ROZ_MAX_CYCLES=2", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_MAX_CYCLES: "2" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("a model that always calls a tool stops after 2 cycles with one tool-free wrap-up call → max_cycles (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("again")] });
    const call = (n: number, text = "") => ({ text, toolCalls: [{ id: `call_c${n}`, name: "again", arguments: {} }], usage: { input: 10, output: 1 } });
    fx.fake.plan(call(1), call(2), call(3, "I got this far."));
    client.send(rq.user("loop forever", { messageId: "loop" }));
    for (const n of [1, 2]) {
      const request = await nextOf(client, "toolRequest");
      expect(request.toolCallId).toBe(`call_c${n}`);
      client.send(rq.toolResult(request.toolCallId, `round ${n}`));
    }
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(textOf(turn)).toBe("I got this far.");
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "loop", stopReason: "max_cycles", usage: { inputTokens: 30, outputTokens: 3 } });
    const requests = fx.requests();
    expect(requests).toHaveLength(3);
    expect(clientToolsOf(requests[0]!.body)).toHaveLength(1);
    expect(clientToolsOf(requests[1]!.body)).toHaveLength(1);
    // The wrap-up call offers no tools.
    expect(requests[2]!.body.tools).toBeUndefined();
  });
});
