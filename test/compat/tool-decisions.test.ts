// What the server decided about each tool call (session-behaviour.md §4, §6): rules match an
// uncategorised tool as `physical` (from ROZ_PERMISSION_RULES and from an environment made
// over REST); `waiting_approval` carries ApprovalRequest; every call refused without reaching
// the client sends ToolDenied with the reason and what the model was told.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ToolCategoryHint } from "../../src/gen/roz/v1/agent_pb.js";
import { toolMessages } from "../session/chat-body.ts";
import { type SessionFixture, startSessionFixture } from "../session/fixture.ts";
import { barrier, nextApprovalQuestion, nextOf, readTurn, rq, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";

const physical = (name: string) => ({ ...tool(name), category: ToolCategoryHint.TOOL_CATEGORY_PHYSICAL });

const rules = JSON.stringify([
  { tool_pattern: "danger_*", policy: "deny", reason: "too dangerous" },
  { tool_pattern: "ask_plain", policy: "require_confirmation" },
  { tool_pattern: "*", policy: "require_confirmation", category: "physical", reason: "physical tools need a human" },
]);

/** The model's text for each tool result of request `index` (the "Error: " prefix is the converter's). */
async function toldModel(fx: SessionFixture, index: number): Promise<Record<string, string>> {
  const results = toolMessages((await fx.request(index)).body);
  return Object.fromEntries(results.map((m) => [m.tool_call_id!, String(m.content).replace(/^Error: /, "")]));
}

describe("rules from ROZ_PERMISSION_RULES, a long approval timeout", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_PERMISSION_RULES: rules, ROZ_APPROVAL_TIMEOUT_MS: "60000" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("an uncategorised tool counts as physical: asked with ApprovalRequest, the PURE one is not (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("move_arm"), tool("look", { pure: true })] });
    fx.fake.plan(
      {
        toolCalls: [
          { id: "call_look", name: "look", arguments: {} },
          { id: "call_move", name: "move_arm", arguments: { x: 1.5, joint: "elbow" } },
        ],
      },
      { text: "Moved." },
    );
    client.send(rq.user("move the arm"));
    const asked = await nextApprovalQuestion(client);
    expect(asked.detail).toBe("call_move");
    expect(asked.approval).toMatchObject({
      toolCallId: "call_move",
      toolName: "move_arm",
      parameters: { x: 1.5, joint: "elbow" },
      reason: "physical tools need a human",
      timeoutMs: 60000,
    });
    // Once the uncategorised tool is approved, both are requested.
    client.send(rq.decision("call_move", true));
    const requested = [await nextOf(client, "toolRequest"), await nextOf(client, "toolRequest")];
    expect(requested.map((r) => r.toolCallId).sort()).toEqual(["call_look", "call_move"]);
    client.send(rq.toolResult("call_look", "clear"));
    client.send(rq.toolResult("call_move", "moved"));
    const turn = await readTurn(client);
    expect(valuesOf(client.responses.seen, "toolDenied")).toEqual([]);
    // Only the uncategorised tool was asked about, not the PURE one.
    expect(
      valuesOf(client.responses.seen, "activityUpdate")
        .filter((a) => a.state === "waiting_approval")
        .map((a) => a.detail),
    ).toEqual(["call_move"]);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  });

  it("an explicitly physical tool is asked too; a rule without a reason gives a default reason (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [physical("grip"), tool("ask_plain", { pure: true })] });
    fx.fake.plan(
      {
        toolCalls: [
          { id: "call_grip", name: "grip", arguments: {} },
          { id: "call_plain", name: "ask_plain", arguments: {} },
        ],
      },
      { text: "ok" },
    );
    client.send(rq.user("grip"));
    const asked = [await nextApprovalQuestion(client), await nextApprovalQuestion(client)];
    expect(asked.map((a) => [a.detail, a.approval?.toolName, a.approval?.reason])).toEqual([
      ["call_grip", "grip", "physical tools need a human"],
      ["call_plain", "ask_plain", 'tool "ask_plain" requires your confirmation'],
    ]);
    client.send(rq.decision("call_grip", false));
    client.send(rq.decision("call_plain", false));
    const turn = await readTurn(client);
    const denied = valuesOf(turn, "toolDenied");
    expect(denied.map((d) => [d.toolCallId, d.toolName, d.reason])).toEqual([
      ["call_grip", "grip", "approval_denied"],
      ["call_plain", "ask_plain", "approval_denied"],
    ]);
    const told = await toldModel(fx, 1);
    for (const d of denied) expect(d.detail).toBe(told[d.toolCallId]);
  });

  it("ToolDenied for a deny rule, an unknown tool and arguments that are not an object; none reaches the client (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("danger_rm"), tool("read", { pure: true })] });
    fx.fake.plan(
      {
        toolCalls: [
          { id: "call_rm", name: "danger_rm", arguments: { path: "/" } },
          { id: "call_ghost", name: "ghost", arguments: {} },
          { id: "call_bad", name: "read", arguments: "not json" },
        ],
      },
      { text: "None of that worked." },
    );
    client.send(rq.user("go"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(valuesOf(turn, "activityUpdate").map((a) => a.state)).not.toContain("waiting_approval");
    const denied = valuesOf(turn, "toolDenied");
    expect(denied.map((d) => [d.toolCallId, d.toolName, d.reason])).toEqual([
      ["call_rm", "danger_rm", "policy"],
      ["call_ghost", "ghost", "unknown_tool"],
      ["call_bad", "read", "invalid_arguments"],
    ]);
    expect(denied[0]!.detail).toBe('tool "danger_rm" is not permitted: too dangerous');
    const told = await toldModel(fx, 1);
    for (const d of denied) expect(d.detail).toBe(told[d.toolCallId]);
    // Each ToolDenied precedes the turn's end.
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  });

  it("cancel_turn while an approval is awaited: ToolDenied{cancelled} before turn_complete{cancelled} (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("move_arm")] });
    fx.fake.plan({ toolCalls: [{ id: "call_wave", name: "move_arm", arguments: {} }] }, { text: "ok" });
    client.send(rq.user("wave"));
    await nextApprovalQuestion(client);
    client.send(rq.cancelTurn());
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolDenied")).toMatchObject([{ toolCallId: "call_wave", toolName: "move_arm", reason: "cancelled" }]);
    expect(turnCompleteOf(turn).stopReason).toBe("cancelled");
    expect(valuesOf(await barrier(client), "toolDenied")).toEqual([]);
  });
});

