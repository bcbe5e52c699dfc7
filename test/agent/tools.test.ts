import { describe, expect, it } from "vitest";
import { call, finish, reply, TestModel, text, toolCalls, usage } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, reactionsDone, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });

describe("tool round trip", () => {
  it("requests the tool, feeds the result back and completes with the full record", async () => {
    const model = new TestModel([
      [text("Let me look. "), call("c1", "read_file", { path: "a.txt" }), usage(100, 20, 30, 5), finish("tool_use")],
      [text("It says hello."), usage(150, 10, 40, 0), finish("end_turn")],
    ]);
    const agent = makeAgent(model, { tools: [tool("read_file", { timeoutMs: 5000 })] });
    const run = start(agent, turn("what is in a.txt?"));
    const req = await run.toolRequest();
    expect(req).toMatchObject({ toolCallId: "c1", toolName: "read_file", parameters: { path: "a.txt" }, timeoutMs: 5000 });
    expect(agent.submitToolResult("c1", { success: true, result: "hello", exitCode: 0, truncated: false, durationMs: 7 })).toBe("accepted");
    const done = await run.done;

    expect(done.stopReason).toBe("end_turn");
    expect(done.usage).toEqual({ inputTokens: 250, outputTokens: 30, cacheReadTokens: 70, cacheCreationTokens: 5 });
    expect(run.events.map((e) => e.type)).toEqual([
      "activity",
      "text_delta",
      "model_call_completed",
      "activity",
      "tool_request",
      "tool_finished",
      "activity",
      "text_delta",
      "model_call_completed",
      "activity",
      "turn_complete",
    ]);
    // Each model call is reported with its own usage, cache hits and finish reason.
    expect(run.of("model_call_completed").map((c) => [c.usage.inputTokens, c.usage.cacheReadTokens, c.stopReason])).toEqual([
      [100, 30, "tool_use"],
      [150, 40, "end_turn"],
    ]);
    expect(run.of("model_call_completed")[0]).toMatchObject({ model: "test/model", modelId: "model", provider: "test", latencyMs: expect.any(Number) });
    expect(run.of("activity").map((a) => [a.state, a.detail])).toEqual([
      ["thinking", ""],
      ["calling_tool", "read_file"],
      ["thinking", ""],
      ["idle", ""],
    ]);
    expect(run.of("text_delta").every((d) => d.messageId === done.messageId)).toBe(true);

    // The model's second call saw the tool result after its own tool use.
    const second = model.requests[1]!;
    expect(second.messages.at(-2)).toEqual({
      role: "assistant",
      parts: [
        { type: "text", text: "Let me look. " },
        { type: "tool_use", id: "c1", name: "read_file", input: { path: "a.txt" } },
      ],
    });
    expect(second.messages.at(-1)).toEqual({
      role: "user",
      parts: [{ type: "tool_result", toolUseId: "c1", name: "read_file", content: "hello", isError: false }],
    });
    expect(second.tools.map((t) => t.name)).toEqual(["read_file"]);

    const record = done.record;
    expect(record.assistantText).toBe("Let me look. \n\nIt says hello.");
    expect(record.toolCalls).toHaveLength(1);
    expect(record.toolCalls[0]).toMatchObject({
      id: "c1",
      name: "read_file",
      parameters: { path: "a.txt" },
      permission: "allowed",
      outcome: { success: true, result: "hello", exitCode: 0, durationMs: 7 },
    });
    expect(record.toolCalls[0]!.endedAt).toBeGreaterThanOrEqual(record.toolCalls[0]!.startedAt);
    expect(record.usage).toEqual(done.usage);

    const history = agent.history();
    expect(history).toHaveLength(4);
    expectValidHistory(history);
    expect(agent.submitToolResult("c1", ok("again"))).toBe("no_active_turn");
  });

  it("requests PURE tools concurrently and returns results in call order", async () => {
    const model = new TestModel([toolCalls(call("a", "p1"), call("b", "p2"), call("c", "p3")), reply("done")]);
    const pure = { category: "pure" as const };
    const agent = makeAgent(model, { tools: [tool("p1", pure), tool("p2", pure), tool("p3", pure)] });
    const run = start(agent, turn("go"));
    await run.toolRequest(2); // all three are out before any result
    expect(run.of("tool_request").map((r) => r.toolCallId)).toEqual(["a", "b", "c"]);
    expect(run.of("activity").map((a) => a.detail)).toEqual(["", "p1", "p2", "p3"]);
    expect(agent.submitToolResult("c", ok("C"))).toBe("accepted");
    expect(agent.submitToolResult("a", ok("A"))).toBe("accepted");
    expect(agent.submitToolResult("b", ok("B"))).toBe("accepted");
    await run.done;
    const results = model.requests[1]!.messages.at(-1)!.parts;
    expect(results.map((p) => (p.type === "tool_result" ? [p.toolUseId, p.content] : p.type))).toEqual([
      ["a", "A"],
      ["b", "B"],
      ["c", "C"],
    ]);
  });

  it("requests non-pure tools one at a time, beside the pure ones", async () => {
    const model = new TestModel([toolCalls(call("m1", "move"), call("p", "look", {}), call("m2", "move", { to: 2 })), reply("moved")]);
    const agent = makeAgent(model, { tools: [tool("move", { category: "physical" }), tool("look", { category: "pure" })] });
    const run = start(agent, turn("move twice"));
    await run.toolRequest(1);
    // m1 and the pure call are out; m2 waits for m1's result, not for the pure one's.
    expect(run.of("tool_request").map((r) => r.toolCallId)).toEqual(["m1", "p"]);
    expect(agent.submitToolResult("p", ok("seen"))).toBe("accepted");
    await reactionsDone();
    expect(run.of("tool_request")).toHaveLength(2);
    expect(agent.submitToolResult("m1", ok("at 1"))).toBe("accepted");
    const third = await run.toolRequest(2);
    expect(third).toMatchObject({ toolCallId: "m2", parameters: { to: 2 } });
    agent.submitToolResult("m2", ok("at 2"));
    await run.done;
    const parts = model.requests[1]!.messages.at(-1)!.parts;
    expect(parts.map((p) => (p.type === "tool_result" ? p.content : ""))).toEqual(["at 1", "seen", "at 2"]);
  });

  it("times a tool out, tells the model, goes on, and reports a late result as unknown", async () => {
    const model = new TestModel([toolCalls(call("slow1", "slow")), reply("gave up")]);
    const agent = makeAgent(model, { tools: [tool("slow", { timeoutMs: 100 })] });
    const run = start(agent, turn("try"));
    const req = await run.toolRequest();
    expect(req.timeoutMs).toBe(100);
    const done = await run.done;
    expect(done.stopReason).toBe("end_turn");
    const result = model.requests[1]!.messages.at(-1)!.parts[0]!;
    expect(result).toMatchObject({ type: "tool_result", content: "tool timeout after 100ms", isError: true });
    expect(done.record.toolCalls[0]).toMatchObject({ error: "tool timeout after 100ms", permission: "allowed" });
    expect(done.record.toolCalls[0]!.outcome).toBeUndefined();
    expect(agent.submitToolResult("slow1", ok("late"))).toBe("no_active_turn");
  });

  it("uses the default tool timeout from the limits when the schema says 0", async () => {
    const model = new TestModel([toolCalls(call("x", "t")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("t")] });
    const run = start(agent, turn("go"));
    expect((await run.toolRequest()).timeoutMs).toBe(120_000);
    agent.submitToolResult("x", ok("fine"));
    await run.done;
  });

  it("answers an unknown tool with an error result and sends no request", async () => {
    const model = new TestModel([toolCalls(call("u1", "nope", { a: 1 })), reply("sorry")]);
    const agent = makeAgent(model, { tools: [tool("real")] });
    const run = start(agent, turn("go"));
    const done = await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    expect(model.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({
      toolUseId: "u1",
      isError: true,
      content: expect.stringContaining('unknown tool "nope"'),
    });
    expect(done.record.toolCalls[0]).toMatchObject({ id: "u1", permission: "unknown_tool", parameters: { a: 1 } });
    expectValidHistory(agent.history());
  });

  it("reports unknown, already answered and timed-out ids as unknown while a turn runs", async () => {
    const model = new TestModel([toolCalls(call("q1", "fast", {}), call("q2", "slow")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("fast", { category: "pure" }), tool("slow", { category: "pure", timeoutMs: 100 })] });
    expect(agent.submitToolResult("q1", ok("x"))).toBe("no_active_turn");
    const run = start(agent, turn("go"));
    await run.toolRequest(1);
    expect(agent.submitToolResult("nonexistent", ok("x"))).toBe("unknown");
    expect(agent.submitToolResult("q1", ok("first"))).toBe("accepted");
    expect(agent.submitToolResult("q1", ok("second"))).toBe("unknown");
    // Wait until q2 has timed out (the turn goes on to the next model call).
    await run.waitFor((e) => e.type === "activity" && e.state === "thinking", 1);
    expect(agent.submitToolResult("q2", ok("late"))).toBe("unknown");
    await run.done;
  });

  it("cuts long results head+tail for the model and keeps the full text in the record", async () => {
    const model = new TestModel([toolCalls(call("big", "dump")), reply("ok")]);
    const agent = makeAgent(model, {
      tools: [tool("dump")],
      limits: { ...(await import("../../src/agent/index.ts")).defaultAgentLimits, toolResultMaxTokens: 200 },
    });
    const run = start(agent, turn("dump"));
    await run.toolRequest();
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} of the output`).join("\n");
    agent.submitToolResult("big", ok(lines));
    const done = await run.done;
    const seen = model.requests[1]!.messages.at(-1)!.parts[0]!;
    if (seen.type !== "tool_result") throw new Error("expected a tool result");
    expect(seen.content.startsWith("line 0 of the output")).toBe(true);
    expect(seen.content.endsWith("line 1999 of the output")).toBe(true);
    expect(seen.content).toMatch(/\[… \d+ characters truncated …\]/);
    expect(seen.content.length).toBeLessThan(2000);
    expect(done.record.toolCalls[0]!.outcome!.result).toBe(lines);
  });

  it("makes a provider's repeated tool call id unique within the session", async () => {
    const model = new TestModel([toolCalls(call("dup", "t")), toolCalls(call("dup", "t")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("t")] });
    const run = start(agent, turn("go"));
    expect((await run.toolRequest(0)).toolCallId).toBe("dup");
    agent.submitToolResult("dup", ok("1"));
    const second = await run.toolRequest(1);
    expect(second.toolCallId).not.toBe("dup");
    expect(agent.submitToolResult(second.toolCallId, ok("2"))).toBe("accepted");
    await run.done;
    expectValidHistory(agent.history());
  });
});

describe("tool registration", () => {
  it("with a source replaces that source's tools; without one adds and replaces by name", async () => {
    const model = new TestModel([reply("1"), reply("2"), reply("3"), reply("4")]);
    const agent = makeAgent(model, { tools: [tool("base"), tool("fs__read")] });
    agent.registerTools("fs", [tool("fs__write"), tool("fs__list")]);
    agent.registerTools(undefined, [tool("base", { description: "new base" }), tool("extra")]);
    await start(agent, turn("a")).done;
    expect(model.requests[0]!.tools.map((t) => [t.name, t.description])).toEqual([
      ["base", "new base"],
      ["fs__write", "fs__write tool"],
      ["fs__list", "fs__list tool"],
      ["extra", "extra tool"],
    ]);
    agent.registerTools("fs", []);
    await start(agent, turn("b")).done;
    expect(model.requests[1]!.tools.map((t) => t.name)).toEqual(["base", "extra"]);
  });

  it("per-turn tools replace the session tools for that turn only", async () => {
    const model = new TestModel([toolCalls(call("s1", "session_tool")), reply("x"), reply("y")]);
    const agent = makeAgent(model, { tools: [tool("session_tool")] });
    const run = start(agent, turn("a", { tools: [tool("turn_tool")] }));
    const done = await run.done;
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(["turn_tool"]);
    expect(done.record.toolCalls[0]!.permission).toBe("unknown_tool");
    await start(agent, turn("b")).done;
    expect(model.requests[2]!.tools.map((t) => t.name)).toEqual(["session_tool"]);
  });
});
