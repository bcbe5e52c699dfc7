// §4 Permissions, end to end: rules from ROZ_PERMISSION_RULES are enforced by the server
// (approval round trips over StreamSession, denials told to the model).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { barrier, nextApprovalQuestion, nextOf, readTurn, rq, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { toolMessages } from "./chat-body.ts";
import { GRPC, type SessionFixture, startSessionFixture } from "./fixture.ts";

const rules = JSON.stringify([
  { tool_pattern: "confirm_*", policy: "require_confirmation", reason: "asks the user first" },
  { tool_pattern: "danger_*", policy: "deny", reason: "too dangerous" },
]);

describe("with a long approval timeout", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_PERMISSION_RULES: rules, ROZ_APPROVAL_TIMEOUT_MS: "60000" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("SessionStarted.permissions lists the enforced rules: configured ones, then the defaults (connect)", async () => {
    const { started } = await fx.start("connect");
    expect(started.permissions.map((p) => [p.toolPattern, p.policy])).toEqual([
      ["confirm_*", "require_confirmation"],
      ["danger_*", "deny"],
      ["*", "allow"],
      ["*", "allow"],
    ]);
    expect(started.permissions[0]?.reason).toBe("asks the user first");
    expect(started.permissions[2]?.category).toBe("pure");
  });

  it("an environment's rules (from REST) come before the server defaults; its instructions reach the model (grpc-js)", async () => {
    const env = await fx.rest("POST", "/v1/environments", {
      name: "lab",
      system_instructions: "LAB-INSTRUCTIONS",
      permissions: [
        { tool_pattern: "lab_*", policy: "deny", reason: "the lab is closed" },
        { tool_pattern: "danger_ok", policy: "allow" },
      ],
    });
    expect(env.status).toBe(201);
    const { client, started } = await fx.start("grpc-js", { environmentId: env.json.id, tools: [tool("lab_probe"), tool("danger_ok")] });
    expect(started.permissions.map((p) => [p.toolPattern, p.policy])).toEqual([
      ["lab_*", "deny"],
      ["danger_ok", "allow"],
      ["confirm_*", "require_confirmation"],
      ["danger_*", "deny"],
      ["*", "allow"],
      ["*", "allow"],
    ]);
    fx.fake.plan(
      {
        toolCalls: [
          { id: "call_lab", name: "lab_probe", arguments: {} },
          { id: "call_ok", name: "danger_ok", arguments: {} },
        ],
      },
      { text: "One ran." },
    );
    client.send(rq.user("probe the lab"));
    // Only the call the environment allows (over the server's danger_* deny) is requested.
    expect((await nextOf(client, "toolRequest")).toolCallId).toBe("call_ok");
    client.send(rq.toolResult("call_ok", "fine"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const body = (await fx.request(1)).body;
    expect(toolMessages(body)).toEqual([
      { role: "tool", tool_call_id: "call_lab", content: 'Error: tool "lab_probe" is not permitted: the lab is closed' },
      { role: "tool", tool_call_id: "call_ok", content: "fine" },
    ]);
    expect(body.messages[0]).toMatchObject({ role: "system", content: expect.stringContaining("LAB-INSTRUCTIONS") });
  });

  it("require_confirmation: waiting_approval with the call id, no request until approved, then the round trip (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("confirm_delete")] });
    fx.fake.plan({ toolCalls: [{ id: "call_del", name: "confirm_delete", arguments: { path: "/tmp/x" } }] }, { text: "Deleted." });
    client.send(rq.user("delete /tmp/x"));
    expect(await nextApprovalQuestion(client)).toMatchObject({ state: "waiting_approval", detail: "call_del" });
    // Nothing is requested before the decision.
    expect(valuesOf(await barrier(client), "toolRequest")).toEqual([]);
    client.send(rq.decision("call_del", true));
    const request = await nextOf(client, "toolRequest");
    expect(request).toMatchObject({ toolCallId: "call_del", toolName: "confirm_delete", parameters: { path: "/tmp/x" } });
    client.send(rq.toolResult("call_del", "deleted"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    expect(toolMessages((await fx.request(1)).body)).toEqual([{ role: "tool", tool_call_id: "call_del", content: "deleted" }]);
  });

  it("require_confirmation denied: no request, the model is told (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("confirm_delete")] });
    fx.fake.plan({ toolCalls: [{ id: "call_nope", name: "confirm_delete", arguments: {} }] }, { text: "Understood, not deleting." });
    client.send(rq.user("delete everything"));
    const waiting = await nextApprovalQuestion(client);
    expect(waiting).toMatchObject({ state: "waiting_approval", detail: "call_nope" });
    client.send(rq.decision("call_nope", false));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const [result] = toolMessages((await fx.request(1)).body);
    expect(result).toMatchObject({ tool_call_id: "call_nope" });
    expect(result!.content).toMatch(/^Error: .*denied/);
  });

  it("approval cannot be bypassed: a result for a call still waiting for approval is unknown; decisions are matched once (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("confirm_pay")] });
    fx.fake.plan({ toolCalls: [{ id: "call_pay", name: "confirm_pay", arguments: { amount: 10 } }] }, { text: "Paid." });
    client.send(rq.user("pay"));
    await nextApprovalQuestion(client);
    client.send(rq.toolResult("call_pay", "pretend it ran"));
    expect(await nextOf(client, "error")).toMatchObject({ code: "unknown_tool_call" });
    client.send(rq.decision("call_other", true));
    expect(await nextOf(client, "error")).toMatchObject({ code: "unknown_tool_call" });
    client.send(rq.decision("call_pay", true));
    client.send(rq.decision("call_pay", false));
    // The first decision stands: the call is requested (the second decision is unknown by then).
    const next = [await client.responses.nextMatching((r) => r.response.case === "toolRequest" || r.response.case === "error", 10_000)];
    next.push(await client.responses.nextMatching((r) => r.response.case === "toolRequest" || r.response.case === "error", 10_000));
    expect(valuesOf(next, "toolRequest").map((r) => r.toolCallId)).toEqual(["call_pay"]);
    expect(valuesOf(next, "error").map((e) => e.code)).toEqual(["unknown_tool_call"]);
    client.send(rq.toolResult("call_pay", "paid 10"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    expect(toolMessages((await fx.request(1)).body)).toEqual([{ role: "tool", tool_call_id: "call_pay", content: "paid 10" }]);
  });

  it("several calls needing approval are all announced and decided one by one (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("confirm_a"), tool("confirm_b")] });
    fx.fake.plan(
      {
        toolCalls: [
          { id: "call_a", name: "confirm_a", arguments: {} },
          { id: "call_b", name: "confirm_b", arguments: {} },
        ],
      },
      { text: "One of two." },
    );
    client.send(rq.user("do a and b"));
    const asked = [await nextApprovalQuestion(client), await nextApprovalQuestion(client)];
    expect(asked.map((a) => [a.state, a.detail])).toEqual([
      ["waiting_approval", "call_a"],
      ["waiting_approval", "call_b"],
    ]);
    client.send(rq.decision("call_b", false));
    client.send(rq.decision("call_a", true));
    expect((await nextOf(client, "toolRequest")).toolCallId).toBe("call_a");
    client.send(rq.toolResult("call_a", "a done"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const results = toolMessages((await fx.request(1)).body);
    expect(results.map((r) => r.tool_call_id)).toEqual(["call_a", "call_b"]);
    expect(results[0]!.content).toBe("a done");
    expect(results[1]!.content).toMatch(/denied/);
  });

  it("cancel_turn while waiting for approval: no request, turn_complete{cancelled}, the call is refused in history (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("confirm_wipe")] });
    fx.fake.plan({ toolCalls: [{ id: "call_wipe", name: "confirm_wipe", arguments: {} }] }, { text: "Ok." });
    client.send(rq.user("wipe it", { messageId: "wipe" }));
    await nextApprovalQuestion(client);
    client.send(rq.cancelTurn());
    const turn = await readTurn(client, 10_000);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "wipe", stopReason: "cancelled" });
    // A decision now finds no turn; the next turn carries the refused call's result.
    client.send(rq.decision("call_wipe", true));
    expect(await nextOf(client, "error")).toMatchObject({ code: "no_active_turn" });
    client.send(rq.user("never mind"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    const [result] = toolMessages((await fx.request(1)).body);
    expect(result).toMatchObject({ tool_call_id: "call_wipe" });
    expect(result!.content).toMatch(/^Error: /);
  });

  it("a half-close while an approval is awaited refuses the call and ends the turn as cancelled (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("confirm_send")] });
    fx.fake.plan({ toolCalls: [{ id: "call_send", name: "confirm_send", arguments: {} }] });
    client.send(rq.user("send it", { messageId: "unanswered" }));
    await nextApprovalQuestion(client);
    client.end();
    const turn = await readTurn(client, 10_000);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "unanswered", stopReason: "cancelled" });
    expect((await client.status).code).toBe(GRPC.OK);
  });

  it("deny policy: no request and no approval question; the model is told the tool is not permitted (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("danger_rm")] });
    fx.fake.plan({ toolCalls: [{ id: "call_rm", name: "danger_rm", arguments: { path: "/" } }] }, { text: "I may not do that." });
    client.send(rq.user("rm -rf /"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(valuesOf(turn, "activityUpdate").map((a) => a.state)).not.toContain("waiting_approval");
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    expect(toolMessages((await fx.request(1)).body)).toEqual([
      { role: "tool", tool_call_id: "call_rm", content: 'Error: tool "danger_rm" is not permitted: too dangerous' },
    ]);
  });
});

describe("with a short approval timeout", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_PERMISSION_RULES: rules, ROZ_APPROVAL_TIMEOUT_MS: "300" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("an approval that does not come in time fails closed: no request, the model is told (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("confirm_launch")] });
    fx.fake.plan({ toolCalls: [{ id: "call_launch", name: "confirm_launch", arguments: {} }] }, { text: "No approval, no launch." });
    client.send(rq.user("launch"));
    expect(await nextApprovalQuestion(client)).toMatchObject({ state: "waiting_approval", detail: "call_launch" });
    const turn = await readTurn(client);
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const [result] = toolMessages((await fx.request(1)).body);
    expect(result).toMatchObject({ tool_call_id: "call_launch" });
    expect(result!.content).toMatch(/^Error: permission .* not given within 300ms/);
  });
});
