import { buildUserMessage } from "../agent/index.ts";
import { missingResultText, type ModelMessage, type ModelPart } from "../models/index.ts";
import type { StoredTurn } from "../store/index.ts";

/**
 * A stored transcript as a conversation a client can paste into `StartSession.history`.
 * Per turn: the user message (as the agent built it), then — when tools ran — an assistant
 * message with the tool calls and a user message with their results (an error result for a
 * call that got none), split where messages were steered in (each after the results before
 * it), then the assistant's text. The record keeps the text of all model
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
    // Tool calls in stretches between the messages steered in (each after the results it followed).
    let done = 0;
    const callsThrough = (end: number): void => {
      if (end <= done) return;
      const calls = turn.toolCalls.slice(done, end);
      push({ role: "assistant", parts: [...(done === 0 ? thinking.toolUse : []), ...calls.map(toolUseOf)] });
      push({ role: "user", parts: calls.map(toolResultOf) });
      done = end;
    };
    for (const steer of turn.steered ?? []) {
      callsThrough(steer.afterToolCalls);
      push(buildUserMessage(steer.content, steer.context, true));
    }
    callsThrough(turn.toolCalls.length);
    if (turn.assistantText !== "") {
      push({ role: "assistant", parts: [...(done === 0 ? thinking.toolUse : []), ...thinking.answer, { type: "text", text: turn.assistantText }] });
    }
  }
  return messages;
}

type ToolCall = StoredTurn["toolCalls"][number];

const toolUseOf = (c: ToolCall): ModelPart => ({ type: "tool_use", id: c.id, name: c.name, input: c.parameters });

const toolResultOf = (c: ToolCall): ModelPart => ({
  type: "tool_result",
  toolUseId: c.id,
  name: c.name,
  content: c.outcome?.result ?? c.error ?? missingResultText,
  isError: c.outcome ? !c.outcome.success : true,
});

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