describe("a short approval timeout", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_PERMISSION_RULES: rules, ROZ_APPROVAL_TIMEOUT_MS: "300" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("an approval that does not come: ToolDenied{approval_timeout} with what the model was told (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("move_arm")] });
    fx.fake.plan({ toolCalls: [{ id: "call_late", name: "move_arm", arguments: {} }] }, { text: "No approval." });
    client.send(rq.user("move"));
    expect((await nextApprovalQuestion(client)).approval).toMatchObject({ toolCallId: "call_late", timeoutMs: 300 });
    const turn = await readTurn(client);
    const [denied] = valuesOf(turn, "toolDenied");
    expect(denied).toMatchObject({ toolCallId: "call_late", toolName: "move_arm", reason: "approval_timeout" });
    expect(denied!.detail).toBe((await toldModel(fx, 1))["call_late"]);
    expect(denied!.detail).toMatch(/not given within 300ms/);
  });
});

describe("an environment's rule (REST), no server rules", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_APPROVAL_TIMEOUT_MS: "60000" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("{*, require_confirmation, category physical} catches an uncategorised tool (connect)", async () => {
    const env = await fx.rest("POST", "/v1/environments", {
      name: "robot-lab",
      permissions: [{ tool_pattern: "*", policy: "require_confirmation", category: "physical", reason: "the lab asks first" }],
    });
    expect(env.status).toBe(201);
    const { client } = await fx.start("connect", { environmentId: env.json.id, tools: [tool("move_arm")] });
    fx.fake.plan({ toolCalls: [{ id: "call_env", name: "move_arm", arguments: { x: 2 } }] }, { text: "done" });
    client.send(rq.user("move"));
    const asked = await nextApprovalQuestion(client);
    expect(asked).toMatchObject({
      detail: "call_env",
      approval: { toolCallId: "call_env", toolName: "move_arm", parameters: { x: 2 }, reason: "the lab asks first" },
    });
    expect(valuesOf(await barrier(client), "toolRequest")).toEqual([]);
    client.send(rq.decision("call_env", true));
    expect((await nextOf(client, "toolRequest")).toolCallId).toBe("call_env");
    client.send(rq.toolResult("call_env", "moved"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  });
});
