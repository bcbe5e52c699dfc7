import type { TokenUsage } from "../models/index.ts";
import { countPartTokens, countTokens } from "./tokens.ts";
import type { ModelCallInput, ModelCallResult } from "./model-call.ts";

/**
 * Usage of a model call that was cut short (cancel, failure) before the provider reported
 * any: the prompt was sent and the streamed output produced, so both are counted with the
 * tokenizer. Providers that report usage only in their last chunk (Chat Completions) would
 * otherwise make a cancelled turn look free.
 */
export function estimateCutUsage(input: ModelCallInput, result: ModelCallResult): TokenUsage {
  let inputTokens = countTokens(input.system.join("\n")) + countTokens(JSON.stringify(input.tools));
  for (const message of input.messages) for (const part of message.parts) inputTokens += countPartTokens(part);
  let outputTokens = countTokens(result.text) + countTokens(result.thinking);
  for (const call of result.toolCalls) outputTokens += countTokens(call.name) + countTokens(JSON.stringify(call.arguments));
  return { inputTokens, outputTokens, cacheReadTokens: 0, cacheCreationTokens: 0 };
}
