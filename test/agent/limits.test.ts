import { describe, expect, it } from "vitest";
import { defaultAgentLimits } from "../../src/agent/index.ts";
import { ModelError, type JsonObject } from "../../src/models/index.ts";
import { call, finish, reply, TestModel, text, toolCalls, usage } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });
const fail = (result: string) => ({ success: false, result, truncated: false, exitCode: 2 });

describe("limits and errors", () => {
  it("max_cycles: after the last cycle, one tool-free call, then stop_reason max_cycles", async () => {
    const model = new TestModel([toolCalls(call("c1", "t")), toolCalls(call("c2", "t")), [text("Summary: did two steps."), usage(5, 5), finish()]]);
    const agent = makeAgent(model, { tools: [tool("t")], limits: { ...defaultAgentLimits, maxCycles: 2 } });
    const run = start(agent, turn("loop"));
    agent.submitToolResult((await run.toolRequest(0)).toolCallId, ok("1"));
    agent.submitToolResult((await run.toolRequest(1)).toolCallId, ok("2"));
    const done = await run.done;
    expect(done.stopReason).toBe("max_cycles");
    expect(model.calls).toBe(3);
    expect(model.requests[2]!.tools).toEqual([]);
    expect(model.requests[2]!.system.at(-1)).toMatch(/step limit/);
    expect(done.record.assistantText).toBe("Summary: did two steps.");
    expect(done.usage.inputTokens).toBe(25);
    expectValidHistory(agent.history());
    expect(agent.history().at(-1)).toEqual({ role: "assistant", parts: [{ type: "text", text: "Summary: did two steps." }] });
  });

  it("tool_error_limit: three cycles in a row where every result failed", async () => {
    const model = new TestModel([toolCalls(call("a", "t")), toolCalls(call("b", "t"), call("b2", "missing")), toolCalls(call("c", "t")), reply("never")]);
    const agent = makeAgent(model, { tools: [tool("t")] });
    const run = start(agent, turn("try"));
    agent.submitToolResult((await run.toolRequest(0)).toolCallId, fail("boom"));
    agent.submitToolResult((await run.toolRequest(1)).toolCallId, fail("boom"));
    agent.submitToolResult((await run.toolRequest(2)).toolCallId, fail("boom"));
    const done = await run.done;
    expect(done.stopReason).toBe("tool_error_limit");
    expect(model.calls).toBe(3);
    expect(model.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({ content: "boom\n[exit code 2]", isError: true });
    expectValidHistory(agent.history());
  });

  it("a success in between resets the tool error count", async () => {
    const model = new TestModel([toolCalls(call("a", "t")), toolCalls(call("b", "t")), toolCalls(call("c", "t")), toolCalls(call("d", "t")), reply("done")]);
    const agent = makeAgent(model, { tools: [tool("t")] });
    const run = start(agent, turn("try"));
    const answers = [fail("x"), fail("x"), ok("fine"), fail("x")];
    for (const [i, a] of answers.entries()) agent.submitToolResult((await run.toolRequest(i)).toolCallId, a);
    expect((await run.done).stopReason).toBe("end_turn");
  });

  it("max_tokens: the provider's finish reason ends the turn, unfinished calls are not run", async () => {
    const model = new TestModel([[text("Here is a very long"), call("x", "t"), usage(10, 4096), finish("max_tokens")]]);
    const agent = makeAgent(model, { tools: [tool("t")] });
    const run = start(agent, turn("write"));
    const done = await run.done;
    expect(done.stopReason).toBe("max_tokens");
    expect(run.of("tool_request")).toHaveLength(0);
    expect(agent.history().at(-1)).toEqual({ role: "assistant", parts: [{ type: "text", text: "Here is a very long" }] });
    expectValidHistory(agent.history());
  });

  it("a ModelError becomes error{model_error, retryable} then turn_complete{error}", async () => {
    const model = new TestModel([
      [text("half"), usage(7, 1), { fail: new ModelError("rate limited by provider", { retryable: true, status: 429 }) }],
      reply("recovered"),
    ]);
    const agent = makeAgent(model);
    const run = start(agent, turn("hi"));
    const done = await run.done;
    const types = run.events.map((e) => e.type);
    expect(types.slice(-3)).toEqual(["error", "activity", "turn_complete"]);
    expect(run.of("error")[0]).toEqual({ type: "error", code: "model_error", message: "rate limited by provider", retryable: true });
    expect(done.stopReason).toBe("error");
    expect(done.usage.inputTokens).toBe(7);
    expect(done.record.error).toEqual({ code: "model_error", message: "rate limited by provider", retryable: true });
    // The session goes on.
    expect((await start(agent, turn("again")).done).stopReason).toBe("end_turn");
    expectValidHistory(model.requests[1]!.messages);
  });

  it("any other error thrown by the adapter is a non-retryable model_error", async () => {
    const model = new TestModel([[{ fail: new TypeError("socket hang up") }]]);
    const run = start(makeAgent(model), turn("hi"));
    await run.done;
    expect(run.of("error")[0]).toMatchObject({ code: "model_error", retryable: false });
  });

  it("a failure of the agent itself is agent_error, the history stays valid", async () => {
    const errors: unknown[] = [];
    // Arguments that cannot be serialised make the agent's own token counting throw.
    const bad = { n: 1n } as unknown as JsonObject;
    const model = new TestModel([toolCalls(call("b1", "t", bad)), reply("unreachable")]);
    const agent = makeAgent(model, { tools: [tool("t")], onAgentError: (e) => errors.push(e) });
    const run = start(agent, turn("go"));
    agent.submitToolResult((await run.toolRequest()).toolCallId, ok("x"));
    const done = await run.done;
    expect(run.of("error")).toEqual([{ type: "error", code: "agent_error", message: "the agent failed", retryable: false }]);
    expect(done.stopReason).toBe("error");
    expect(errors).toHaveLength(1);
    expect(run.events.at(-1)!.type).toBe("turn_complete");
  });
});
