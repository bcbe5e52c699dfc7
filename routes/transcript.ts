import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { buildUserMessage, type ContextBlock } from "../src/agent/index.ts";
import { ConversationMessageSchema } from "../src/gen/roz/v1/agent_pb.js";
import { missingResultText, type ModelMessage, type ModelPart } from "../src/models/index.ts";
import type { StoredTurn } from "../src/store/index.ts";
import { iso, usageJson } from "./schemas.ts";

/**
 * A stored transcript as a conversation a client can paste into `StartSession.history`.
 * Per turn: the user message (as the agent built it), then — when tools ran — an assistant
 * message with the tool calls and a user message with their results (an error result for a
 * call that got none), then the assistant's text. The record keeps the text of all model
 * calls of a turn together, so it comes after the tool results. Thinking keeps its
 * signature (providers reject signed thinking sent back altered or unsigned) and its place:
 * that of the calls which asked for tools before the tool uses, the rest before the text.
 * Adjacent messages of one role are merged (a turn without any answer would otherwise
 * leave two user messages in a row).
 */
export function conversationOf(turns: readonly StoredTurn[]): ModelMessage[] {
  const messages: ModelMessage[] = [];
  const push = (message: ModelMessage): void => {
    const last = messages.at(-1);
    if (last?.role === message.role) last.parts.push(...message.parts);
    else messages.push({ role: message.role, parts: [...message.parts] });
  };
  for (const turn of turns) {
    push(buildUserMessage(turn.userContent, turn.userContext, true));
    const thinking = thinkingOf(turn);
    if (turn.toolCalls.length > 0) {
      push({ role: "assistant", parts: [...thinking.toolUse, ...turn.toolCalls.map((c): ModelPart => ({ type: "tool_use", id: c.id, name: c.name, input: c.parameters }))] });
      push({
        role: "user",
        parts: turn.toolCalls.map((c): ModelPart => ({
          type: "tool_result",
          toolUseId: c.id,
          name: c.name,
          content: c.outcome?.result ?? c.error ?? missingResultText,
          isError: c.outcome ? !c.outcome.success : true,
        })),
      });
      if (turn.assistantText !== "") push({ role: "assistant", parts: [...thinking.answer, { type: "text", text: turn.assistantText }] });
    } else if (turn.assistantText !== "") {
      push({ role: "assistant", parts: [...thinking.toolUse, ...thinking.answer, { type: "text", text: turn.assistantText }] });
    }
  }
  return messages;
}

type ThinkingPart = Extract<ModelPart, { type: "thinking" }>;

/**
 * A turn's thinking parts, split by where they go: before its tool uses, or before its
 * answer. A turn stored without per-call thinking has only its text, unsigned, which goes
 * with the first assistant message.
 */
function thinkingOf(turn: StoredTurn): { toolUse: ThinkingPart[]; answer: ThinkingPart[] } {
  if (turn.assistantThinkingBlocks.length === 0) {
    return { toolUse: turn.assistantThinking !== "" ? [{ type: "thinking", thinking: turn.assistantThinking }] : [], answer: [] };
  }
  const part = (b: StoredTurn["assistantThinkingBlocks"][number]): ThinkingPart =>
    b.signature === undefined ? { type: "thinking", thinking: b.text } : { type: "thinking", thinking: b.text, signature: b.signature };
  return {
    toolUse: turn.assistantThinkingBlocks.filter((b) => b.toolUse).map(part),
    answer: turn.assistantThinkingBlocks.filter((b) => !b.toolUse).map(part),
  };
}

const partInit = (p: ModelPart) => {
  switch (p.type) {
    case "text":
      return { part: { case: "text" as const, value: { text: p.text } } };
    case "thinking":
      return { part: { case: "thinking" as const, value: { thinking: p.thinking, signature: p.signature ?? "" } } };
    case "tool_use":
      return { part: { case: "toolUse" as const, value: { id: p.id, name: p.name, input: p.input } } };
    case "tool_result":
      return { part: { case: "toolResult" as const, value: { toolUseId: p.toolUseId, name: p.name, content: p.content, isError: p.isError } } };
    case "image":
      return { part: { case: "image" as const, value: { mediaType: p.mediaType, data: p.data } } };
  }
};

/** Messages in protobuf JSON (`{"role":"user","parts":[{"text":{"text":"…"}}]}`). */
export function conversationJson(messages: readonly ModelMessage[]): JsonValue[] {
  return messages.map((m) => toJson(ConversationMessageSchema, create(ConversationMessageSchema, { role: m.role, parts: m.parts.map(partInit) })));
}

const contextJson = (b: ContextBlock) =>
  "text" in b
    ? { ...(b.label ? { label: b.label } : {}), text: b.text }
    : { ...(b.label ? { label: b.label } : {}), mime_type: b.mimeType, size_bytes: b.data.byteLength };

/** The richer per-turn view: tool calls with their result, exit code, duration and permission outcome. */
export function turnJson(t: StoredTurn) {
  return {
    seq: t.seq,
    message_id: t.messageId,
    mode: t.mode,
    user: { content: t.userContent, context: t.userContext.map(contextJson) },
    assistant: {
      text: t.assistantText,
      thinking: t.assistantThinking,
      thinking_blocks: t.assistantThinkingBlocks.map((b) => ({ text: b.text, ...(b.signature !== undefined ? { signature: b.signature } : {}), tool_use: b.toolUse })),
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
    usage: usageJson(t.usage),
    stop_reason: t.stopReason,
    ...(t.error ? { error: { code: t.error.code, message: t.error.message, retryable: t.error.retryable } } : {}),
    compactions: t.compactions,
    started_at: iso(t.startedAt),
    ended_at: iso(t.endedAt),
  };
}
