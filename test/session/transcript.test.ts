// The transcript as a conversation: rebuilt from turn records by the session layer, and
// encoded as roz.v1.ConversationMessage JSON by src/rpc (what GET /v1/sessions/{id}/messages serves).
import { fromJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ConversationMessageSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { missingResultText } from "../../src/models/index.ts";
import { conversationJson } from "../../src/rpc/index.ts";
import { conversationOf } from "../../src/session/index.ts";
import type { StoredTurn } from "../../src/store/index.ts";

const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0 };

function turn(seq: number, fields: Partial<StoredTurn>): StoredTurn {
  return {
    sessionId: "s",
    seq,
    turn: seq,
    rolledBack: false,
    messageId: `m${seq}`,
    userContent: `question ${seq}`,
    userContext: [],
    mode: "react",
    assistantText: "",
    assistantThinking: "",
    assistantThinkingBlocks: [],
    toolCalls: [],
    usage,
    costUsd: 0,
    stopReason: "end_turn",
    compactions: 0,
    startedAt: 0,
    endedAt: 1,
    ...fields,
  };
}

const toolTurn = turn(1, {
  assistantText: "two files",
  assistantThinking: "let me look",
  toolCalls: [
    {
      id: "c1",
      name: "ls",
      parameters: { path: "/" },
      permission: "allowed",
      outcome: { success: true, result: "a b", truncated: false },
      startedAt: 0,
      endedAt: 1,
    },
    { id: "c2", name: "rm", parameters: {}, permission: "denied", startedAt: 0, endedAt: 1 },
  ],
});

describe("conversationOf (session layer)", () => {
  it("gives tool calls, their results (an error one when none came), then the answer", () => {
    expect(conversationOf([toolTurn])).toEqual([
      { role: "user", parts: [{ type: "text", text: "question 1" }] },
      {
        role: "assistant",
        parts: [
          { type: "thinking", thinking: "let me look" },
          { type: "tool_use", id: "c1", name: "ls", input: { path: "/" } },
          { type: "tool_use", id: "c2", name: "rm", input: {} },
        ],
      },
      {
        role: "user",
        parts: [
          { type: "tool_result", toolUseId: "c1", name: "ls", content: "a b", isError: false },
          { type: "tool_result", toolUseId: "c2", name: "rm", content: missingResultText, isError: true },
        ],
      },
      { role: "assistant", parts: [{ type: "text", text: "two files" }] },
    ]);
  });

  it("merges the user messages of a turn that got no answer with the next one", () => {
    const messages = conversationOf([turn(1, { stopReason: "cancelled" }), turn(2, { assistantText: "hi" })]);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[0]?.parts).toEqual([
      { type: "text", text: "question 1" },
      { type: "text", text: "question 2" },
    ]);
  });
});

describe("conversationJson (src/rpc)", () => {
  it("is protobuf JSON that decodes as ConversationMessages", () => {
    const json = conversationJson([toolTurn]);
    expect(json[0]).toEqual({ role: "user", parts: [{ text: { text: "question 1" } }] });
    const decoded = json.map((m) => fromJson(ConversationMessageSchema, m));
    expect(decoded.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(decoded[1]?.parts.map((p) => p.part.case)).toEqual(["thinking", "toolUse", "toolUse"]);
    expect(decoded[2]?.parts[1]?.part).toMatchObject({ case: "toolResult", value: { toolUseId: "c2", isError: true } });
  });
});
