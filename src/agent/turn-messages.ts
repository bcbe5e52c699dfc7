import type { JsonObject, ModelMessage, ModelPart } from "../models/index.ts";

/** A tool call of the running turn: session-unique id, and the tool when it is known. */
export interface ToolUse {
  id: string;
  name: string;
  parameters: JsonObject;
}

/** A tool result as the model gets it. */
export interface ToolResultForModel {
  id: string;
  name: string;
  content: string;
  isError: boolean;
}

/**
 * The assistant message of one model response: thinking, text, then tool uses. Returns
 * undefined when there is neither text nor a tool use: an empty or thinking-only message
 * is rejected by some providers, and carries no answer.
 */
export function assistantMessage(text: string, thinking: string, signature: string | undefined, uses: readonly ToolUse[]): ModelMessage | undefined {
  if (text === "" && uses.length === 0) return undefined;
  const parts: ModelPart[] = [];
  if (thinking !== "") parts.push(signature === undefined ? { type: "thinking", thinking } : { type: "thinking", thinking, signature });
  if (text !== "") parts.push({ type: "text", text });
  for (const u of uses) parts.push({ type: "tool_use", id: u.id, name: u.name, input: u.parameters });
  return { role: "assistant", parts };
}

/** The user message answering every tool use of the previous assistant message, in call order. */
export function toolResultMessage(results: readonly ToolResultForModel[]): ModelMessage {
  return {
    role: "user",
    parts: results.map((r) => ({ type: "tool_result", toolUseId: r.id, name: r.name, content: r.content, isError: r.isError })),
  };
}
