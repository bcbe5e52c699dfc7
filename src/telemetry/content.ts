/**
 * Message content in the shape of the OpenTelemetry GenAI conventions (`gen_ai.input.messages`,
 * `gen_ai.output.messages`, `gen_ai.system_instructions`, as JSON): recorded only when
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
 */
import type { ModelMessage, ModelPart } from "../models/index.ts";

type Part = Record<string, unknown>;

function partOf(part: ModelPart): Part {
  switch (part.type) {
    case "text":
      return { type: "text", content: part.text };
    case "thinking":
      return { type: "reasoning", content: part.thinking };
    case "tool_use":
      return { type: "tool_call", id: part.id, name: part.name, arguments: part.input };
    case "tool_result":
      return { type: "tool_call_response", id: part.toolUseId, response: part.content };
    case "image":
      // The bytes stay out of the trace; what they were is enough to read it.
      return { type: "image", mime_type: part.mediaType, bytes: part.data.byteLength };
  }
}

/** A request's messages; a user message of tool results only is the `tool` role's. */
export function inputMessages(messages: readonly ModelMessage[]): string {
  return JSON.stringify(
    messages.map((m) => ({
      role: m.role === "user" && m.parts.length > 0 && m.parts.every((p) => p.type === "tool_result") ? "tool" : m.role,
      parts: m.parts.map(partOf),
    })),
  );
}

export const systemInstructions = (system: readonly string[]): string => JSON.stringify(system.map((content) => ({ type: "text", content })));

export const userMessage = (text: string): string => JSON.stringify([{ role: "user", parts: [{ type: "text", content: text }] }]);

/** The model's answer: its text, thinking and tool calls, and why it stopped. */
export function outputMessage(answer: { text: string; thinking?: string; toolCalls?: readonly Part[] }, finishReason: string): string {
  const parts: Part[] = [];
  if (answer.thinking) parts.push({ type: "reasoning", content: answer.thinking });
  if (answer.text) parts.push({ type: "text", content: answer.text });
  for (const call of answer.toolCalls ?? []) parts.push({ type: "tool_call", ...call });
  return JSON.stringify([{ role: "assistant", parts, finish_reason: finishReason }]);
}
