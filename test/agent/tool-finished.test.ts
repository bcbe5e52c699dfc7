import { describe, expect, it } from "vitest";
import { defaultAgentLimits, type ServerTool } from "../../src/agent/index.ts";
import { cutUtf8 } from "../../src/agent/tool-echo.ts";
import { call, reply, TestModel, toolCalls } from "./support/test-model.ts";
import { makeAgent, start, tool, turn } from "./support/harness.ts";

const ok = (result: string) => ({ success: true, result, truncated: false });

describe("tool_finished", () => {
  it("follows every answered call with its result, failures included", async () => {
    const model = new TestModel([toolCalls(call("a", "t"), call("b", "t")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("t")] });
    const run = start(agent, turn("go"));
    await run.toolRequest();
    agent.submitToolResult("a", ok("first"));
    await run.toolRequest(1);
    agent.submitToolResult("b", { success: false, result: "boom", truncated: false, exitCode: 2 });
    await run.done;
    expect(run.of("tool_finished")).toEqual([
      { type: "tool_finished", toolCallId: "a", toolName: "t", success: true, result: "first", truncated: false },
      { type: "tool_finished", toolCallId: "b", toolName: "t", success: false, result: "boom", truncated: false },
    ]);
  });

  it("reports a timeout and a cancel after the request went out as failures with the reason", async () => {
    const model = new TestModel([toolCalls(call("slow", "t")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("t", { timeoutMs: 50 })] });
    const timedOut = start(agent, turn("go"));
    await timedOut.done;
    expect(timedOut.of("tool_finished")).toEqual([
      { type: "tool_finished", toolCallId: "slow", toolName: "t", success: false, result: "tool timeout after 50ms", truncated: false },
    ]);

    const cancelModel = new TestModel([toolCalls(call("c", "t"))]);
    const cancelAgent = makeAgent(cancelModel, { tools: [tool("t")] });
    const cancelled = start(cancelAgent, turn("go"));
    await cancelled.toolRequest();
    cancelAgent.cancelTurn("stop");
    await cancelled.done;
    expect(cancelled.of("tool_finished")).toMatchObject([{ toolCallId: "c", success: false, result: "cancelled" }]);
  });

  it("gives a refused call a tool_denied and no tool_finished", async () => {
    const model = new TestModel([toolCalls(call("x", "nope")), reply("ok")]);
    const run = start(makeAgent(model, { tools: [tool("t")] }), turn("go"));
    await run.done;
    expect(run.of("tool_denied").map((d) => d.toolCallId)).toEqual(["x"]);
    expect(run.of("tool_finished")).toEqual([]);
  });

  it("echoes a server tool's result too", async () => {
    const server: ServerTool = {
      name: "srv",
      description: "server tool",
      parametersSchema: { type: "object", properties: {} },
      run: async () => ok("from the server"),
    };
    const model = new TestModel([toolCalls(call("s", "srv")), reply("ok")]);
    const run = start(makeAgent(model, { serverTools: [server] }), turn("go"));
    await run.done;
    expect(run.of("tool_finished")).toEqual([
      { type: "tool_finished", toolCallId: "s", toolName: "srv", success: true, result: "from the server", truncated: false },
    ]);
  });

  it("cuts the echo to toolResultEchoBytes while the model and the record get the whole result", async () => {
    const model = new TestModel([toolCalls(call("big", "t")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("t")], limits: { ...defaultAgentLimits, toolResultEchoBytes: 10 } });
    const run = start(agent, turn("go"));
    await run.toolRequest();
    agent.submitToolResult("big", ok("0123456789abcdef"));
    const done = await run.done;
    expect(run.of("tool_finished")).toMatchObject([{ result: "0123456789", truncated: true }]);
    expect(done.record.toolCalls[0]!.outcome!.result).toBe("0123456789abcdef");
  });
});

describe("cutUtf8", () => {
  it("keeps text that fits and never cuts inside a character", () => {
    expect(cutUtf8("héllo", 6)).toEqual({ text: "héllo", truncated: false });
    expect(cutUtf8("héllo", 2)).toEqual({ text: "h", truncated: true });
    expect(cutUtf8("a😀b", 4)).toEqual({ text: "a", truncated: true });
    expect(cutUtf8("a😀b", 5)).toEqual({ text: "a😀", truncated: true });
    expect(cutUtf8("€€€", 8)).toEqual({ text: "€€", truncated: true });
    expect(cutUtf8("anything", 0)).toEqual({ text: "", truncated: true });
    expect(cutUtf8("", 0)).toEqual({ text: "", truncated: false });
    const big = "é".repeat(30_000);
    const cut = cutUtf8(big, 16_384);
    expect(cut.truncated).toBe(true);
    expect(Buffer.byteLength(cut.text)).toBe(16_384);
  });
});
