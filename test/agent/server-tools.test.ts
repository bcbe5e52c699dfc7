import { describe, expect, it } from "vitest";
import type { ServerTool } from "../../src/agent/index.ts";
import { call, finish, TestModel, text } from "./support/test-model.ts";
import { makeAgent, start, tool, turn } from "./support/harness.ts";

/** A server tool that records its calls and answers `answer`. */
function serverTool(name: string, answer = "done"): ServerTool & { calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    name,
    description: `${name} (server)`,
    parametersSchema: { type: "object", properties: {} },
    calls,
    async run(parameters) {
      calls.push(parameters);
      return { success: true, result: answer, truncated: false };
    },
  };
}

describe("server tools", () => {
  it("are offered with the client tools, run on the server (no tool_request), show calling_tool, and their result reaches the model", async () => {
    const spawn = serverTool("spawn_worker", '{"worker_id":"w1"}');
    const model = new TestModel([
      [call("c1", "spawn_worker", { prompt: "go" }), finish("tool_use")],
      [text("spawned"), finish("end_turn")],
    ]);
    const agent = makeAgent(model, { tools: [tool("read_file")], serverTools: [spawn] });
    const run = start(agent, turn("spawn one"));
    const done = await run.done;
    expect(done.stopReason).toBe("end_turn");
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(["read_file", "spawn_worker"]);
    expect(spawn.calls).toEqual([{ prompt: "go" }]);
    expect(run.of("tool_request")).toEqual([]);
    expect(run.of("activity").map((a) => [a.state, a.detail])).toContainEqual(["calling_tool", "spawn_worker"]);
    expect(model.requests[1]!.messages.at(-1)!.parts).toEqual([
      { type: "tool_result", toolUseId: "c1", name: "spawn_worker", content: '{"worker_id":"w1"}', isError: false },
    ]);
    expect(agent.clientTools().map((t) => t.name)).toEqual(["read_file"]);
  });

  it("a server tool the environment's rules deny is not offered", async () => {
    const model = new TestModel([[text("ok"), finish("end_turn")]]);
    const agent = makeAgent(model, {
      serverTools: [serverTool("spawn_worker"), serverTool("wait_for_workers")],
      permissions: [{ toolPattern: "spawn_worker", policy: "deny" }],
    });
    await start(agent, turn("hi")).done;
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(["wait_for_workers"]);
  });

  it("a throwing server tool is a failed result for the model, and the turn goes on", async () => {
    const broken: ServerTool = { ...serverTool("spawn_worker"), run: async () => Promise.reject(new Error("no room")) };
    const model = new TestModel([
      [call("c1", "spawn_worker", {}), finish("tool_use")],
      [text("ok"), finish("end_turn")],
    ]);
    const agent = makeAgent(model, { serverTools: [broken] });
    expect((await start(agent, turn("go")).done).stopReason).toBe("end_turn");
    expect(model.requests[1]!.messages.at(-1)!.parts[0]).toMatchObject({ type: "tool_result", content: "no room", isError: true });
  });
});
