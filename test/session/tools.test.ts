// §3 Tools, end to end: client tools requested over StreamSession, results back to the
// model (as the fake provider sees them in its next request body).
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type WireResponse } from "../support/grpc-js-client.ts";
import type { ClientKind } from "../support/session-client.ts";
import { barrier, caseOf, nextOf, readTurn, rq, show, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { clientToolsOf, messagesOf, systemOf, toolMessages, toolNames } from "./chat-body.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  // A small result budget for the model, so that truncation is cheap to provoke.
  fx = await startSessionFixture({ env: { ROZ_TOOL_RESULT_MAX_TOKENS: "200" } });
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

describe.each<ClientKind>(["grpc-js", "connect"])("tool round trip (%s)", (kind) => {
  it("ToolRequest → ToolResult → the model reads the result in its next request", async () => {
    const { client } = await fx.start(kind, { tools: [tool("read_file", { parameters: { type: "object", properties: { path: { type: "string" } } } })] });
    fx.fake.plan(
      { text: "Let me look.", toolCalls: [{ id: "call_rt_1", name: "read_file", arguments: { path: "a.txt" } }], usage: { input: 20, output: 5 } },
      { text: "It says hello.", usage: { input: 30, output: 6, cached: 4 } },
    );
    client.send(rq.user("What is in a.txt?"));

    const before: string[] = [];
    let request;
    for (;;) {
      const r = await client.next(10_000);
      if (caseOf(r) === "toolRequest") {
        request = r.response.value as { toolCallId: string; toolName: string; parameters?: unknown; timeoutMs: number };
        break;
      }
      before.push(show(r));
      expect(caseOf(r), show(r)).not.toBe("turnComplete");
    }
    // The provider's id, the arguments as sent, the default timeout (the schema gave none).
    expect(request).toMatchObject({ toolCallId: "call_rt_1", toolName: "read_file", parameters: { path: "a.txt" }, timeoutMs: 120_000 });
    // §2 ordering: the deltas that preceded the call come before its request.
    expect(before.filter((l) => l.includes("textDelta")).length).toBeGreaterThan(0);

    client.send(rq.toolResult("call_rt_1", "hello from a.txt"));
    const turn = await readTurn(client);
    expect(textOf(turn)).toBe("It says hello.");
    const done = turnCompleteOf(turn);
    expect(done.stopReason).toBe("end_turn");
    // Usage of both model calls, cache tokens included.
    expect(done.usage).toMatchObject({ inputTokens: 50, outputTokens: 11, cacheReadTokens: 4 });

    const [first, second] = [await fx.request(0), await fx.request(1)];
    expect(toolNames(first.body)).toEqual(["read_file"]);
    const assistant = messagesOf(second.body).find((m) => m.role === "assistant" && m.tool_calls);
    expect(assistant?.tool_calls?.[0]).toMatchObject({ id: "call_rt_1", function: { name: "read_file" } });
    expect(JSON.parse(assistant!.tool_calls![0]!.function.arguments)).toEqual({ path: "a.txt" });
    expect(toolMessages(second.body)).toEqual([{ role: "tool", tool_call_id: "call_rt_1", content: "hello from a.txt" }]);
    expect(fx.requests()).toHaveLength(2);
  });
});

/** A google.protobuf.Struct as @grpc/proto-loader decodes it, back to JSON. */
function fromProtoLoaderStruct(struct: { fields?: Record<string, any> } | null | undefined): Record<string, unknown> {
  const value = (v: any): unknown => {
    switch (v.kind) {
      case "stringValue":
      case "numberValue":
      case "boolValue":
        return v[v.kind];
      case "nullValue":
        return null;
      case "structValue":
        return fromProtoLoaderStruct(v.structValue);
      case "listValue":
        return (v.listValue.values ?? []).map(value);
      default:
        throw new Error(`unexpected Value ${JSON.stringify(v)}`);
    }
  };
  return Object.fromEntries(Object.entries(struct?.fields ?? {}).map(([k, v]) => [k, value(v)]));
}

it("tool round trip with @grpc/proto-loader messages (another protobuf implementation)", async () => {
  const client = createGrpcJsClient(fx.server.url);
  const call = client.openSession();
  try {
    call.send(req.start({ tools: [{ name: "read_file", description: "reads a file", timeout_ms: 5000 }] }));
    expect((await call.next()).response).toBe("session_started");
    fx.fake.plan({ toolCalls: [{ id: "call_pl_1", name: "read_file", arguments: { path: "b.txt", lines: 3, all: false } }] }, { text: "Done." });
    call.send(req.userMessage("read b.txt", { message_id: "pl-1" }));
    const request = await call.responses.nextMatching((r) => r.response === "tool_request", 10_000);
    const body = request["tool_request"] as { tool_call_id: string; tool_name: string; parameters: { fields: object }; timeout_ms: number };
    expect(body).toMatchObject({ tool_call_id: "call_pl_1", tool_name: "read_file", timeout_ms: 5000 });
    expect(fromProtoLoaderStruct(body.parameters)).toEqual({ path: "b.txt", lines: 3, all: false });
    call.send(req.toolResult("call_pl_1", "three lines"));
    const done = await call.responses.nextMatching((r: WireResponse) => r.response === "turn_complete", 10_000);
    expect(done["turn_complete"]).toMatchObject({ message_id: "pl-1", stop_reason: "end_turn" });
    expect(toolMessages((await fx.request(1)).body)).toEqual([{ role: "tool", tool_call_id: "call_pl_1", content: "three lines" }]);
    call.send(req.cancelSession());
    await call.status;
  } finally {
    call.cancel();
    client.close();
  }
});

it("PURE tools of one response are requested concurrently; results go back in call order (connect)", async () => {
  const pure = ["probe_a", "probe_b", "probe_c"];
  const { client } = await fx.start("connect", { tools: pure.map((n) => tool(n, { pure: true })) });
  fx.fake.plan({ toolCalls: pure.map((name, i) => ({ id: `call_p${i}`, name, arguments: { n: i } })), interleaveToolCalls: true }, { text: "All probed." });
  client.send(rq.user("probe everything"));
  // All three requests arrive before any result is sent: they run concurrently.
  const requests = [await nextOf(client, "toolRequest"), await nextOf(client, "toolRequest"), await nextOf(client, "toolRequest")];
  expect(requests.map((r) => r.toolCallId)).toEqual(["call_p0", "call_p1", "call_p2"]);
  // Answered in reverse order: the model still gets them in call order.
  for (const r of [...requests].reverse()) client.send(rq.toolResult(r.toolCallId, `result of ${r.toolName}`));
  const turn = await readTurn(client);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  expect(toolMessages((await fx.request(1)).body)).toEqual(pure.map((name, i) => ({ role: "tool", tool_call_id: `call_p${i}`, content: `result of ${name}` })));
});

it("non-PURE tools of one response are requested one at a time, in call order (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js", { tools: [tool("step_one"), tool("step_two")] });
  fx.fake.plan(
    {
      toolCalls: [
        { id: "call_s1", name: "step_one", arguments: {} },
        { id: "call_s2", name: "step_two", arguments: {} },
      ],
    },
    { text: "Both done." },
  );
  client.send(rq.user("do both steps"));
  expect((await nextOf(client, "toolRequest")).toolCallId).toBe("call_s1");
  // Nothing else is requested while the first call is open.
  expect(valuesOf(await barrier(client), "toolRequest")).toEqual([]);
  client.send(rq.toolResult("call_s1", "one"));
  expect((await nextOf(client, "toolRequest")).toolCallId).toBe("call_s2");
  client.send(rq.toolResult("call_s2", "two"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  expect(toolMessages((await fx.request(1)).body).map((m) => m.content)).toEqual(["one", "two"]);
});

it("a tool that does not answer times out: the model gets `tool timeout after <N>ms` and the turn goes on (connect)", async () => {
  const { client } = await fx.start("connect", { tools: [tool("slow_tool", { timeoutMs: 300 }), tool("next_tool")] });
  fx.fake.plan(
    {
      toolCalls: [
        { id: "call_slow", name: "slow_tool", arguments: {} },
        { id: "call_next", name: "next_tool", arguments: {} },
      ],
    },
    { text: "It timed out, moving on." },
  );
  client.send(rq.user("run the slow tool, then the next"));
  expect(await nextOf(client, "toolRequest")).toMatchObject({ toolCallId: "call_slow", timeoutMs: 300 });
  // Not answered: after its timeout the next call is requested, the turn goes on.
  expect(await nextOf(client, "toolRequest")).toMatchObject({ toolCallId: "call_next", timeoutMs: 120_000 });
  // A result for the timed-out call is now unknown (non-fatal).
  client.send(rq.toolResult("call_slow", "too late"));
  expect(await nextOf(client, "error")).toMatchObject({ code: "unknown_tool_call", retryable: false });
  client.send(rq.toolResult("call_next", "next done"));
  const turn = await readTurn(client);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  expect(textOf(turn)).toBe("It timed out, moving on.");
  expect(toolMessages((await fx.request(1)).body)).toEqual([
    { role: "tool", tool_call_id: "call_slow", content: "Error: tool timeout after 300ms" },
    { role: "tool", tool_call_id: "call_next", content: "next done" },
  ]);
});

it("a result for an unknown or already answered id gets SessionError{unknown_tool_call}; the turn goes on (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js", { tools: [tool("lookup")] });
  // The model answers slowly, so that the duplicate below surely arrives while the turn runs.
  fx.fake.plan({ toolCalls: [{ id: "call_known", name: "lookup", arguments: {} }] }, { text: "Found it.", headersDelayMs: 300 });
  client.send(rq.user("look it up"));
  await nextOf(client, "toolRequest");
  client.send(rq.toolResult("call_nobody_made", "?"));
  const error = await nextOf(client, "error");
  expect(error).toMatchObject({ code: "unknown_tool_call", retryable: false });
  expect(error.message).toContain("call_nobody_made");
  client.send(rq.toolResult("call_known", "the answer"));
  client.send(rq.toolResult("call_known", "the answer, again"));
  const turn = await readTurn(client);
  const rest = [...turn, ...(await barrier(client))];
  // The duplicate is reported, never fatal.
  expect(valuesOf(rest, "error").map((e) => e.code)).toEqual(["unknown_tool_call"]);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  expect(toolMessages((await fx.request(1)).body).map((m) => m.content)).toEqual(["the answer"]);
});

