import { buildUserMessage } from "../agent/index.ts";
import { missingResultText, type ModelMessage, type ModelPart } from "../models/index.ts";
import type { StoredTurn } from "../store/index.ts";

/**
 * A stored transcript as a conversation a client can paste into `StartSession.history`.
 * Per turn: the user message (as the agent built it), then — when tools ran — an assistant
 * message with the tool calls and a user message with their results (an error result for a
 * call that got none), then the assistant's text. The record keeps the text of all model
 * calls of a turn together, so it comes after the tool results; thinking goes with the
 * first assistant message. Adjacent messages of one role are merged (a turn without any
 * answer would otherwise leave two user messages in a row).
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
    const thinking: ModelPart[] = turn.assistantThinking !== "" ? [{ type: "thinking", thinking: turn.assistantThinking }] : [];
    if (turn.toolCalls.length > 0) {
      push({ role: "assistant", parts: [...thinking, ...turn.toolCalls.map((c): ModelPart => ({ type: "tool_use", id: c.id, name: c.name, input: c.parameters }))] });
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
      if (turn.assistantText !== "") push({ role: "assistant", parts: [{ type: "text", text: turn.assistantText }] });
    } else if (turn.assistantText !== "") {
      push({ role: "assistant", parts: [...thinking, { type: "text", text: turn.assistantText }] });
    }
  }
  return messages;
}
