// session-behaviour.md §3: ToolRequest{tool_call_id, tool_name, parameters, timeout_ms} to the letter.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import type { ClientKind } from "../support/session-client.ts";
import { nextOf, readTurn, rq, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { script, startWorld, type World } from "./support.ts";

let world: World;
beforeAll(async () => {
  world = await startWorld();
});
afterEach(() => world.reset());
afterAll(() => world?.close());

const call = (name: string, id?: string): unknown => ({ tool_call: { name, arguments: { n: 1 }, ...(id !== undefined ? { id } : {}) } });

it.each<ClientKind>(["grpc-js", "connect"])("timeout_ms is the tool's ToolSchema.timeout_ms, else 120000 (%s)", async (kind) => {
  const { client } = await world.start(kind, { tools: [tool("own", { timeoutMs: 4321 }), tool("plain")] });
  client.send(rq.user(script([[call("own")], [call("plain")], [{ text: "done" }]])));
  const own = await nextOf(client, "toolRequest");
  expect(own).toMatchObject({ toolName: "own", timeoutMs: 4321, parameters: { n: 1 } });
  client.send(rq.toolResult(own.toolCallId, "ok"));
  const plain = await nextOf(client, "toolRequest");
  expect(plain).toMatchObject({ toolName: "plain", timeoutMs: 120_000 });
  client.send(rq.toolResult(plain.toolCallId, "ok"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
});

it.each<ClientKind>(["grpc-js", "connect"])("tool_call_id is unique within the session, the provider's id where it is fresh (%s)", async (kind) => {
  const { client } = await world.start(kind, { tools: [tool("a", { pure: true })] });
  const ids: string[] = [];
  for (let turn = 0; turn < 2; turn++) {
    // The provider repeats its ids within a response and across turns, and sometimes gives none.
    client.send(rq.user(script([[call("a", "call_1"), call("a", "call_1"), call("a")], [{ text: "done" }]])));
    const requests = [];
    for (let i = 0; i < 3; i++) requests.push(await nextOf(client, "toolRequest"));
    for (const r of requests) client.send(rq.toolResult(r.toolCallId, "ok"));
    const rest = await readTurn(client);
    expect(valuesOf(rest, "toolRequest")).toEqual([]);
    expect(turnCompleteOf(rest).stopReason).toBe("end_turn");
    ids.push(...requests.map((r) => r.toolCallId));
  }
  expect(ids[0]).toBe("call_1");
  expect(ids.every((id) => id !== "")).toBe(true);
  expect(new Set(ids).size).toBe(ids.length);
});
