import { describe, expect, it } from "vitest";
import type { ModelMessage } from "../../src/models/index.ts";
import { call, reply, TestModel, toolCalls } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });
const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);

describe("system prompt and user message", () => {
  it("assembles base, environment instructions, project context and system context in order", async () => {
    const model = new TestModel([reply("a"), reply("b"), reply("c"), reply("d")]);
    const agent = makeAgent(model, { instructions: "Be terse.", projectContext: ["README: roz", "", "LICENSE: Apache"] });
    agent.registerTools(undefined, [], "pending context");
    await start(agent, turn("one", { systemContext: "own context" })).done;
    await start(agent, turn("two")).done;
    await start(agent, turn("three")).done;
    const [first, second, third] = model.requests;
    expect(first!.system.slice(1)).toEqual(["Be terse.", "README: roz", "LICENSE: Apache", "own context"]);
    expect(first!.system[0]).toMatch(/agent/);
    // The pending context was not consumed by the turn that had its own.
    expect(second!.system.at(-1)).toBe("pending context");
    expect(third!.system.at(-1)).toBe("LICENSE: Apache");
  });

  it("renders context blocks, passes images as image parts when the model takes them", async () => {
    const model = new TestModel([reply("seen")]);
    const agent = makeAgent(model, { supportsImages: true });
    await start(
      agent,
      turn("what is this?", {
        context: [
          { label: "file.ts", text: "const x = 1;" },
          { text: "plain" },
          { label: "screenshot", mimeType: "image/png", data: png },
          { label: "doc", mimeType: "application/pdf", data: png },
        ],
      }),
    ).done;
    expect(model.requests[0]!.messages[0]).toEqual({
      role: "user",
      parts: [
        { type: "text", text: "what is this?" },
        { type: "text", text: "[file.ts] const x = 1;" },
        { type: "text", text: "plain" },
        { type: "text", text: "[screenshot]" },
        { type: "image", mediaType: "image/png", data: png },
        { type: "text", text: "[doc] (application/pdf, 8 bytes)" },
      ],
    });
  });

  it("gives a placeholder instead of an image to a model without image support", async () => {
    const model = new TestModel([reply("ok")]);
    const agent = makeAgent(model, { supportsImages: false });
    await start(agent, turn("look", { context: [{ label: "cam", mimeType: "image/png", data: png }] })).done;
    expect(model.requests[0]!.messages[0]!.parts).toEqual([
      { type: "text", text: "look" },
      { type: "text", text: "[cam] (image/png, 8 bytes)" },
    ]);
  });

  it("restores history as-is and continues it", async () => {
    const history: ModelMessage[] = [
      { role: "user", parts: [{ type: "text", text: "earlier" }] },
      { role: "assistant", parts: [{ type: "tool_use", id: "old1", name: "t", input: { a: 1 } }] },
      { role: "user", parts: [{ type: "tool_result", toolUseId: "old1", name: "t", content: "r", isError: false }] },
      { role: "assistant", parts: [{ type: "text", text: "earlier answer" }] },
    ];
    const model = new TestModel([toolCalls(call("old1", "t")), reply("now")]);
    const agent = makeAgent(model, { history, tools: [tool("t")] });
    expect(agent.history()).toEqual(history);
    expect(agent.contextTokens()).toBeGreaterThan(0);
    const run = start(agent, turn("now"));
    // The provider reused an id of the restored history: it is made unique.
    const req = await run.toolRequest();
    expect(req.toolCallId).not.toBe("old1");
    agent.submitToolResult(req.toolCallId, ok("x"));
    await run.done;
    expect(model.requests[0]!.messages.slice(0, 4)).toEqual(history);
    expectValidHistory(agent.history());
    expect(agent.history()).toHaveLength(8);
  });
});

describe("OODA-ReAct", () => {
  it("observes before every decision with the observation tools, called with {}", async () => {
    const model = new TestModel([toolCalls(call("act1", "move", { dx: 1 })), reply("arrived")]);
    const tools = [tool("observe_position", { category: "pure" }), tool("camera__observe", { category: "pure" }), tool("move")];
    const agent = makeAgent(model, { tools });
    const run = start(agent, turn("go to the door", { mode: "ooda_re_act" }));

    const o1 = await run.toolRequest(0);
    const o2 = await run.toolRequest(1);
    expect([o1.toolName, o2.toolName]).toEqual(["observe_position", "camera__observe"]);
    expect(o1.parameters).toEqual({});
    expect(model.calls).toBe(0); // nothing decided before observing
    agent.submitToolResult(o1.toolCallId, ok("x=0"));
    agent.submitToolResult(o2.toolCallId, ok("door ahead"));

    const act = await run.toolRequest(2);
    expect(act.toolCallId).toBe("act1");
    // The decision saw the observations last.
    const decided = model.requests[0]!;
    expect(decided.messages.at(-1)!.parts.map((p) => (p.type === "tool_result" ? p.content : ""))).toEqual(["x=0", "door ahead"]);
    expect(decided.system[0]).toMatch(/Observe-Orient-Decide-Act/);
    agent.submitToolResult("act1", ok("moved"));

    // Second cycle: observe again, then decide.
    const o3 = await run.toolRequest(3);
    expect(o3.toolName).toBe("observe_position");
    agent.submitToolResult(o3.toolCallId, ok("x=1"));
    const o4 = await run.toolRequest(4);
    agent.submitToolResult(o4.toolCallId, ok("at the door"));
    const done = await run.done;
    expect(done.stopReason).toBe("end_turn");
    expect(model.requests[1]!.messages.at(-1)!.parts.map((p) => (p.type === "tool_result" ? p.content : ""))).toEqual(["x=1", "at the door"]);
    expect(done.record.toolCalls.map((c) => c.name)).toEqual(["observe_position", "camera__observe", "move", "observe_position", "camera__observe"]);
    expectValidHistory(agent.history());
  });

  it("react mode uses the plain instructions and never observes on its own", async () => {
    const model = new TestModel([reply("hi")]);
    const agent = makeAgent(model, { tools: [tool("observe_position")] });
    const run = start(agent, turn("hi"));
    await run.done;
    expect(run.of("tool_request")).toHaveLength(0);
    expect(model.requests[0]!.system[0]).not.toMatch(/Observe-Orient/);
  });
});
