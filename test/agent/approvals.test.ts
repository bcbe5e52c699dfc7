// What the agent says about approvals and refused calls: the question's details, how it
// was resolved, `tool_denied` for every call that never reaches the client, and the
// approval modifier's merge rule (same keys, same JSON types, or the call is refused).
import { describe, expect, it } from "vitest";
import { defaultAgentLimits } from "../../src/agent/index.ts";
import type { JsonObject } from "../../src/models/index.ts";
import { call, reply, TestModel, toolCalls } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });
const confirm = [{ toolPattern: "move", policy: "require_confirmation" as const, reason: "moves the arm" }];

/** A turn whose model calls `move(args)` once under `require_confirmation`, then replies. */
async function askedToMove(args: JsonObject) {
  const model = new TestModel([toolCalls(call("m1", "move", args)), reply("done")]);
  const agent = makeAgent(model, { tools: [tool("move")], permissions: confirm, limits: { ...defaultAgentLimits, approvalTimeoutMs: 60_000 } });
  const run = start(agent, turn("move it"));
  const ask = await run.waitFor((e) => e.type === "activity" && e.state === "waiting_approval");
  return { model, agent, run, ask };
}

describe("approvals", () => {
  it("the question says what is to be approved, and its resolution is reported before the request", async () => {
    const { agent, run, ask } = await askedToMove({ x: 1 });
    expect(ask).toMatchObject({
      detail: "m1",
      approval: { toolCallId: "m1", toolName: "move", parameters: { x: 1 }, reason: "moves the arm", timeoutMs: 60_000 },
    });
    expect(agent.decidePermission("m1", true)).toBe("accepted");
    await run.toolRequest();
    const types = run.events.map((e) => e.type);
    expect(types.indexOf("approval_resolved")).toBeLessThan(types.indexOf("tool_request"));
    expect(run.of("approval_resolved")).toEqual([{ type: "approval_resolved", toolCallId: "m1", approved: true }]);
    agent.submitToolResult("m1", ok("moved"));
    await run.done;
  });

  it("a denial is resolved as denied and the call gets a tool_denied", async () => {
    const { agent, run } = await askedToMove({ x: 1 });
    agent.decidePermission("m1", false);
    await run.done;
    expect(run.of("approval_resolved")).toEqual([{ type: "approval_resolved", toolCallId: "m1", approved: false, reason: "approval_denied" }]);
    expect(run.of("tool_denied")).toEqual([
      { type: "tool_denied", toolCallId: "m1", toolName: "move", reason: "approval_denied", detail: 'the user denied permission to run tool "move"' },
    ]);
  });

  it("deny policy and unknown tools are reported as tool_denied with their reasons", async () => {
    const model = new TestModel([toolCalls(call("d1", "rm_rf"), call("u1", "nope")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("rm_rf")], permissions: [{ toolPattern: "rm_*", policy: "deny", reason: "destructive" }] });
    const run = start(agent, turn("go"));
    await run.done;
    expect(run.of("tool_denied").map((d) => [d.toolCallId, d.reason])).toEqual([
      ["d1", "policy"],
      ["u1", "unknown_tool"],
    ]);
    expect(run.of("tool_request")).toHaveLength(0);
  });
});

describe("approval modifier", () => {
  it("changes values of existing keys with the same JSON type: the request, the record and nothing else", async () => {
    const { agent, run } = await askedToMove({ x: 1, speed: "fast", path: [1, 2], keep: true });
    expect(agent.decidePermission("m1", true, { x: 2.5, speed: "slow", path: [] })).toBe("accepted");
    const request = await run.toolRequest();
    expect(request.parameters).toEqual({ x: 2.5, speed: "slow", path: [], keep: true });
    agent.submitToolResult("m1", ok("moved"));
    const done = await run.done;
    expect(done.record.toolCalls[0]).toMatchObject({ permission: "approved", parameters: { x: 2.5, speed: "slow", path: [], keep: true } });
  });

  it("inside a nested object it changes existing keys too, and keeps the ones it does not name", async () => {
    const { agent, run } = await askedToMove({ x: 1, pose: { z: 1, speed: "fast" } });
    expect(agent.decidePermission("m1", true, { pose: { z: 2 } })).toBe("accepted");
    expect((await run.toolRequest()).parameters).toEqual({ x: 1, pose: { z: 2, speed: "fast" } });
    agent.submitToolResult("m1", ok("moved"));
    await run.done;
  });

  it("an empty modifier changes nothing", async () => {
    const { agent, run } = await askedToMove({ x: 1 });
    agent.decidePermission("m1", true, {});
    expect((await run.toolRequest()).parameters).toEqual({ x: 1 });
    agent.submitToolResult("m1", ok("moved"));
    await run.done;
  });

  it.each([
    ["a new key", { y: 1 }, 'the modifier adds "y"'],
    ["another type", { x: "1" }, 'the modifier changes "x" from number to string'],
    ["null for a number", { x: null }, 'the modifier changes "x" from number to null'],
    ["an object for an array", { path: { a: 1 } }, 'the modifier changes "path" from array to object'],
    ["a new key inside a nested object", { pose: { z: 2, extra: 1 } }, 'the modifier adds "pose.extra"'],
    ["another type inside a nested object", { pose: { z: "up" } }, 'the modifier changes "pose.z" from number to string'],
  ])("%s refuses the call with invalid_arguments: no request, the model is told", async (_name, modifier, why) => {
    const { model, agent, run } = await askedToMove({ x: 1, path: [1], pose: { z: 1 } });
    agent.decidePermission("m1", true, modifier as JsonObject);
    const done = await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    expect(run.of("approval_resolved")).toEqual([{ type: "approval_resolved", toolCallId: "m1", approved: false, reason: "invalid_arguments" }]);
    const denied = run.of("tool_denied")[0]!;
    expect(denied).toMatchObject({ toolCallId: "m1", reason: "invalid_arguments" });
    expect(denied.detail).toContain(why);
    expect(done.record.toolCalls[0]).toMatchObject({ permission: "invalid_arguments", parameters: { x: 1, path: [1], pose: { z: 1 } } });
    expect(model.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({ type: "tool_result", isError: true, content: denied.detail });
    expectValidHistory(agent.history());
  });
});
