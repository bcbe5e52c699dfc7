/**
 * A realistic finished turn for the store benchmarks: a user message with an attached
 * file, thinking, a reply of a few paragraphs and two tool calls with kilobyte results
 * (about 7 KB of text in all), as a coding agent's turn typically looks.
 */
import { randomUUID } from "node:crypto";
import type { TurnRecord } from "../src/agent/types.ts";

const paragraph =
  "The handler reads the requests in their own task and feeds them to the session state machine, " +
  "while the responses come from an ordered output queue; a clean half-close ends the session. ";

/** A new record (fresh message id and times) on every call. */
export function realisticTurn(): TurnRecord {
  const startedAt = Date.now() - 2500;
  return {
    messageId: randomUUID(),
    userContent: "Why does the server keep the stream open after the client half-closes? Please check src/rpc/stream-session.ts and explain.",
    userContext: [{ label: "src/rpc/stream-session.ts", text: paragraph.repeat(4) }],
    mode: "react",
    assistantThinking: paragraph.repeat(3),
    assistantThinkingBlocks: [{ text: paragraph.repeat(3), signature: "EqQBCgIYAhIM".repeat(20), toolUse: true }],
    assistantText: paragraph.repeat(8),
    toolCalls: [
      {
        id: `call_${randomUUID().slice(0, 8)}`,
        name: "read_file",
        parameters: { path: "src/rpc/stream-session.ts", offset: 0, limit: 200 },
        permission: "allowed",
        outcome: { success: true, result: paragraph.repeat(12), truncated: false, exitCode: 0, durationMs: 14 },
        startedAt: startedAt + 400,
        endedAt: startedAt + 414,
      },
      {
        id: `call_${randomUUID().slice(0, 8)}`,
        name: "grep",
        parameters: { pattern: "requestsEnded", dir: "src" },
        permission: "allowed",
        outcome: { success: true, result: paragraph.repeat(3), truncated: false, exitCode: 0, durationMs: 31 },
        startedAt: startedAt + 900,
        endedAt: startedAt + 931,
      },
    ],
    usage: { inputTokens: 3200, outputTokens: 450, cacheReadTokens: 1200, cacheCreationTokens: 0 },
    costUsd: 0.0123,
    stopReason: "end_turn",
    compactions: 0,
    startedAt,
    endedAt: startedAt + 2500,
  };
}
