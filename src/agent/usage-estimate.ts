import type { JsonObject, ModelMessage, TokenUsage, ToolDefinition } from "../models/index.ts";
import { countPartTokens, countTokens, type TokenCounter } from "./tokens.ts";

/** What the estimate reads of a model call's input (see `ModelCallInput`). */
interface CutCallInput {
  system: string[];
  messages: ModelMessage[];
  tools: ToolDefinition[];
  tokens: TokenCounter;
}

/** What the estimate reads of what a cut call produced (see `ModelCallResult`). */
interface CutCallOutput {
  text: string;
  thinking: string;
  toolCalls: { id: string; name: string; arguments: JsonObject }[];
}

/**
 * Usage of a model call that was cut short (cancel, failure), as the tokenizer counts it: the
 * prompt was sent and the streamed output produced. The caller keeps what the provider did
 * report and uses this for the rest: providers that report usage only in their last chunk
 * (Chat Completions) would otherwise make a cancelled turn look free. The messages go through the session's cached
 * counter (`input.tokens`), which compaction filled before the call: no re-tokenizing.
 */
export function estimateCutUsage(input: CutCallInput, result: CutCallOutput): TokenUsage {
  const inputTokens = countTokens(input.system.join("\n")) + countTokens(JSON.stringify(input.tools)) + input.tokens.messages(input.messages);
  let outputTokens = countTokens(result.text) + countTokens(result.thinking);
  for (const call of result.toolCalls) outputTokens += countPartTokens({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
  return { inputTokens, outputTokens, cacheReadTokens: 0, cacheCreationTokens: 0 };
}
