import { afterEach, describe, expect, it, vi } from "vitest";
import { call, finish, gate, reply, TestModel, text, toolCalls, usage } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, reactionsDone, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });

describe("cancellation", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("mid-stream: aborts the provider at once, keeps the partial answer and its usage", async () => {
    const model = new TestModel([[usage(40, 3, 8), text("Partial ans"), { hang: true }, text("never"), finish()], reply("next turn")]);
    const agent = makeAgent(model);
    const run = start(agent, turn("long question"));
    await run.waitFor((e) => e.type === "text_delta");
    agent.cancelTurn("user pressed stop");
    const done = await run.done;
    expect(model.aborted[0]).toBe(true);
    expect(done.stopReason).toBe("cancelled");
    expect(done.usage).toEqual({ inputTokens: 40, outputTokens: 3, cacheReadTokens: 8, cacheCreationTokens: 0 });
    expect(done.record.assistantText).toBe("Partial ans");
    expect(run.events.at(-1)!.type).toBe("turn_complete");
    expect(run.of("turn_complete")).toHaveLength(1);
    expect(run.of("activity").at(-1)!.state).toBe("idle");
    const history = agent.history();
    expect(history.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(history[1]!.parts).toEqual([{ type: "text", text: "Partial ans" }]);
    // The next turn starts from a valid history.
    await start(agent, turn("again")).done;
    expectValidHistory(model.requests[1]!.messages);
  });

  it("a tool call already streamed when cancelled gets a synthetic 'cancelled' result", async () => {
    const callTaken = gate();
    const model = new TestModel([[text("I'll run it"), call("t1", "run"), { reached: callTaken.open }, { hang: true }]]);
    const agent = makeAgent(model, { tools: [tool("run")] });
    const run = start(agent, turn("go"));
    await callTaken.promise;
    agent.cancelTurn("stop");
    const done = await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    expect(done.record.toolCalls[0]).toMatchObject({ id: "t1", permission: "cancelled", error: "cancelled" });
    const history = agent.history();
    expectValidHistory(history);
    expect(history.at(-1)!.parts[0]).toMatchObject({ type: "tool_result", toolUseId: "t1", content: "cancelled", isError: true });
  });

  it("while waiting for a tool: resolves it as cancelled and keeps history valid", async () => {
    const model = new TestModel([toolCalls(call("p1", "peek"), call("w1", "walk")), reply("unused")]);
    const agent = makeAgent(model, { tools: [tool("peek", { category: "pure" }), tool("walk")] });
    const run = start(agent, turn("go"));
    await run.toolRequest(1);
    agent.submitToolResult("p1", ok("seen"));
    agent.cancelTurn("stop");
    const done = await run.done;
    expect(done.stopReason).toBe("cancelled");
    expect(model.calls).toBe(1);
    expect(agent.submitToolResult("w1", ok("late"))).toBe("no_active_turn");
    const history = agent.history();
    expectValidHistory(history);
    expect(history.at(-1)!.parts.map((p) => (p.type === "tool_result" ? p.content : ""))).toEqual(["seen", "cancelled"]);
    expect(done.record.toolCalls.map((c) => c.outcome?.result ?? c.error)).toEqual(["seen", "cancelled"]);
  });

  it("while waiting for an approval: no request, history valid, turn cancelled", async () => {
    const model = new TestModel([toolCalls(call("a1", "danger"))]);
    const agent = makeAgent(model, { tools: [tool("danger")], permissions: [{ toolPattern: "danger", policy: "require_confirmation" }] });
    const run = start(agent, turn("go"));
    await run.waitFor((e) => e.type === "activity" && e.state === "waiting_approval");
    agent.cancelTurn("stop");
    const done = await run.done;
    expect(done.stopReason).toBe("cancelled");
    expect(run.of("tool_request")).toHaveLength(0);
    expect(done.record.toolCalls[0]!.permission).toBe("cancelled");
    expect(agent.decidePermission("a1", true)).toBe("no_active_turn");
    expectValidHistory(agent.history());
  });

  it("cancelTurn without a turn is a no-op, and a new turn can start right after turn_complete", async () => {
    const model = new TestModel([reply("one"), reply("two")]);
    const agent = makeAgent(model);
    agent.cancelTurn("nothing to cancel");
    const iterator = agent.runTurn(turn("a"))[Symbol.asyncIterator]();
    for (;;) {
      const { value } = await iterator.next();
      if (value?.type === "turn_complete") break;
    }
    expect(() => agent.runTurn(turn("b"))).not.toThrow();
  });

  it("refuses a second concurrent turn", async () => {
    const g = gate();
    const model = new TestModel([[{ wait: g.promise }, ...reply("one")]]);
    const agent = makeAgent(model);
    const run = start(agent, turn("a"));
    expect(() => agent.runTurn(turn("b"))).toThrow(/turn is already running/);
    g.open();
    await run.done;
  });

  it("a consumer that stops reading cancels the turn", async () => {
    const model = new TestModel([[text("x"), { hang: true }]]);
    const agent = makeAgent(model);
    for await (const e of agent.runTurn(turn("a"))) if (e.type === "text_delta") break;
    await model.ended(0);
    expect(model.aborted[0]).toBe(true);
    // The cancelled turn completes once the agent has handled the aborted call.
    await reactionsDone();
    expect(() => agent.runTurn(turn("b"))).not.toThrow();
  });

  it("dispose cancels everything and leaves no timers or open waits", async () => {
    // Fake timers count exactly the timers created from here on (the agent's and the harness's).
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const tools = [tool("slow", { timeoutMs: 60_000 }), tool("ask")];
    const permissions = [{ toolPattern: "ask", policy: "require_confirmation" as const }];

    // Waiting for an approval.
    const asking = makeAgent(new TestModel([toolCalls(call("a1", "ask"))]), { tools, permissions });
    const run1 = start(asking, turn("go"));
    await run1.waitFor((e) => e.type === "activity" && e.state === "waiting_approval");
    expect(vi.getTimerCount()).toBe(1); // the approval timeout
    asking.dispose();
    expect(vi.getTimerCount()).toBe(0);
    expect((await run1.done).stopReason).toBe("cancelled");
    expect(asking.decidePermission("a1", true)).toBe("no_active_turn");

    // Waiting for a tool result.
    const waiting = makeAgent(new TestModel([toolCalls(call("s1", "slow"))]), { tools, permissions });
    const run2 = start(waiting, turn("go"));
    await run2.toolRequest();
    expect(vi.getTimerCount()).toBe(1); // the tool timeout
    waiting.dispose();
    expect(vi.getTimerCount()).toBe(0);
    expect((await run2.done).stopReason).toBe("cancelled");
    expect(vi.getTimerCount()).toBe(0);
    expect(() => waiting.runTurn(turn("b"))).toThrow(/disposed/);
    expect(waiting.submitToolResult("s1", ok("x"))).toBe("no_active_turn");
    expectValidHistory(waiting.history());
  });

  it("dispose during a model call aborts it and ends the turn", async () => {
    const calling = gate();
    const model = new TestModel([[{ reached: calling.open }, { hang: true }]]);
    const agent = makeAgent(model);
    const run = start(agent, turn("go"));
    await calling.promise;
    agent.dispose();
    expect((await run.done).stopReason).toBe("cancelled");
    expect(model.aborted[0]).toBe(true);
    await model.ended(0);
    expect(model.closed[0]).toBe(true);
  });
});
