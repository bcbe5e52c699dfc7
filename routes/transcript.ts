import type { ContextBlock } from "../src/agent/index.ts";
import type { StoredTurn } from "../src/store/index.ts";
import { iso, usageJson } from "./schemas.ts";

const contextJson = (b: ContextBlock) =>
  "text" in b
    ? { ...(b.label ? { label: b.label } : {}), text: b.text }
    : { ...(b.label ? { label: b.label } : {}), mime_type: b.mimeType, size_bytes: b.data.byteLength };

/** The richer per-turn view: tool calls with their result, exit code, duration and permission outcome. */
export function turnJson(t: StoredTurn) {
  return {
    seq: t.seq,
    turn: t.turn,
    ...(t.rolledBack ? { rolled_back: true } : {}),
    ...(t.forkedFrom ? { forked_from: { session_id: t.forkedFrom.sessionId, turn: t.forkedFrom.turn } } : {}),
    message_id: t.messageId,
    mode: t.mode,
    user: { content: t.userContent, context: t.userContext.map(contextJson) },
    assistant: {
      text: t.assistantText,
      thinking: t.assistantThinking,
      thinking_blocks: t.assistantThinkingBlocks.map((b) => ({
        text: b.text,
        ...(b.signature !== undefined ? { signature: b.signature } : {}),
        tool_use: b.toolUse,
      })),
    },
    tool_calls: t.toolCalls.map((c) => ({
      id: c.id,
      name: c.name,
      parameters: c.parameters,
      permission: c.permission,
      ...(c.outcome
        ? {
            success: c.outcome.success,
            result: c.outcome.result,
            truncated: c.outcome.truncated,
            ...(c.outcome.exitCode !== undefined ? { exit_code: c.outcome.exitCode } : {}),
            ...(c.outcome.durationMs !== undefined ? { duration_ms: c.outcome.durationMs } : {}),
          }
        : {}),
      ...(c.error !== undefined ? { error: c.error } : {}),
      started_at: iso(c.startedAt),
      ended_at: iso(c.endedAt),
    })),
    ...(t.steered
      ? {
          steered: t.steered.map((s) => ({
            role: "user",
            message_id: s.messageId,
            content: s.content,
            ...(s.context.length > 0 ? { context: s.context.map(contextJson) } : {}),
            steered: true,
            after_tool_calls: s.afterToolCalls,
          })),
        }
      : {}),
    usage: usageJson(t.usage, t.costUsd),
    stop_reason: t.stopReason,
    ...(t.error ? { error: { code: t.error.code, message: t.error.message, retryable: t.error.retryable } } : {}),
    compactions: t.compactions,
    started_at: iso(t.startedAt),
    ended_at: iso(t.endedAt),
  };
}