it("tool_result and permission_decision with no turn running get no_active_turn (connect)", async () => {
  const { client } = await fx.start("connect");
  client.send(rq.toolResult("call_x", "result"));
  expect(await nextOf(client, "error")).toMatchObject({ code: "no_active_turn", retryable: false });
  client.send(rq.decision("call_x", true));
  expect(await nextOf(client, "error")).toMatchObject({ code: "no_active_turn", retryable: false });
  // Non-fatal: the session still runs turns.
  fx.fake.plan({ text: "still here" });
  client.send(rq.user("hello?"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
});

it("a call to an unknown tool sends no request; the model gets an error result (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js", { tools: [tool("known_tool")] });
  fx.fake.plan({ toolCalls: [{ id: "call_ghost", name: "ghost_tool", arguments: {} }] }, { text: "That tool does not exist." });
  client.send(rq.user("use the ghost tool"));
  const turn = await readTurn(client);
  expect(valuesOf(turn, "toolRequest")).toEqual([]);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  const [result] = toolMessages((await fx.request(1)).body);
  expect(result).toMatchObject({ tool_call_id: "call_ghost" });
  expect(String(result!.content)).toMatch(/^Error: unknown tool "ghost_tool"/);
});

it("register_tools with a source replaces {source}__* tools; without one it adds or replaces by name (connect)", async () => {
  const { client } = await fx.start("connect", { tools: [tool("cam__snap"), tool("cam__zoom"), tool("shell")] });
  const toolsOfNextTurn = async (): Promise<{ names: string[]; descriptions: string[] }> => {
    fx.fake.plan({ text: "ok" });
    client.send(rq.user("which tools?"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    const body = fx.requests().at(-1)!.body;
    return { names: toolNames(body), descriptions: clientToolsOf(body).map((t) => t.function.description) };
  };
  expect((await toolsOfNextTurn()).names).toEqual(["cam__snap", "cam__zoom", "shell"]);

  client.send(rq.register([tool("cam__pan")], "cam"));
  expect((await toolsOfNextTurn()).names).toEqual(["shell", "cam__pan"]);

  // Without a source: added, and a tool of the same name replaces the old one (no duplicate).
  client.send(rq.register([{ ...tool("shell"), description: "a better shell" }, tool("editor")]));
  const merged = await toolsOfNextTurn();
  expect(merged.names).toEqual(["shell", "cam__pan", "editor"]);
  expect(merged.descriptions[0]).toBe("a better shell");

  // An empty list unregisters the source.
  client.send(rq.register([], "cam"));
  expect((await toolsOfNextTurn()).names).toEqual(["shell", "editor"]);
});

describe("ai_mode ooda_re_act", () => {
  it.each(["ooda_re_act", "ooda"])("requests the observe_* tool before the model is called (%s, grpc-js)", async (aiMode) => {
    const { client } = await fx.start("grpc-js", { tools: [tool("observe_camera", { pure: true }), tool("move_arm")] });
    fx.fake.plan({ text: "The arm is clear." });
    client.send(rq.user("is the arm clear?", { aiMode }));
    const observation = await nextOf(client, "toolRequest");
    expect(observation).toMatchObject({ toolName: "observe_camera", parameters: {} });
    // The model has not been called yet: it decides on fresh observations.
    await barrier(client);
    expect(fx.requests()).toHaveLength(0);
    client.send(rq.toolResult(observation.toolCallId, "camera: arm clear"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const body = (await fx.request(0)).body;
    const call = messagesOf(body).find((m) => m.role === "assistant" && m.tool_calls);
    expect(call?.tool_calls?.map((c) => c.function.name)).toEqual(["observe_camera"]);
    expect(toolMessages(body)).toEqual([{ role: "tool", tool_call_id: observation.toolCallId, content: "camera: arm clear" }]);
    expect(toolNames(body)).toEqual(["observe_camera", "move_arm"]);
  });

  it("observes again before each further decision (connect)", async () => {
    const { client } = await fx.start("connect", { tools: [tool("observe_camera", { pure: true }), tool("move_arm")] });
    fx.fake.plan({ toolCalls: [{ id: "call_move", name: "move_arm", arguments: { x: 1 } }] }, { text: "Moved and checked." });
    client.send(rq.user("move the arm", { aiMode: "ooda_re_act" }));
    const order: string[] = [];
    const answer = async () => {
      const r = await nextOf(client, "toolRequest");
      order.push(`${r.toolName}@${fx.requests().length}`);
      client.send(rq.toolResult(r.toolCallId, r.toolName === "observe_camera" ? `frame ${order.length}` : "moved"));
    };
    await answer(); // observe, before the first model call
    await answer(); // the model's move
    await answer(); // observe again, before the second model call
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    // tool@n: the tool was requested after n model requests.
    expect(order).toEqual(["observe_camera@0", "move_arm@1", "observe_camera@1"]);
    const second = (await fx.request(1)).body;
    expect(toolMessages(second).map((m) => m.content)).toEqual(["frame 1", "moved", "frame 3"]);
  });
});

it("user_message.tools replace the session tools for that turn only (grpc-js)", async () => {
  const { client } = await fx.start("grpc-js", { tools: [tool("session_tool")] });
  fx.fake.plan({ text: "one" }, { text: "two" });
  client.send(rq.user("with my own tools", { tools: [tool("turn_only_a"), tool("turn_only_b")] }));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  client.send(rq.user("with the session tools"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  expect(toolNames((await fx.request(0)).body)).toEqual(["turn_only_a", "turn_only_b"]);
  expect(toolNames((await fx.request(1)).body)).toEqual(["session_tool"]);
});

it("system_context: a user_message's own wins; the pending one from register_tools is used by the next turn without one (connect)", async () => {
  const { client } = await fx.start("connect");
  const turn = async (extra: Parameters<typeof rq.user>[1]) => {
    fx.fake.plan({ text: "ok" });
    client.send(rq.user("hi", extra));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    return systemOf(fx.requests().at(-1)!.body);
  };
  client.send(rq.register([], undefined, "PENDING-CONTEXT"));
  const first = await turn({ systemContext: "OWN-CONTEXT" });
  expect(first).toContain("OWN-CONTEXT");
  expect(first).not.toContain("PENDING-CONTEXT");
  // Not consumed by a turn that had its own: the next turn without one uses it...
  expect(await turn({})).toContain("PENDING-CONTEXT");
  // ... and consumes it.
  expect(await turn({})).not.toContain("PENDING-CONTEXT");
});

it("a result longer than the model budget is cut head+tail with a marker; the stored transcript keeps it whole (connect)", async () => {
  const { client, started } = await fx.start("connect", { tools: [tool("cat")] });
  fx.fake.plan({ toolCalls: [{ id: "call_cat", name: "cat", arguments: {} }] }, { text: "That was long." });
  client.send(rq.user("cat the big file", { messageId: "big" }));
  await nextOf(client, "toolRequest");
  const big = Array.from({ length: 600 }, (_, i) => `line${i}`).join(" ");
  expect(countTokens(big)).toBeGreaterThan(1000);
  client.send(rq.toolResult("call_cat", big));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");

  const [shown] = toolMessages((await fx.request(1)).body);
  const text = String(shown!.content);
  expect(text.startsWith("line0 line1 ")).toBe(true);
  expect(text.endsWith("line598 line599")).toBe(true);
  expect(text).toMatch(/\[… \d+ characters truncated …\]/);
  expect(countTokens(text)).toBeLessThan(260); // the 200-token budget plus the marker

  const stored = await fetch(`${fx.server.url}/v1/sessions/${started.sessionId}/messages?format=turns`);
  expect(stored.status).toBe(200);
  const turns = (await stored.json()).turns as { message_id: string; tool_calls: { id: string; result?: string }[] }[];
  expect(turns.find((t) => t.message_id === "big")?.tool_calls[0]).toMatchObject({ id: "call_cat", result: big });
});
