// The stored transcript keeps signed thinking: a session with extended thinking and tool
// calls on the fake Messages API (which, like the real one, rejects thinking sent back
// unsigned or altered, and wants a tool-use message that tool results answer to start with
// its thinking), read back over REST, pasted into a NEW session as StartSession.history,
// and continued — the API accepts the follow-up.
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { ConversationMessageSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { fakeSignature } from "../support/fake-anthropic/index.ts";
import { nextOf, readTurn, rq, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture({ provider: "anthropic", env: { ROZ_ANTHROPIC_THINKING_BUDGET: "2048" } });
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

const signed = (thinking: string) => ({ thinking: { thinking, signature: fakeSignature(thinking) } });

it("thinking of every model call comes back from REST with its signature, before the tool use or answer it led to, and a new session continues from it (connect)", async () => {
  const { client, started } = await fx.start("connect", { tools: [tool("read_file")] });
  const [read, answer, again] = ["I should read a.txt first.", "The file says hi; answer that.", "Now b.txt; read it too."];

  // Turn 1: thinking + a tool call, then thinking + the answer (two model calls).
  fx.fake.plan(
    { reasoning: read, toolCalls: [{ id: "toolu_a", name: "read_file", arguments: { path: "a.txt" } }] },
    { reasoning: answer, text: "It says hi." },
  );
  client.send(rq.user("what is in a.txt?"));
  client.send(rq.toolResult((await nextOf(client, "toolRequest")).toolCallId, "hi"));
  const first = await readTurn(client);
  expect(turnCompleteOf(first).stopReason).toBe("end_turn");
  expect(textOf(first)).toBe("It says hi.");

  // Turn 2: thinking (with a redacted block: the signature packs both) + a tool call, cancelled
  // while the tool runs — the transcript then ends in tool results the next message continues.
  fx.fake.plan({
    reasoning: again,
    redactedThinking: "c2VjcmV0LXJlYXNvbmluZw==",
    toolCalls: [{ id: "toolu_b", name: "read_file", arguments: { path: "b.txt" } }],
  });
  client.send(rq.user("and b.txt?"));
  await nextOf(client, "toolRequest");
  client.send(rq.cancelTurn("user stopped"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("cancelled");

  const rest = await fx.rest("GET", `/v1/sessions/${started.sessionId}/messages?format=both`);
  expect(rest.status).toBe(200);
  const messages = rest.json.messages as JsonValue[];
  expect(messages.map((m: any) => [m.role, m.parts.map((p: object) => Object.keys(p)[0])])).toEqual([
    ["user", ["text"]],
    ["assistant", ["thinking", "tool_use"]],
    ["user", ["tool_result"]],
    ["assistant", ["thinking", "text"]],
    ["user", ["text"]],
    ["assistant", ["thinking", "tool_use"]],
    ["user", ["tool_result"]],
  ]);
  const parts = (i: number) => (messages[i] as any).parts;
  expect(parts(1)[0]).toEqual(signed(read));
  expect(parts(3)[0]).toEqual(signed(answer));
  const packed = parts(5)[0].thinking;
  expect(packed.thinking).toBe(again);
  expect(packed.signature).toMatch(/^anthropic-blocks\/1:/);
  // The per-turn view carries the same blocks.
  expect(rest.json.turns.map((t: any) => t.assistant.thinking_blocks)).toEqual([
    [
      { text: read, signature: fakeSignature(read), tool_use: true },
      { text: answer, signature: fakeSignature(answer), tool_use: false },
    ],
    [{ text: again, signature: packed.signature, tool_use: true }],
  ]);

  // A NEW session from the transcript: the API gets every block back as it sent it.
  const history = messages.map((m) => fromJson(ConversationMessageSchema, m));
  const next = await fx.start("connect", { tools: [tool("read_file")], history });
  fx.fake.plan({ text: "b.txt was not read; shall I try again?" });
  next.client.send(rq.user("go on"));
  const follow = await readTurn(next.client);
  expect(valuesOf(follow, "error")).toEqual([]);
  expect(turnCompleteOf(follow).stopReason).toBe("end_turn");
  const sent = fx.fake.requests.at(-1)!.body.messages as { role: string; content: { type: string }[] }[];
  expect(sent[1]!.content[0]).toEqual({ type: "thinking", thinking: read, signature: fakeSignature(read) });
  expect(sent[3]!.content[0]).toEqual({ type: "thinking", thinking: answer, signature: fakeSignature(answer) });
  expect(sent[5]!.content.slice(0, 3)).toEqual([
    { type: "thinking", thinking: again, signature: fakeSignature(again) },
    { type: "redacted_thinking", data: "c2VjcmV0LXJlYXNvbmluZw==" },
    expect.objectContaining({ type: "tool_use", id: "toolu_b" }),
  ]);
  expect(sent.at(-1)).toMatchObject({
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "toolu_b" },
      { type: "text", text: "go on" },
    ],
  });
});
