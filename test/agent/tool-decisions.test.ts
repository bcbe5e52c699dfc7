// The agent layer alone (no sockets): rule categories, the approval question, tool_denied
// events, and provider-safe tool names at the model call.
import { describe, expect, it } from "vitest";
import { PROVIDER_TOOL_NAME } from "../../src/models/index.ts";
import { call, reply, TestModel, toolCalls } from "./support/test-model.ts";
import { makeAgent, start, tool, turn } from "./support/harness.ts";

const physicalAsks = [{ toolPattern: "*", policy: "require_confirmation" as const, category: "physical", reason: "hardware" }];

describe("tool decisions", () => {
  it("a rule for physical tools matches tools without a category, not PURE ones", async () => {
    const model = new TestModel([toolCalls(call("p", "look"), call("u", "move", { x: 1 })), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("look", { category: "pure" }), tool("move")], permissions: physicalAsks });
    const run = start(agent, turn("go"));
    const ask = await run.waitFor((e) => e.type === "activity" && e.state === "waiting_approval");
    expect(ask).toMatchObject({ detail: "u", approval: { toolCallId: "u", toolName: "move", parameters: { x: 1 }, reason: "hardware" } });
    agent.decidePermission("u", false);
    await run.toolRequest();
    agent.submitToolResult("p", { success: true, result: "seen", truncated: false });
    const done = await run.done;
    expect(run.of("activity").filter((a) => a.state === "waiting_approval")).toHaveLength(1);
    expect(run.of("tool_denied")).toEqual([
      { type: "tool_denied", toolCallId: "u", toolName: "move", reason: "approval_denied", detail: 'the user denied permission to run tool "move"' },
    ]);
    expect(done.record.toolCalls.map((c) => c.permission)).toEqual(["allowed", "denied"]);
  });

  it("tool_denied for policy, unknown tool and invalid arguments carries what the model was told", async () => {
    const model = new TestModel([
      toolCalls(call("d", "rm"), call("g", "ghost"), { type: "tool_call", id: "b", name: "read", arguments: {}, invalidArguments: "{oops" }),
      reply("ok"),
    ]);
    const agent = makeAgent(model, { tools: [tool("rm"), tool("read")], permissions: [{ toolPattern: "rm", policy: "deny" }] });
    const run = start(agent, turn("go"));
    await run.done;
    const denied = run.of("tool_denied");
    expect(denied.map((d) => [d.toolCallId, d.reason])).toEqual([
      ["d", "policy"],
      ["g", "unknown_tool"],
      ["b", "invalid_arguments"],
    ]);
    const told = model.requests[1]!.messages.at(-1)!.parts.map((p) => (p.type === "tool_result" ? p.content : ""));
    expect(denied.map((d) => d.detail)).toEqual(told);
  });

  it("the model sees provider-safe tool names; the client's names come back on requests and in history", async () => {
    // The script answers with whatever name the model was offered for the dotted tool.
    const safeCall = (request: { tools: { name: string }[] }) =>
      toolCalls(call("c1", request.tools.find((t) => t.name.startsWith("github_create_issue_"))!.name, { title: "t" }));
    const model = new TestModel([safeCall, reply("done")]);
    const agent = makeAgent(model, { tools: [tool("github.create_issue"), tool("plain")] });
    const run = start(agent, turn("open it"));
    const request = await run.toolRequest();
    expect(request).toMatchObject({ toolCallId: "c1", toolName: "github.create_issue", parameters: { title: "t" } });
    agent.submitToolResult("c1", { success: true, result: "#7", truncated: false });
    const done = await run.done;
    for (const t of model.requests[0]!.tools) expect(t.name).toMatch(PROVIDER_TOOL_NAME);
    expect(model.requests[0]!.tools.map((t) => t.name)).toContain("plain");
    const sentUse = model.requests[1]!.messages.flatMap((m) => m.parts).find((p) => p.type === "tool_use");
    expect(sentUse).toMatchObject({ name: expect.stringMatching(/^github_create_issue_[0-9a-f]{8}$/) });
    expect(done.record.toolCalls[0]!.name).toBe("github.create_issue");
    const kept = agent
      .history()
      .flatMap((m) => m.parts)
      .find((p) => p.type === "tool_use");
    expect(kept).toMatchObject({ name: "github.create_issue" });
  });
});
