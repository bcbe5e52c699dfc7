// §12 MCP servers as tool sources, end to end: a real MCP server (the SDK's), a session over
// StreamableSession with the fake OpenAI model, tools offered as mcp__{server}__{tool} and
// run by roz itself, under the permission rules.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { nextApprovalQuestion, nextOf, readTurn, rq, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { toolMessages } from "../session/chat-body.ts";
import { type SessionFixture, startSessionFixture } from "../session/fixture.ts";

const rules = JSON.stringify([{ tool_pattern: "mcp__trusted__*", policy: "allow" }]);
const offered = (body: any): string[] =>
  (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name).filter((n: string) => n.startsWith("mcp__"));

let fx: SessionFixture;
let mcp: TestMcpServer;

beforeAll(async () => {
  mcp = await startMcpServer();
  fx = await startSessionFixture({ env: { ROZ_MCP_ALLOW_PRIVATE: "1", ROZ_MCP_CALL_TIMEOUT_MS: "1500", ROZ_PERMISSION_RULES: rules } });
  expect((await fx.rest("POST", "/v1/mcp-servers", { name: "trusted", url: mcp.url })).status).toBe(201);
});
afterEach(() => fx.reset());
afterAll(async () => {
  await fx?.close();
  await mcp?.close();
});

