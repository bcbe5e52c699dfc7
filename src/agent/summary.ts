import type { ModelMessage, ModelPart } from "../models/index.ts";
import { truncateHeadTail } from "./truncate.ts";

/** System prompt of the tool-free call that summarises older turns for compaction. */
export const SUMMARY_SYSTEM = [
  "You compress conversations between a user and an AI agent that uses tools.",
  "Summarise the transcript you are given so that the agent can continue the work without it:",
  "the user's goals and constraints, decisions made, facts and tool results that still matter, files or objects involved, and open tasks.",
  "Be concise and factual. Use the language of the conversation. Do not call tools.",
].join(" ");

/** System block added for the final tool-free call of a turn that hit `maxCycles`. */
export const MAX_CYCLES_SYSTEM =
  "You have reached the step limit for this turn and cannot call tools any more. Tell the user briefly what you did, what you found, and what remains to be done.";

// A single tool result in a summary transcript never needs more than this.
const RESULT_TOKENS_IN_TRANSCRIPT = 500;

/**
 * Older turns as a plain-text transcript for the summary call. Rendering as text (rather
 * than replaying the messages) keeps the request valid whatever the history holds, and
 * lets long tool results be cut. The whole is cut head+tail to `maxTokens`.
 */
export function renderTranscript(messages: readonly ModelMessage[], maxTokens: number): string {
  const lines = messages.map(
    (m) =>
      `${m.role.toUpperCase()}:\n${m.parts
        .map(renderPart)
        .filter((s) => s !== "")
        .join("\n")}`,
  );
  return truncateHeadTail(`Transcript to summarise:\n\n${lines.join("\n\n")}`, maxTokens).text;
}

function renderPart(part: ModelPart): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "thinking":
      return "";
    case "image":
      return `(image, ${part.mediaType})`;
    case "tool_use":
      return `[called tool ${part.name} with ${JSON.stringify(part.input)}]`;
    case "tool_result":
      return `[result of ${part.name}${part.isError ? " (error)" : ""}: ${truncateHeadTail(part.content, RESULT_TOKENS_IN_TRANSCRIPT).text}]`;
  }
}
