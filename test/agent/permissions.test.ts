import { describe, expect, it } from "vitest";
import { defaultAgentLimits } from "../../src/agent/index.ts";
import { call, reply, TestModel, toolCalls } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });

describe("permissions", () => {
  it("reports environment rules first, then the defaults as rules", () => {
    const agent = makeAgent(new TestModel(), { permissions: [{ toolPattern: "rm_*", policy: "deny", reason: "destructive" }] });
    expect(agent.permissions).toEqual([
      { toolPattern: "rm_*", policy: "deny", reason: "destructive" },
      { toolPattern: "*", policy: "allow", category: "pure", reason: "pure tools are allowed by default" },
      { toolPattern: "*", policy: "allow", reason: "allowed by default" },
    ]);
  });

  it("deny: sends no request and tells the model the tool is not permitted, with the reason", async () => {
    const model = new TestModel([toolCalls(call("d1", "rm_rf", { path: "/" })), reply("ok, I won't")]);
    const agent = makeAgent(model, { tools: [tool("rm_rf")], permissions: [{ toolPattern: "rm_*", policy: "deny", reason: "destructive" }] });
    const run = start(agent, turn("clean up"));
    const done = await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    const result = model.requests[1]!.messages.at(-1)!.parts[0]!;
    expect(result).toMatchObject({ type: "tool_result", isError: true, content: 'tool "rm_rf" is not permitted: destructive' });
    expect(done.record.toolCalls[0]).toMatchObject({ permission: "policy_denied", error: 'tool "rm_rf" is not permitted: destructive' });
  });

  it("first match wins, and category-scoped rules only match that category", async () => {
    const model = new TestModel([toolCalls(call("a", "cam_look"), call("b", "cam_move")), reply("ok")]);
    const agent = makeAgent(model, {
      tools: [tool("cam_look", { category: "pure" }), tool("cam_move", { category: "physical" })],
      permissions: [
        { toolPattern: "cam_*", policy: "allow", category: "pure" },
        { toolPattern: "cam_*", policy: "deny" },
        { toolPattern: "cam_move", policy: "allow" },
      ],
    });
    const run = start(agent, turn("go"));
    const req = await run.toolRequest();
    expect(req.toolCallId).toBe("a");
    agent.submitToolResult("a", ok("view"));
    const done = await run.done;
    expect(done.record.toolCalls.map((c) => c.permission)).toEqual(["allowed", "policy_denied"]);
  });

  it("require_confirmation: asks, and an approval sends the request", async () => {
    const model = new TestModel([toolCalls(call("c1", "push")), reply("pushed")]);
    const agent = makeAgent(model, { tools: [tool("push")], permissions: [{ toolPattern: "push", policy: "require_confirmation" }] });
    const run = start(agent, turn("push it"));
    const ask = await run.waitFor((e) => e.type === "activity" && e.state === "waiting_approval");
    expect(ask).toMatchObject({ detail: "c1" });
    expect(run.of("tool_request")).toHaveLength(0);
    expect(agent.submitToolResult("c1", ok("too early"))).toBe("unknown");
    expect(agent.decidePermission("other", true)).toBe("unknown");
    expect(agent.decidePermission("c1", true)).toBe("accepted");
    expect(agent.decidePermission("c1", true)).toBe("unknown");
    await run.toolRequest();
    agent.submitToolResult("c1", ok("done"));
    const done = await run.done;
    expect(done.record.toolCalls[0]).toMatchObject({ permission: "approved", outcome: { result: "done" } });
    expect(run.of("activity").map((a) => a.state)).toEqual(["thinking", "waiting_approval", "calling_tool", "thinking", "idle"]);
  });

  it("require_confirmation: a denial sends no request and the model is told", async () => {
    const model = new TestModel([toolCalls(call("c1", "push")), reply("fine")]);
    const agent = makeAgent(model, { tools: [tool("push")], permissions: [{ toolPattern: "push", policy: "require_confirmation" }] });
    const run = start(agent, turn("push it"));
    await run.waitFor((e) => e.type === "activity" && e.state === "waiting_approval");
    agent.decidePermission("c1", false);
    const done = await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    expect(model.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({ isError: true, content: 'the user denied permission to run tool "push"' });
    expect(done.record.toolCalls[0]!.permission).toBe("denied");
  });

  it("require_confirmation: fails closed when nobody decides in time", async () => {
    const model = new TestModel([toolCalls(call("c1", "push")), reply("fine")]);
    const agent = makeAgent(model, {
      tools: [tool("push")],
      permissions: [{ toolPattern: "push", policy: "require_confirmation" }],
      limits: { ...defaultAgentLimits, approvalTimeoutMs: 100 },
    });
    const run = start(agent, turn("push it"));
    const done = await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    expect(done.record.toolCalls[0]!.permission).toBe("approval_timeout");
    expect(model.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({ isError: true, content: expect.stringContaining("not given within 100ms") });
    expect(agent.decidePermission("c1", true)).toBe("no_active_turn");
    expectValidHistory(agent.history());
  });

  it("asks for every call of a response at once and runs the rest as decided", async () => {
    const model = new TestModel([toolCalls(call("x", "a"), call("y", "b"), call("z", "free")), reply("ok")]);
    const agent = makeAgent(model, {
      tools: [tool("a"), tool("b"), tool("free")],
      permissions: [{ toolPattern: "[ab]", policy: "require_confirmation" }],
    });
    const run = start(agent, turn("go"));
    await run.waitFor((e) => e.type === "activity" && e.state === "waiting_approval" && e.detail === "y");
    agent.decidePermission("y", true);
    agent.decidePermission("x", false);
    const first = await run.toolRequest(0);
    expect(first.toolCallId).toBe("y");
    agent.submitToolResult("y", ok("B"));
    const second = await run.toolRequest(1);
    expect(second.toolCallId).toBe("z");
    agent.submitToolResult("z", ok("F"));
    const done = await run.done;
    expect(done.record.toolCalls.map((c) => [c.id, c.permission])).toEqual([
      ["x", "denied"],
      ["y", "approved"],
      ["z", "allowed"],
    ]);
  });
});