describe("MCP tools in a session", () => {
  it("are offered with the server's schema and run by the server, never sent to the client (grpc-js)", async () => {
    const { client, started } = await fx.start("grpc-js");
    fx.fake.plan({ toolCalls: [{ id: "c1", name: "mcp__trusted__echo", arguments: { text: "hi" } }] }, { text: "done" });
    client.send(rq.user("echo hi"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const first = (await fx.request(0)).body as any;
    expect(offered(first)).toEqual(expect.arrayContaining(["mcp__trusted__echo", "mcp__trusted__structured", "mcp__trusted__fail", "mcp__trusted__slow"]));
    const echo = first.tools.find((t: any) => t.function.name === "mcp__trusted__echo");
    expect(echo.function.parameters.properties.text.type).toBe("string");
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(valuesOf(turn, "activityUpdate").some((a) => a.detail === "mcp__trusted__echo")).toBe(true);
    // Every client sees the call's result, as for any tool call.
    expect(valuesOf(turn, "toolFinished").map((f) => [f.toolCallId, f.toolName, f.success, f.result])).toEqual([
      ["c1", "mcp__trusted__echo", true, "echo: hi"],
    ]);
    expect(toolMessages((await fx.request(1)).body).map((m) => m.content)).toEqual(["echo: hi"]);
    expect(mcp.calls.at(-1)).toEqual({ tool: "echo", args: { text: "hi" } });
    // The transcript keeps the call.
    await expect
      .poll(async () => (await fx.rest("GET", `/v1/sessions/${started.sessionId}/messages?format=turns`)).json.turns?.[0]?.tool_calls ?? [])
      .toEqual([expect.objectContaining({ name: "mcp__trusted__echo", parameters: { text: "hi" }, permission: "allowed", success: true, result: "echo: hi" })]);
  });

  it("structured content joins as JSON and isError is a failed result (connect)", async () => {
    const { client } = await fx.start("connect");
    fx.fake.plan(
      {
        toolCalls: [
          { id: "s1", name: "mcp__trusted__structured", arguments: { n: 2 } },
          { id: "f1", name: "mcp__trusted__fail", arguments: {} },
        ],
      },
      { text: "ok" },
    );
    client.send(rq.user("go"));
    await readTurn(client);
    expect(toolMessages((await fx.request(1)).body).map((m) => m.content)).toEqual(['doubled\n{"double":4}', expect.stringContaining("it broke")]);
  });

  it("a tool of a server no rule allows needs approval; approved it runs, denied it does not (grpc-js)", async () => {
    const other = await startMcpServer();
    try {
      expect((await fx.rest("POST", "/v1/mcp-servers", { name: "other", url: other.url })).status).toBe(201);
      const { client } = await fx.start("grpc-js");
      fx.fake.plan({ toolCalls: [{ id: "a1", name: "mcp__other__echo", arguments: { text: "ask" } }] }, { text: "after approval" });
      client.send(rq.user("use other"));
      const question = await nextApprovalQuestion(client);
      expect(question.approval?.toolName).toBe("mcp__other__echo");
      client.send(rq.decision("a1", true));
      await readTurn(client);
      expect(toolMessages((await fx.request(1)).body).map((m) => m.content)).toEqual(["echo: ask"]);
      expect(other.calls).toEqual([{ tool: "echo", args: { text: "ask" } }]);

      fx.fake.plan({ toolCalls: [{ id: "a2", name: "mcp__other__echo", arguments: { text: "no" } }] }, { text: "denied" });
      client.send(rq.user("again"));
      await nextApprovalQuestion(client);
      client.send(rq.decision("a2", false));
      const denied = await readTurn(client);
      expect(valuesOf(denied, "toolDenied").map((d) => d.toolName)).toEqual(["mcp__other__echo"]);
      expect(other.calls).toHaveLength(1);
    } finally {
      await fx.rest("DELETE", "/v1/mcp-servers/other");
      await other.close();
    }
  });

  it("a call longer than ROZ_MCP_CALL_TIMEOUT_MS fails, and the server is told to cancel it (connect)", async () => {
    const { client } = await fx.start("connect");
    fx.fake.plan({ toolCalls: [{ id: "t1", name: "mcp__trusted__slow", arguments: { ms: 10_000, tag: "timeout" } }] }, { text: "gave up" });
    client.send(rq.user("slow"));
    await readTurn(client);
    expect(toolMessages((await fx.request(1)).body).map((m) => m.content)).toEqual([expect.stringMatching(/timed out/i)]);
    await expect.poll(() => mcp.cancelled).toContain("timeout");
    // A timeout counts as a failure; a success clears it again.
    await fx.rest("POST", "/v1/mcp-servers/trusted/health");
  });

  it("cancelling the turn cancels the call at the server (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js");
    fx.fake.plan({ toolCalls: [{ id: "k1", name: "mcp__trusted__slow", arguments: { ms: 1_400, tag: "cancel" } }] });
    client.send(rq.user("slow"));
    await expect.poll(() => mcp.calls.some((c) => (c.args as { tag?: string }).tag === "cancel")).toBe(true);
    client.send(rq.cancelTurn("stop"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("cancelled");
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    await expect.poll(() => mcp.cancelled).toContain("cancel");
  });

  it("a client tool of the same name wins: the client gets the tool_request (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("mcp__trusted__echo")] });
    fx.fake.plan({ toolCalls: [{ id: "w1", name: "mcp__trusted__echo", arguments: { text: "mine" } }] }, { text: "done" });
    const before = mcp.calls.length;
    client.send(rq.user("which"));
    const request = await nextOf(client, "toolRequest");
    expect(request.toolName).toBe("mcp__trusted__echo");
    client.send(rq.toolResult("w1", "from the client"));
    await readTurn(client);
    expect(mcp.calls.length).toBe(before);
    expect(offered((await fx.request(0)).body).filter((n) => n === "mcp__trusted__echo")).toHaveLength(1);
  });

  it("a server registered for one session is offered to that session only (grpc-js)", async () => {
    const own = await startMcpServer();
    try {
      const a = await fx.start("grpc-js");
      const b = await fx.start("grpc-js");
      expect((await fx.rest("POST", "/v1/mcp-servers", { name: "own", url: own.url, session_id: a.started.sessionId })).json).toMatchObject({
        session_id: a.started.sessionId,
      });
      fx.fake.plan({ text: "a" });
      a.client.send(rq.user("a"));
      await readTurn(a.client);
      expect(offered((await fx.request(0)).body)).toContain("mcp__own__echo");
      fx.fake.plan({ text: "b" });
      b.client.send(rq.user("b"));
      await readTurn(b.client);
      expect(offered((await fx.request(1)).body)).not.toContain("mcp__own__echo");
      // It goes with its session.
      a.client.send(rq.cancelSession());
      await a.client.status;
      await expect.poll(async () => (await fx.rest("GET", "/v1/mcp-servers/own")).status).toBe(404);
    } finally {
      await fx.rest("DELETE", "/v1/mcp-servers/own");
      await own.close();
    }
  });

  it("a worker the session spawns is offered the MCP tools and calls them through roz (grpc-js)", async () => {
    const script = (responses: unknown[]) => `script: ${JSON.stringify({ responses })}`;
    /** The session spawns one worker that calls `tool` once, and waits for it. */
    const spawnCalling = (tool: string, text: string) =>
      rq.user(
        script([
          [
            {
              tool_call: {
                name: "spawn_worker",
                arguments: { prompt: script([[{ tool_call: { name: tool, arguments: { text } } }], [{ text: "worker done" }]]) },
              },
            },
          ],
          [{ tool_call: { name: "wait_for_workers", arguments: {} } }],
          [{ text: "all done" }],
        ]),
      );
    // Team tools are opt-in: an environment that turns them on.
    const env = await fx.rest("POST", "/v1/environments", { name: "mcp-teams", teams: { enabled: true } });
    expect(env.status).toBe(201);
    const { client } = await fx.start("grpc-js", { model: "scripted/default", environmentId: env.json.id });
    client.send(spawnCalling("mcp__trusted__echo", "from a worker"));
    const turn = await readTurn(client, 30_000);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    expect(valuesOf(turn, "toolRequest")).toEqual([]);
    expect(mcp.calls).toContainEqual({ tool: "echo", args: { text: "from a worker" } });

    // With no rule for the server, the worker's call asks the session's client first.
    const other = await startMcpServer();
    try {
      expect((await fx.rest("POST", "/v1/mcp-servers", { name: "unruled", url: other.url })).status).toBe(201);
      client.send(spawnCalling("mcp__unruled__echo", "may I"));
      const question = await nextApprovalQuestion(client, 20_000);
      expect(question.approval?.toolName).toBe("mcp__unruled__echo");
      client.send(rq.decision(question.detail, false));
      expect(turnCompleteOf(await readTurn(client, 30_000)).stopReason).toBe("end_turn");
      expect(other.calls).toEqual([]);
    } finally {
      await fx.rest("DELETE", "/v1/mcp-servers/unruled");
      await other.close();
    }
  });

  it("notifications/tools/list_changed refreshes the list for the next model call (connect)", async () => {
    const { client } = await fx.start("connect");
    fx.fake.plan({ text: "one" });
    client.send(rq.user("first"));
    await readTurn(client);
    expect(offered((await fx.request(0)).body)).not.toContain("mcp__trusted__fresh");
    mcp.addTool("fresh", "new answer");
    await expect
      .poll(async () => {
        fx.fake.plan({ text: "again" });
        client.send(rq.user("next"));
        await readTurn(client);
        return offered(fx.requests().at(-1)!.body);
      })
      .toContain("mcp__trusted__fresh");
  });
});

describe("a server that goes down", () => {
  it("is degraded after three failures: its tools leave the list, the session is told, HealthCheck brings it back (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js");
    fx.fake.plan({ text: "warm" });
    client.send(rq.user("warm up"));
    await readTurn(client);
    expect(offered((await fx.request(0)).body)).toContain("mcp__trusted__echo");
    mcp.setDown(true);
    const seen: SessionResponse[] = [];
    for (let i = 0; i < 4 && valuesOf(seen, "mcpServerDegraded").length === 0; i++) {
      fx.fake.plan({ toolCalls: [{ id: `d${i}`, name: "mcp__trusted__echo", arguments: { text: "x" } }] }, { text: "ok" });
      client.send(rq.user(`try ${i}`));
      seen.push(...(await readTurn(client)));
    }
    const [degraded] = valuesOf(seen, "mcpServerDegraded");
    expect(degraded).toMatchObject({ serverName: "trusted" });
    expect(degraded!.failureCount).toBeGreaterThanOrEqual(3);
    const detail = (await fx.rest("GET", "/v1/mcp-servers/trusted")).json;
    expect(detail).toMatchObject({ health_status: "degraded" });
    expect(detail.failure_count).toBeGreaterThanOrEqual(3);
    expect(detail.degraded_at).toEqual(expect.any(String));
    expect(detail.last_error).toEqual(expect.any(String));

    fx.fake.plan({ text: "without it" });
    client.send(rq.user("after"));
    await readTurn(client);
    expect(offered(fx.requests().at(-1)!.body)).toEqual([]);

    mcp.setDown(false);
    const health = await fx.rest("POST", "/v1/mcp-servers/trusted/health");
    expect(health.json).toMatchObject({ name: "trusted", health_status: "healthy", failure_count: 0 });
    fx.fake.plan({ text: "back" });
    client.send(rq.user("back"));
    await readTurn(client);
    expect(offered(fx.requests().at(-1)!.body)).toContain("mcp__trusted__echo");
  });
});
