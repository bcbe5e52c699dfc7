import { toolResultText } from "./content.ts";
import type { ModelMessage, ModelPart } from "./types.ts";

type ToolUse = Extract<ModelPart, { type: "tool_use" }>;
type ToolResult = Extract<ModelPart, { type: "tool_result" }>;

/** Said to the model for a call whose result never came (cancelled turn, crash). */
export const missingResultText = "no result was recorded for this tool call";

/**
 * Repairs the tool-call/tool-result pairing that both OpenAI APIs enforce (a request
 * breaking it is rejected with a 400), so a damaged transcript never blocks a session:
 *
 * - every assistant message with tool calls is followed by a user message that starts with
 *   exactly one result per call, in call order (a missing one becomes an error result);
 * - a result that answers no call of the assistant message just before it becomes plain
 *   text, so its content is kept but the provider does not reject it; duplicates likewise.
 *
 * Other parts keep their order. The input is not modified.
 */
export function pairToolResults(messages: readonly ModelMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "user") {
      out.push({ role: "user", parts: message.parts.map(orphanToText) });
      continue;
    }
    out.push(message);
    const calls = message.parts.filter((p): p is ToolUse => p.type === "tool_use");
    if (calls.length === 0) continue;
    const next = messages[i + 1];
    const answer = next?.role === "user" ? next.parts : [];
    if (next?.role === "user") i++;
    out.push({ role: "user", parts: answerCalls(calls, answer) });
  }
  return out;
}

function answerCalls(calls: ToolUse[], answer: ModelPart[]): ModelPart[] {
  const byId = new Map<string, ToolResult>();
  const leftovers: ModelPart[] = [];
  const callIds = new Set(calls.map((c) => c.id));
  for (const part of answer) {
    if (part.type !== "tool_result") leftovers.push(part);
    else if (callIds.has(part.toolUseId) && !byId.has(part.toolUseId)) byId.set(part.toolUseId, part);
    else leftovers.push(orphanToText(part));
  }
  const results: ModelPart[] = calls.map(
    (call) =>
      byId.get(call.id) ?? {
        type: "tool_result",
        toolUseId: call.id,
        name: call.name,
        content: missingResultText,
        isError: true,
      },
  );
  return [...results, ...leftovers];
}

function orphanToText(part: ModelPart): ModelPart {
  if (part.type !== "tool_result") return part;
  return { type: "text", text: `[result of tool ${part.name} (call ${part.toolUseId})]\n${toolResultText(part)}` };
}
